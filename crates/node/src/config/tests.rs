//! Tests of the node config: the documented example parses, and each bad field is named with its line.

use super::*;
use crate::config::sa::Direction;

const EXAMPLE: &str = include_str!("../../../../docs/node-example.toml");

fn err_of(text: &str) -> ConfigError {
    match parse("t.toml", text) {
        Ok(_) => panic!("config was accepted:\n{text}"),
        Err(e) => e,
    }
}

/// The example with `from` replaced by `to` (once); fails if `from` is absent.
fn edited(from: &str, to: &str) -> String {
    assert!(EXAMPLE.contains(from), "example lacks {from:?}");
    EXAMPLE.replacen(from, to, 1)
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).map(|i| i + 1).unwrap_or(0)
}

#[test]
fn example_parses() {
    let c = parse("example.toml", EXAMPLE).unwrap();
    assert_eq!(c.interface.name, "hipsec0");
    assert_eq!(c.interface.link_mtu, 1500);
    assert_eq!(c.interface.addresses.len(), 2);
    assert_eq!(
        c.transport,
        Transport::Udp {
            local: "192.0.2.1:4500".parse().unwrap(),
            peer: Some("192.0.2.2:4500".parse().unwrap())
        }
    );
    assert_eq!(c.sas.len(), 2);
    assert_eq!(c.sas[0].direction, Direction::Out);
    assert_eq!(c.sas[0].params.spi.0, 0x1001);
    assert_eq!(c.sas[0].params.enc_key.len(), 20);
    assert_eq!(c.sas[1].direction, Direction::In);
    assert_eq!(c.policies.len(), 2);
    assert_eq!(c.policies[0].action, PolicyAction::Discard);
    assert_eq!(c.policies[0].selector.dst_ports, Some((9, 9)));
    assert_eq!(c.policies[1].action, PolicyAction::Protect(vec![0]));
    assert_eq!(c.control_socket.as_deref(), Some(Path::new("/run/hipsec-node.sock")));
}

#[test]
fn raw_transport_and_spi_reference() {
    let t = edited("transport = \"udp\"", "transport = \"raw\"")
        .replace("local = \"192.0.2.1:4500\"", "local = \"192.0.2.1\"")
        .replace("peer = \"192.0.2.2:4500\"", "peer = \"192.0.2.2\"")
        .replace("sas = [\"a-to-b\"]", "sas = [0x1001]");
    let c = parse("t.toml", &t).unwrap();
    assert!(matches!(c.transport, Transport::Raw { peer: Some(_), .. }));
    assert_eq!(c.policies[1].action, PolicyAction::Protect(vec![0]));
    // Without a peer, the file's SAs would have nowhere to go: refused, naming the field.
    let no_peer: String =
        t.lines().filter(|l| !l.starts_with("peer = ")).map(|l| format!("{l}\n")).collect();
    assert!(no_peer.len() < t.len(), "the example has a [network] peer line");
    match parse("t.toml", &no_peer) {
        Err(e) => assert_eq!(e.field(), Some("peer"), "{e}"),
        Ok(_) => panic!("raw transport with [[sa]] and no peer accepted"),
    }
    // A peer of the other IP version, for either carrier.
    for (text, from, to) in [
        (&t, "peer = \"192.0.2.2\"", "peer = \"2001:db8::2\""),
        (&edited("x", "x"), "peer = \"192.0.2.2:4500\"", "peer = \"[2001:db8::2]:4500\""),
    ] {
        assert!(text.contains(from), "{from}");
        match parse("t.toml", &text.replacen(from, to, 1)) {
            Err(e) => assert!(e.field() == Some("peer") && e.to_string().contains("IP version")),
            Ok(_) => panic!("a peer of the other IP version accepted"),
        }
    }
}

