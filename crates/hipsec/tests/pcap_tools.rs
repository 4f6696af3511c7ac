//! `hipsec pcap seal|open` end to end through the binary: round trips for every suite and mode,
//! link types, replays and forgeries, and malformed input (truncated, random, not a capture).

#![allow(clippy::unwrap_used)]

mod common;
use common::*;
use std::path::Path;

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn packets(rng: &mut Rng) -> Vec<(u64, Vec<u8>)> {
    let mut v = Vec::new();
    for (i, n) in [1usize, 7, 64, 500, 1400].into_iter().enumerate() {
        let p4 = ipv4(A4, B4, 17, &udp(1000 + i as u16, 53, &rng.bytes(n)));
        let p6 = ipv6(A6, B6, 17, &udp(2000, 4500, &rng.bytes(n)));
        v.push((1_700_000_000_000_000 + 1000 * i as u64, p4));
        v.push((1_700_000_000_000_500 + 1000 * i as u64, p6));
    }
    v
}

fn sa_text(proto: &str, mode: &str, alg: &str, v6: bool, esn: bool) -> String {
    let (src, dst) = if v6 { ("2001:db8::1", "2001:db8::2") } else { ("192.0.2.1", "192.0.2.2") };
    let mut rng = Rng(0x5eed ^ alg.len() as u64);
    let mut key = |n: usize| format!("0x{}", hex::encode(rng.bytes(n)));
    let algs = match (proto, alg) {
        ("ah", a) => {
            let n = crypto::IntegAlg::from_name(a).unwrap().key_len();
            format!("auth = \"{a}\"\nauth-key = \"{}\"\n", key(n))
        }
        (_, a) => {
            let s: crypto::EspSuite = a.parse().unwrap();
            match s.encr {
                crypto::EncrAlg::Aead(_) => {
                    format!("aead = \"{a}\"\nkey = \"{}\"\n", key(s.encr.key_len()))
                }
                e => {
                    let mut t = format!("enc = \"{}\"\n", e.name());
                    if e.key_len() > 0 {
                        t += &format!("enc-key = \"{}\"\n", key(e.key_len()));
                    }
                    if s.integ != crypto::IntegAlg::None {
                        t += &format!(
                            "auth = \"{}\"\nauth-key = \"{}\"\n",
                            s.integ.name(),
                            key(s.integ.key_len())
                        );
                    }
                    t
                }
            }
        }
    };
    format!(
        "[[sa]]\nsrc = \"{src}\"\ndst = \"{dst}\"\nproto = \"{proto}\"\nspi = \"0x00001000\"\nmode = \"{mode}\"\nesn = {esn}\n{algs}"
    )
}

/// seal then open gives back every packet, byte for byte, with its timestamp.
#[test]
fn round_trip_every_suite_and_mode() {
    let dir = tmpdir("roundtrip");
    let mut rng = Rng(42);
    let mut cases = 0;
    let esp: Vec<String> = crypto::EspSuite::all().iter().map(|s| s.to_string()).collect();
    let ah = ["sha1", "sha256", "sha384", "sha512", "gmac128", "gmac256"];
    for (proto, algs) in
        [("esp", esp.iter().map(String::as_str).collect::<Vec<_>>()), ("ah", ah.to_vec())]
    {
        for alg in algs {
            for mode in ["tunnel", "transport"] {
                for v6 in [false, true] {
                    let esn = cases % 2 == 1;
                    let pkts: Vec<_> = packets(&mut rng)
                        .into_iter()
                        .filter(|(_, p)| mode == "tunnel" || (p[0] >> 4 == 6) == v6)
                        .collect();
                    let sa = write(&dir, "sa.toml", sa_text(proto, mode, alg, v6, esn).as_bytes());
                    let plain = write(&dir, "plain.pcap", &pcap(101, &pkts));
                    let (sealed, opened) = (dir.join("sealed.pcap"), dir.join("opened.pcap"));
                    let (o, v) = tool_json("seal", &sa, &plain, &sealed, &[]);
                    assert!(o.status.success(), "{proto} {alg} {mode}: {}", stderr(&o));
                    assert_eq!(v["packets_out"], pkts.len(), "{proto} {alg} {mode} v6={v6}: {v}");
                    let (o, v) = tool_json("open", &sa, &sealed, &opened, &[]);
                    assert!(o.status.success(), "{}", stderr(&o));
                    assert_eq!(v["dropped"], 0, "{proto} {alg} {mode} v6={v6} esn={esn}: {v}");
                    assert_eq!(
                        read_frames(&opened),
                        pkts,
                        "{proto} {alg} {mode} v6={v6} esn={esn}"
                    );
                    cases += 1;
                }
            }
        }
    }
    assert_eq!(cases, 64);
}

#[test]
fn replayed_and_forged_packets_are_dropped_with_reasons() {
    let dir = tmpdir("replay");
    let sa = write(&dir, "sa.toml", GCM_TUNNEL.as_bytes());
    let pkts: Vec<_> = (0..3).map(|i| (i * 1000, ipv4(A4, B4, 17, &udp(1, 2, b"hello")))).collect();
    let plain = write(&dir, "plain.pcap", &pcap(101, &pkts));
    let sealed = dir.join("sealed.pcap");
    let (o, _) = tool_json("seal", &sa, &plain, &sealed, &[]);
    assert!(o.status.success());
    let mut frames = read_frames(&sealed);
    frames.push(frames[0].clone()); // replay of seq 1
    let mut forged = frames[1].clone();
    let last = forged.1.len() - 1;
    forged.1[last] ^= 1; // ICV bit flip on seq 2, before seq 2 was seen
    frames.insert(1, forged);
    let input = write(&dir, "mixed.pcap", &pcap(101, &frames));
    let (o, v) = tool_json("open", &sa, &input, &dir.join("out.pcap"), &[]);
    assert!(o.status.success());
    let err = stderr(&o);
    assert!(err.contains("packet 2: dropped: integrity_failed (spi 0x00001000 seq 2)"), "{err}");
    assert!(err.contains("packet 5: dropped: replayed (spi 0x00001000 seq 1)"), "{err}");
    assert_eq!(v["packets_in"], 5);
    assert_eq!(v["packets_out"], 3);
    assert_eq!(v["drops"]["replayed"], 1);
    assert_eq!(v["drops"]["integrity_failed"], 1);
}