#[test]
fn cbc_suite() {
    let t = edited(
        "aead = \"aes128gcm\"",
        "enc = \"aes128cbc\"\nauth = \"sha256\"\n\
         auth-key = \"000102030405060708090a0b0c0d0e0f000102030405060708090a0b0c0d0e0f\"",
    )
    .replacen(
        "key = \"0x000102030405060708090a0b0c0d0e0f_a0a1a2a3\"",
        "enc-key = \"000102030405060708090a0b0c0d0e0f\"",
        1,
    );
    let c = parse("t.toml", &t).unwrap();
    assert_eq!(c.sas[0].params.auth_key.len(), 32);
}

/// Each bad value gives a Field error naming the field and the line it is on.
#[test]
fn bad_fields_are_named_with_line() {
    let cases: &[(&str, &str, &str)] = &[
        ("name = \"hipsec0\"", "name = \"a-very-long-interface-name\"", "name"),
        ("mtu = 1500", "mtu = 100", "mtu"),
        ("addresses = [\"10.0.0.1/24\"", "addresses = [\"10.0.0.1/33\"", "addresses"),
        ("transport = \"udp\"", "transport = \"tcp\"", "transport"),
        ("peer = \"192.0.2.2:4500\"", "peer = \"nowhere\"", "peer"),
        ("direction = \"out\"", "direction = \"sideways\"", "direction"),
        ("spi = \"0x00001001\"", "spi = 17", "spi"),
        ("spi = \"0x00002001\"", "spi = \"0x00001001\"\nname2 = 1", "name2"),
        ("mode = \"tunnel\"", "mode = \"tunel\"", "mode"),
        ("src = \"192.0.2.1\"", "src = \"192.0.2.300\"", "src"),
        ("dst = \"192.0.2.2\"", "dst = \"2001:db8::2\"", "dst"),
        ("aead = \"aes128gcm\"", "aead = \"rot13\"", "aead"),
        ("key = \"0x000102030405060708090a0b0c0d0e0f_a0a1a2a3\"", "key = \"0x0001\"", "key"),
        ("key = \"0x000102030405060708090a0b0c0d0e0f_a0a1a2a3\"", "key = \"zz\"", "key"),
        ("replay-window = 128", "replay-window = 5", "replay-window"),
        ("proto = \"esp\"", "proto = \"gre\"", "proto"),
        ("proto = \"tcp\"", "proto = \"tcpp\"", "proto"),
        ("dst-ports = 9", "dst-ports = \"9-1\"", "dst-ports"),
        ("action = \"discard\"", "action = \"drop\"", "action"),
        ("sas = [\"a-to-b\"]", "sas = [\"nope\"]", "sas"),
        ("sas = [\"a-to-b\"]", "sas = [\"b-to-a\"]", "sas"),
        ("sas = [\"a-to-b\"]", "sas = []", "sas"),
    ];
    for (from, to, field) in cases {
        let text = edited(from, to);
        let e = err_of(&text);
        let msg = e.to_string();
        assert!(msg.starts_with("t.toml:"), "{msg}");
        assert!(
            msg.contains(&format!("\"{field}\"")) || msg.contains(&format!("`{field}`")),
            "case {to:?}: error does not name {field}: {msg}"
        );
        let want = line_of(&text, to.lines().last().unwrap_or(to));
        if *field != "name2" {
            assert_eq!(e.line(), Some(want), "case {to:?}: {msg}");
        }
    }
}

#[test]
fn missing_field_and_syntax_errors_have_lines() {
    let text = edited("mode = \"tunnel\"\n", "");
    let e = err_of(&text);
    assert!(matches!(e, ConfigError::Toml { .. }), "{e}");
    assert!(e.to_string().contains("mode"), "{e}");
    let e = err_of("[interface]\nname = \"x\"\nmtu = = 3\n");
    assert_eq!(e.line(), Some(3), "{e}");
}

#[test]
fn missing_file_is_named() {
    let e = load(Path::new("/nonexistent/node.toml")).unwrap_err();
    assert!(e.to_string().starts_with("/nonexistent/node.toml:"), "{e}");
}