#[test]
fn ethernet_vlan_sll_and_pcapng_inputs() {
    let dir = tmpdir("links");
    let sa = write(&dir, "sa.toml", GCM_TUNNEL.as_bytes());
    let ip = ipv4(A4, B4, 17, &udp(1, 2, b"x"));
    let mut eth = vec![0u8; 12];
    eth.extend_from_slice(&[0x81, 0x00, 0x00, 0x05, 0x08, 0x00]); // VLAN 5, IPv4
    eth.extend_from_slice(&ip);
    eth.resize(60, 0); // Ethernet minimum-frame padding must not be encapsulated
    let mut arp = vec![0u8; 12];
    arp.extend_from_slice(&[0x08, 0x06]);
    arp.extend_from_slice(&[0; 28]);
    let mut sll = vec![0u8; 14];
    sll.extend_from_slice(&[0x08, 0x00]);
    sll.extend_from_slice(&ip);
    for (name, bytes, want_out) in [
        ("eth.pcap", pcap(1, &[(0, eth.clone()), (1, arp.clone()), (2, vec![0; 5])]), 1),
        ("sll.pcap", pcap(113, &[(0, sll.clone())]), 1),
        ("v4.pcap", pcap(228, &[(0, ip.clone())]), 1),
        ("raw.pcapng", pcapng(101, &[(0, ip.clone()), (7, ip.clone())]), 2),
        ("eth.pcapng", pcapng(1, &[(0, eth.clone())]), 1),
    ] {
        let input = write(&dir, name, &bytes);
        let sealed = dir.join("sealed.pcap");
        let (o, v) = tool_json("seal", &sa, &input, &sealed, &[]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert_eq!(v["packets_out"], want_out, "{name}: {v}");
        let (o, _) = tool_json("open", &sa, &sealed, &dir.join("opened.pcap"), &[]);
        assert!(o.status.success());
        for (_, f) in read_frames(&dir.join("opened.pcap")) {
            assert_eq!(f, ip, "{name}");
        }
        if name == "eth.pcap" {
            assert_eq!(v["drops"]["not_ip"], 1, "{v}");
            assert_eq!(v["drops"]["malformed"], 1, "{v}");
        }
    }
    let ts = read_frames(&dir.join("sealed.pcap"));
    assert_eq!(ts[0].0, 0);
}

#[test]
fn pcapng_microsecond_timestamps_are_kept() {
    let dir = tmpdir("pcapng-ts");
    let sa = write(&dir, "sa.toml", GCM_TUNNEL.as_bytes());
    let ip = ipv4(A4, B4, 17, &udp(1, 2, b"x"));
    let input = write(&dir, "in.pcapng", &pcapng(101, &[(1_700_000_000_123_456, ip)]));
    let (o, _) = tool_json("seal", &sa, &input, &dir.join("out.pcap"), &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(read_frames(&dir.join("out.pcap"))[0].0, 1_700_000_000_123_456);
    // if_tsresol 9: nanosecond units; 2^-10 (0x8a): binary fractions of a second.
    let ip = ipv4(A4, B4, 17, &udp(1, 2, b"x"));
    for (resol, units) in [(9u8, 1_700_000_000_123_456_789u64), (0x8a, 1_700_000_000 * 1024 + 512)]
    {
        let input =
            write(&dir, "ns.pcapng", &pcapng_with_resol(101, Some(resol), &[(units, ip.clone())]));
        let (o, _) = tool_json("seal", &sa, &input, &dir.join("out.pcap"), &[]);
        assert!(o.status.success(), "{}", stderr(&o));
        let want = if resol == 9 { 1_700_000_000_123_456 } else { 1_700_000_000_500_000 };
        assert_eq!(read_frames(&dir.join("out.pcap"))[0].0, want, "if_tsresol {resol:#x}");
    }
}

#[test]
fn transport_sa_choice_and_no_sa() {
    let dir = tmpdir("choice");
    let sa =
        write(&dir, "sa.toml", sa_text("esp", "transport", "aes128gcm", false, false).as_bytes());
    let ok = ipv4(A4, B4, 17, &udp(1, 2, b"x"));
    let other = ipv4(B4, A4, 17, &udp(1, 2, b"x"));
    let input = write(&dir, "in.pcap", &pcap(101, &[(0, ok), (1, other)]));
    let (o, v) = tool_json("seal", &sa, &input, &dir.join("out.pcap"), &[]);
    assert!(o.status.success());
    assert_eq!(v["packets_out"], 1);
    assert!(
        stderr(&o).contains("packet 2: dropped: no_sa (192.0.2.2 -> 192.0.2.1)"),
        "{}",
        stderr(&o)
    );
    let (o, v) = tool_json("seal", &sa, &input, &dir.join("out.pcap"), &["--spi", "0x1000"]);
    assert!(o.status.success());
    assert_eq!(v["packets_out"], 2, "--spi forces the SA: {v}");
    let (o, _) = tool_json("seal", &sa, &input, &dir.join("out.pcap"), &["--spi", "0x2000"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("--spi 0x00002000: no SA with this SPI"), "{}", stderr(&o));
}

#[test]
fn esp_then_ah_bundle() {
    let dir = tmpdir("bundle");
    let text = format!(
        "{}\n{}",
        sa_text("esp", "transport", "aes128cbc-sha256", false, false),
        sa_text("ah", "transport", "sha256", false, false).replace("0x00001000", "0x00002000")
    );
    let sa = write(&dir, "sa.toml", text.as_bytes());
    let ip = ipv4(A4, B4, 6, &[7u8; 40]);
    let input = write(&dir, "in.pcap", &pcap(101, &[(0, ip.clone())]));
    let (o, v) = tool_json("seal", &sa, &input, &dir.join("sealed.pcap"), &["--bundle"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(v["packets_out"], 1);
    let sealed = read_frames(&dir.join("sealed.pcap"));
    assert_eq!(sealed[0].1[9], 51, "AH outermost");
    let (o, v) = tool_json("open", &sa, &dir.join("sealed.pcap"), &dir.join("opened.pcap"), &[]);
    assert!(o.status.success());
    assert_eq!(v["packets_out"], 1, "{v}");
    assert_eq!(read_frames(&dir.join("opened.pcap"))[0].1, ip);
}

/// Truncating a valid packet at every length gives a named drop, never a panic.
#[test]
fn truncated_packets_give_drop_reasons() {
    let dir = tmpdir("truncated");
    let sa = write(&dir, "sa.toml", GCM_TUNNEL.as_bytes());
    let ip = ipv4(A4, B4, 17, &udp(1, 2, &[9u8; 60]));
    let cut: Vec<_> = (0..ip.len()).map(|n| (n as u64, ip[..n].to_vec())).collect();
    let input = write(&dir, "cut.pcap", &pcap(101, &cut));
    let (o, v) = tool_json("seal", &sa, &input, &dir.join("o.pcap"), &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(v["packets_out"], 0);
    assert_eq!(v["drops"]["malformed"], ip.len(), "{v}");
    assert_eq!(stderr(&o).lines().filter(|l| l.contains(": dropped: malformed")).count(), ip.len());

    // The same for sealed packets fed to open.
    let good = write(&dir, "good.pcap", &pcap(101, &[(0, ip.clone())]));
    tool_json("seal", &sa, &good, &dir.join("sealed.pcap"), &[]);
    let sealed = read_frames(&dir.join("sealed.pcap")).remove(0).1;
    let cut: Vec<_> = (0..sealed.len()).map(|n| (n as u64, sealed[..n].to_vec())).collect();
    let input = write(&dir, "cut-sealed.pcap", &pcap(101, &cut));
    let (o, v) = tool_json("open", &sa, &input, &dir.join("o.pcap"), &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(v["packets_out"], 0);
    assert_eq!(v["dropped"], sealed.len(), "{v}");
    // Also with the IP length field intact but the payload cut (snaplen-style truncation).
    let mut lying = sealed.clone();
    lying.truncate(sealed.len() - 5);
    let input = write(&dir, "snap.pcap", &pcap(101, &[(0, lying)]));
    let (o, v) = tool_json("open", &sa, &input, &dir.join("o.pcap"), &[]);
    assert!(o.status.success());
    assert_eq!(v["drops"]["malformed"], 1, "{v}");
}

/// Random bytes as packets: every packet is written or dropped with a reason.
#[test]
fn random_packets_are_all_accounted_for() {
    let dir = tmpdir("random");
    let sa = write(&dir, "sa.toml", GCM_TUNNEL.as_bytes());
    let mut rng = Rng(7);
    let mut frames = Vec::new();
    for i in 0..400u64 {
        let n = rng.below(120);
        let mut b = rng.bytes(n);
        // Half of them look like IP headers so that deeper code is reached.
        if i % 2 == 0 && n > 20 {
            b[0] = if i % 4 == 0 { 0x45 } else { 0x60 };
            b[9] = [50u8, 51, 17, 4][rng.below(4)];
            b[6] = [50u8, 51, 17, 41][rng.below(4)];
        }
        frames.push((i, b));
    }
    for cmd in ["seal", "open"] {
        for link in [101u32, 1, 113] {
            let input = write(&dir, "rand.pcap", &pcap(link, &frames));
            let (o, v) = tool_json(cmd, &sa, &input, &dir.join("o.pcap"), &[]);
            assert!(o.status.success(), "{cmd} {link}: {}", stderr(&o));
            assert_eq!(v["packets_in"], 400);
            let out = v["packets_out"].as_u64().unwrap();
            let dropped = v["dropped"].as_u64().unwrap();
            assert_eq!(out + dropped, 400, "{cmd} {link}: {v}");
            assert_eq!(
                stderr(&o).lines().filter(|l| l.contains(": dropped: ")).count() as u64,
                dropped
            );
        }
    }
}

#[test]
fn not_a_capture_is_a_clean_error() {
    let dir = tmpdir("garbage");
    let sa = write(&dir, "sa.toml", GCM_TUNNEL.as_bytes());
    let mut rng = Rng(99);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("text", b"this is not a capture\n".to_vec()),
        ("empty", Vec::new()),
        ("random", rng.bytes(1000)),
        ("short-pcap-header", pcap(101, &[])[..10].to_vec()),
        ("pcapng-garbage", {
            let mut b = vec![0x0a, 0x0d, 0x0d, 0x0a];
            b.extend(rng.bytes(100));
            b
        }),
    ];
    for (name, bytes) in cases {
        let input = write(&dir, name, &bytes);
        for cmd in ["seal", "open"] {
            let o = run(&[
                "pcap",
                cmd,
                "--sa",
                sa.to_str().unwrap(),
                input.to_str().unwrap(),
                "/dev/null",
            ]);
            assert_eq!(o.status.code(), Some(1), "{name} {cmd}");
            let err = stderr(&o);
            assert!(err.starts_with("hipsec: error: "), "{name}: {err}");
            assert!(err.contains(name), "{name}: error must name the file: {err}");
            assert!(!err.contains("panicked"), "{err}");
        }
    }
    let o = run(&["pcap", "seal", "--sa", sa.to_str().unwrap(), "/nonexistent.pcap", "/dev/null"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("/nonexistent.pcap"));
}

#[test]
fn corrupt_and_cut_pcap_files() {
    let dir = tmpdir("corrupt");
    let sa = write(&dir, "sa.toml", GCM_TUNNEL.as_bytes());
    let ip = ipv4(A4, B4, 17, &udp(1, 2, b"abc"));
    let good = pcap(101, &[(0, ip.clone()), (1, ip.clone())]);
    // A file cut inside its second record: the first packet is processed, a warning is printed.
    let cut = write(&dir, "cut.pcap", &good[..good.len() - 3]);
    let (o, v) = tool_json("seal", &sa, &cut, &dir.join("o.pcap"), &[]);
    assert!(o.status.success());
    assert_eq!(v["packets_out"], 1);
    assert!(stderr(&o).contains("the file ends inside packet 2"), "{}", stderr(&o));
    // A record claiming 2 GB.
    let mut huge = good.clone();
    huge[24 + 8..24 + 12].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
    let huge = write(&dir, "huge.pcap", &huge);
    let o =
        run(&["pcap", "seal", "--sa", sa.to_str().unwrap(), huge.to_str().unwrap(), "/dev/null"]);
    assert!(!stderr(&o).contains("panicked"));
    // Unsupported link type: a clean error.
    let ppp = write(&dir, "ppp.pcap", &pcap(9, &[(0, ip.clone())]));
    let o =
        run(&["pcap", "seal", "--sa", sa.to_str().unwrap(), ppp.to_str().unwrap(), "/dev/null"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("link type 9 is not supported"), "{}", stderr(&o));
}

/// Byte flips all over valid pcap and pcapng files: the reader never panics.
#[test]
fn mutated_capture_files_never_panic_the_reader() {
    let mut rng = Rng(2024);
    let ip = ipv4(A4, B4, 17, &udp(1, 2, b"abcdefgh"));
    let seeds =
        [pcap(101, &[(0, ip.clone()), (5, ip.clone())]), pcapng(1, &[(0, ip.clone()), (9, ip)])];
    for seed in &seeds {
        for _ in 0..5000 {
            let mut b = seed.clone();
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(b.len());
                b[i] = rng.next() as u8;
            }
            if rng.below(4) == 0 {
                b.truncate(rng.below(b.len()));
            }
            if let Ok(cap) = hipsec::capture::read(&b) {
                for f in &cap.frames {
                    let _ = hipsec::capture::payload(f);
                }
            }
        }
    }
}

#[test]
fn bad_sa_file_is_reported_with_position() {
    let dir = tmpdir("badsa");
    let sa = write(&dir, "sa.toml", GCM_TUNNEL.replace("0x00001000", "0x00000010").as_bytes());
    let input = write(&dir, "in.pcap", &pcap(101, &[]));
    let o =
        run(&["pcap", "seal", "--sa", sa.to_str().unwrap(), input.to_str().unwrap(), "/dev/null"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("sa.toml:6:7: field \"spi\": spi 0x00000010 is reserved"), "{err}");
}

#[test]
fn text_summary_and_legacy_note() {
    let dir = tmpdir("text");
    let sa = write(&dir, "sa.toml", sa_text("esp", "tunnel", "3des-sha1", false, false).as_bytes());
    let input = write(
        &dir,
        "in.pcap",
        &pcap(101, &[(0, ipv4(A4, B4, 17, &udp(1, 2, b"x"))), (1, vec![1, 2])]),
    );
    let out = dir.join("o.pcap");
    let o = run(&[
        "pcap",
        "seal",
        "--sa",
        sa.to_str().unwrap(),
        input.to_str().unwrap(),
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let s = stdout(&o);
    assert!(s.starts_with("seal: 2 packets in, 1 out, 1 dropped\n"), "{s}");
    assert!(s.contains("malformed"), "{s}");
    assert!(s.contains("sa 0x00001000 esp 3des-sha1 tunnel: 1 packets"), "{s}");
    assert!(stderr(&o).contains("legacy: 3des-sha1"), "{}", stderr(&o));
}

#[test]
fn help_teaches() {
    for cmd in [
        &["pcap", "seal", "--help"][..],
        &["pcap", "open", "--help"],
        &["pcap", "wireshark-keys", "--help"],
    ] {
        let o = run(cmd);
        assert!(o.status.success());
        assert!(stdout(&o).contains("Example:"), "{cmd:?}");
    }
    let o = run(&["pcap", "open", "--sa", "x", "--bundle", "a", "b"]);
    assert_eq!(o.status.code(), Some(2), "usage errors exit 2");
}