#[test]
fn filter_table_is_checked_at_load() {
    let dir = std::env::temp_dir().join(format!("hipsec-cfg-filter-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("good.rules"), "block in proto udp from any to any port 9\n").unwrap();
    std::fs::write(dir.join("bad.rules"), "pass\nblock in proto tcp from any to any port http\n")
        .unwrap();
    let cfg = |rules: &str, engine: &str| {
        format!("{EXAMPLE}\n[filter]\nrules = \"{rules}\"\nengine = \"{engine}\"\n")
    };
    // Relative rule paths are relative to the config file.
    let file = dir.join("node.toml").display().to_string();
    let c = parse(&file, &cfg("good.rules", "linear")).unwrap();
    let f = c.filter.unwrap();
    assert_eq!(f.rules, dir.join("good.rules"));
    assert_eq!(f.engine, crate::config::filter::FilterEngine::Linear);
    let e = parse(&file, &cfg("bad.rules", "classifier")).unwrap_err().to_string();
    assert!(e.contains("\"rules\"") && e.contains("line 2, column"), "{e}");
    let e = parse(&file, &cfg("good.rules", "fast")).unwrap_err().to_string();
    assert!(e.contains("\"engine\""), "{e}");
    let e = parse(&file, &cfg("missing.rules", "classifier")).unwrap_err().to_string();
    assert!(e.contains("\"rules\"") && e.contains("missing.rules"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `line` of an SA or policy is the line of its own `[[...]]` header (toml spans start there).
#[test]
fn sa_and_policy_lines_are_their_headers() {
    let c = parse("example.toml", EXAMPLE).unwrap();
    let headers: Vec<usize> = EXAMPLE
        .lines()
        .enumerate()
        .filter(|(_, l)| l.starts_with("[["))
        .map(|(i, _)| i + 1)
        .collect();
    let lines: Vec<usize> =
        c.sas.iter().map(|s| s.line).chain(c.policies.iter().map(|p| p.line)).collect();
    assert_eq!(lines, headers);
}

/// The node runs the SA file's format with `Options::NODE`: ESP needs integrity, SAs a direction.
#[test]
fn node_only_sa_rules() {
    let no_auth = edited("aead = \"aes128gcm\"", "enc = \"aes128cbc\"").replacen(
        "key = \"0x000102030405060708090a0b0c0d0e0f_a0a1a2a3\"",
        "enc-key = \"000102030405060708090a0b0c0d0e0f\"",
        1,
    );
    let e = err_of(&no_auth).to_string();
    assert!(e.contains("field \"auth\": missing: aes128cbc is ESP without integrity"), "{e}");
    let e = err_of(&edited("direction = \"in\"\n", "")).to_string();
    assert!(e.contains("field \"direction\": missing"), "{e}");
}

/// `[metrics]` and `[log]`: absent by default; good values parse; each bad one names its field
/// and line; unknown keys are refused.
#[test]
fn metrics_and_log_sections() {
    use crate::log::{Level, LogConf, LogFormat};
    let c = parse("t.toml", EXAMPLE).unwrap();
    assert_eq!(c.metrics_listen, None);
    assert_eq!(
        c.log,
        LogConf { format: LogFormat::Text, level: Level::Info, ..LogConf::default() }
    );

    let with = |extra: &str| format!("{EXAMPLE}\n{extra}");
    let c = parse(
        "t.toml",
        &with(
            "[metrics]\nlisten = \"127.0.0.1:9469\"\n[log]\nformat = \"json\"\nlevel = \"warn\"\n",
        ),
    )
    .unwrap();
    assert_eq!(c.metrics_listen, Some("127.0.0.1:9469".parse().unwrap()));
    assert_eq!(
        c.log,
        LogConf { format: LogFormat::Json, level: Level::Warn, ..LogConf::default() }
    );
    let c =
        parse("t.toml", &with("[metrics]\nlisten = \"[::1]:9000\"\n[log]\nlevel = \"debug\"\n"))
            .unwrap();
    assert_eq!(c.metrics_listen, Some("[::1]:9000".parse().unwrap()));
    assert_eq!(
        c.log,
        LogConf { format: LogFormat::Text, level: Level::Debug, ..LogConf::default() }
    );
    let c = parse("t.toml", &with("[log]\nfilter = \"warn,[ike{conn=gw}]=debug\"\n")).unwrap();
    assert_eq!(c.log.filter.as_deref(), Some("warn,[ike{conn=gw}]=debug"));

    let cases: &[(&str, &str)] = &[
        ("[metrics]\nlisten = \"127.0.0.1\"\n", "listen"),
        ("[metrics]\nlisten = \"127.0.0.1:0\"\n", "listen"),
        ("[metrics]\nlisten = \"localhost:9469\"\n", "listen"),
        ("[metrics]\nlisten = \"::1:9469\"\n", "listen"),
        ("[log]\nformat = \"xml\"\n", "format"),
        ("[log]\nformat = \"JSON\"\n", "format"),
        ("[log]\nlevel = \"trace\"\n", "level"),
        ("[log]\nfilter = \"info,[ike{conn=gw]=debug\"\n", "filter"),
        ("[log]\nfilter = \"node=loud\"\n", "filter"),
    ];
    for (extra, field) in cases {
        let text = with(extra);
        let e = err_of(&text);
        let msg = e.to_string();
        assert_eq!(e.field(), Some(*field), "{extra:?}: {msg}");
        assert!(msg.starts_with("t.toml:") && msg.contains(&format!("\"{field}\"")), "{msg}");
        let bad_line = extra.lines().last().unwrap_or("");
        assert_eq!(e.line(), Some(line_of(&text, bad_line)), "{extra:?}: {msg}");
    }
    // Unknown keys and a missing `listen` are TOML errors that name the key; a wrong type is
    // one on the value's line.
    for (extra, key) in [
        ("[metrics]\nlisten = \"127.0.0.1:9469\"\npath = \"/m\"\n", "path"),
        ("[metrics]\n", "listen"),
        ("[log]\ncolour = true\n", "colour"),
    ] {
        let e = err_of(&with(extra));
        assert!(matches!(e, ConfigError::Toml { .. }), "{extra:?}: {e}");
        assert!(e.to_string().contains(&format!("`{key}`")), "{extra:?}: {e}");
    }
    let text = with("[metrics]\nlisten = 9469\n");
    let e = err_of(&text);
    assert!(matches!(e, ConfigError::Toml { .. }), "{e}");
    assert_eq!(e.line(), Some(line_of(&text, "listen = 9469")), "{e}");
}

#[test]
fn bypass_device() {
    let with = |d: &str| {
        edited(
            "peer = \"192.0.2.2:4500\"",
            &format!("peer = \"192.0.2.2:4500\"\nbypass-device = {d}"),
        )
    };
    let c = parse("t.toml", &with("\"eth0\"")).unwrap();
    assert_eq!(c.bypass_device.as_deref(), Some("eth0"));
    assert_eq!(parse("t.toml", EXAMPLE).unwrap().bypass_device, None);
    for (bad, why) in [
        ("\"hipsec0\"", "TUN device itself"),
        ("\"\"", "1..=15 bytes"),
        ("\"a-very-long-device-name\"", "1..=15 bytes"),
    ] {
        let t = with(bad);
        let e = err_of(&t).to_string();
        let line = line_of(&t, "bypass-device");
        assert!(e.contains(&format!("t.toml:{line}:")), "{e}");
        assert!(e.contains("\"bypass-device\"") && e.contains(why), "{e}");
    }
}

#[test]
fn raw_carrier_needs_the_carrier_addresses_in_every_sa() {
    let raw = edited("transport = \"udp\"", "transport = \"raw\"")
        .replace("local = \"192.0.2.1:4500\"", "local = \"192.0.2.1\"")
        .replace("peer = \"192.0.2.2:4500\"", "peer = \"192.0.2.2\"");
    parse("t.toml", &raw).unwrap();
    // Transport mode between the TUN addresses would be routed back into the TUN device.
    let t = raw.replacen("src = \"192.0.2.1\"", "src = \"10.0.0.1\"", 1);
    let e = err_of(&t).to_string();
    assert!(e.contains(&format!("t.toml:{}:", line_of(&t, "src = \"10.0.0.1\""))), "{e}");
    assert!(e.contains("field \"src\"") && e.contains("needs src = \"192.0.2.1\""), "{e}");
    let t = raw.replacen("dst = \"192.0.2.1\"", "dst = \"192.0.2.9\"", 1);
    let e = err_of(&t).to_string();
    assert!(
        e.contains("field \"dst\"") && e.contains("inbound SA needs dst = \"192.0.2.1\""),
        "{e}"
    );
}

/// The example made two-lane: lane 1 gets its own SA pair (inbound SPI odd).
fn two_lanes() -> String {
    let lane1 = "[[sa]]\nname = \"a-to-b\"\nlane = 1\ndirection = \"out\"\nproto = \"esp\"\n\
                 mode = \"tunnel\"\nsrc = \"192.0.2.1\"\ndst = \"192.0.2.2\"\nspi = \"0x00001003\"\n\
                 aead = \"aes128gcm\"\nkey = \"0x303132333435363738393a3b3c3d3e3f_d0d1d2d3\"\n\n\
                 [[sa]]\nname = \"b-to-a\"\nlane = 1\ndirection = \"in\"\nproto = \"esp\"\n\
                 mode = \"tunnel\"\nsrc = \"192.0.2.2\"\ndst = \"192.0.2.1\"\nspi = \"0x00002003\"\n\
                 aead = \"aes128gcm\"\nkey = \"0x404142434445464748494a4b4c4d4e4f_e0e1e2e3\"\n\n";
    edited("name = \"hipsec0\"", "name = \"hipsec0\"\nqueues = 2")
        .replacen("spi = \"0x00002001\"", "spi = \"0x00002002\"", 1)
        .replacen("[[policy]]", &format!("{lane1}[[policy]]"), 1)
}

#[test]
fn lanes_parse_and_pair_up_by_name() {
    let c = parse("t.toml", &two_lanes()).unwrap();
    assert_eq!(c.interface.queues, 2);
    let PolicyAction::Protect(v) = &c.policies[1].action else { panic!("not protect") };
    assert_eq!(c.sas[v[0]].lane, 0);
    let other = crate::config::sa::counterpart(&c.sas, v[0], 1).unwrap();
    assert_eq!((c.sas[other].lane, c.sas[other].params.spi.0), (1, 0x1003));
    // Each lane's engine holds only its own SAs.
    let (e1, addrs) =
        crate::keying::manual::build_engine_for(&c, ipsec::Time(0), true, true, 1).unwrap();
    assert_eq!(e1.outbound_sas().map(|s| s.spi().0).collect::<Vec<_>>(), [0x1003]);
    assert_eq!(addrs.keys().map(|k| k.0).collect::<Vec<_>>(), [0x2003]);
}

#[test]
fn lane_errors_name_the_field() {
    let t = two_lanes();
    let cases = [
        // Lane 0's inbound SPI must be even with two lanes.
        (t.replacen("spi = \"0x00002002\"", "spi = \"0x00002001\"", 1), "spi", "leaves 0"),
        (t.replacen("lane = 1", "lane = 2", 1), "lane", "queues = 2"),
        (
            t.replacen("name = \"a-to-b\"\nlane = 1", "name = \"a-to-c\"\nlane = 1", 1),
            "sas",
            "no SA named \"a-to-b\" with lane = 1",
        ),
        (
            t.replacen("transport = \"udp\"", "transport = \"raw\"", 1)
                .replace("local = \"192.0.2.1:4500\"", "local = \"192.0.2.1\"")
                .replace("peer = \"192.0.2.2:4500\"", "peer = \"192.0.2.2\""),
            "transport",
            "needs transport = \"udp\"",
        ),
        (t.replacen("queues = 2", "queues = 0", 1), "queues", "want 1..="),
        (
            t.replacen("name = \"b-to-a\"\nlane = 1", "name = \"b-to-a\"\nlane = 0", 1),
            "name",
            "already used",
        ),
    ];
    for (text, field, why) in cases {
        let e = err_of(&text).to_string();
        assert!(e.contains(&format!("field \"{field}\"")) && e.contains(why), "{field}: {e}");
        assert!(e.starts_with("t.toml:"), "{e}");
    }
}

#[test]
fn beet_mode() {
    // ESP in BEET between inner addresses; over raw IP too (the carrier swaps addresses).
    let t =
        edited("mode = \"tunnel\"                  # \"tunnel\" (gateways)", "mode = \"beet\" #")
            .replacen("src = \"192.0.2.1\"", "src = \"2001:20::1\"", 1)
            .replacen("dst = \"192.0.2.2\"", "dst = \"2001:20::2\"", 1);
    let c = parse("t.toml", &t).unwrap();
    assert!(c.sas[0].beet && c.sas[0].params.mode == ipsec::Mode::Transport);
    assert!(!c.sas[1].beet);
    // BEET is ESP-only.
    let ah = t.replacen("proto = \"esp\"", "proto = \"ah\"", 1);
    let e = err_of(&ah).to_string();
    assert!(e.contains("field \"mode\"") && e.contains("ESP only"), "{e}");
}

#[test]
fn data_path_scheduling() {
    assert_eq!(parse("t.toml", EXAMPLE).unwrap().scheduling, Scheduling::Fifo);
    let t = edited("scheduling = \"fifo\"", "scheduling = \"other\"");
    assert_eq!(parse("t.toml", &t).unwrap().scheduling, Scheduling::Other);
    // Absent section: the default.
    let t = edited("[data-path]\nscheduling = \"fifo\"", "");
    assert_eq!(parse("t.toml", &t).unwrap().scheduling, Scheduling::Fifo);
    let t = edited("scheduling = \"fifo\"", "scheduling = \"rr\"");
    let e = err_of(&t).to_string();
    assert!(e.contains("scheduling") && e.contains("fifo"), "{e}");
    assert!(e.contains(&format!("t.toml:{}", line_of(&t, "scheduling = \"rr\""))), "{e}");
    let t = edited("scheduling = \"fifo\"", "priority = 5");
    assert!(err_of(&t).to_string().contains("priority"));
}

#[test]
fn ike_limits_default_and_bad_values_are_named() {
    let c = parse("example.toml", EXAMPLE).unwrap();
    assert_eq!(c.ike, ike_limits::IkeLimits { cookie_threshold: 64, half_open_per_peer: 0 });
    let text = format!("{EXAMPLE}\n[ike]\ncookie_threshold = 8\nhalf_open_per_peer = 5\n");
    let c = parse("t.toml", &text).unwrap();
    assert_eq!(c.ike, ike_limits::IkeLimits { cookie_threshold: 8, half_open_per_peer: 5 });
    let text = format!("{EXAMPLE}\n[ike]\nhalf_open_per_peer = -1\n");
    let e = err_of(&text).to_string();
    assert!(e.contains("half_open_per_peer") && e.contains("want a count"), "{e}");
    assert!(e.contains(&format!(":{}", line_of(&text, "half_open_per_peer = -1"))), "{e}");
}
