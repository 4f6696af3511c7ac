//! Interop checks of `wire::mip6` against independent implementations.
//!
//! - tshark 4.0: our Binding Update behind a Home Address option, our Binding Acknowledgement
//!   behind a type 2 routing header, a Binding Error and a return-routability BU with Nonce
//!   Indices and Binding Authorization Data, as a pcap of raw IPv6 packets; tshark must dissect
//!   every field as we wrote it and call nothing malformed. (tshark does not verify MH
//!   checksums, see ../shared/reference/hip-mip6-tools.md; our checksums are checked here.)
//! - scapy 2.8, both directions: a scapy-built BU parsed by ours, our BA parsed by scapy with
//!   equal fields and the checksum scapy recomputes. scapy 2.8 takes the care-of address for
//!   the pseudo-header of a BU whose Home Address option follows padding (the same note), so
//!   that checksum is accepted under either address and said which; a BU from the home address
//!   (no option) pins the checksum exactly.
//!
//! Either tool missing makes its test print SKIPPED and pass.

use std::net::Ipv6Addr;
use std::process::Command;

use wire::mip6::*;

fn a(s: &str) -> Ipv6Addr {
    s.parse().unwrap_or(Ipv6Addr::UNSPECIFIED)
}
fn home() -> Ipv6Addr {
    a("2001:db8:1::100")
}
fn ha() -> Ipv6Addr {
    a("2001:db8:1::1")
}
fn coa() -> Ipv6Addr {
    a("2001:db8:2::7")
}

/// IPv6 header (RFC 8200 §3) + `ext` + `mh`; `first` is the Next Header of the IPv6 header.
fn ipv6(src: Ipv6Addr, dst: Ipv6Addr, first: u8, ext: &[u8], mh: &[u8]) -> Vec<u8> {
    let mut p = vec![0x60, 0, 0, 0];
    p.extend_from_slice(&((ext.len() + mh.len()) as u16).to_be_bytes());
    p.extend_from_slice(&[first, 64]);
    p.extend_from_slice(&src.octets());
    p.extend_from_slice(&dst.octets());
    p.extend_from_slice(ext);
    p.extend_from_slice(mh);
    p
}

/// A BU from the care-of address with a Home Address option (§6.3, §11.7.1).
fn our_bu_packet(bu: BindingUpdate) -> Vec<u8> {
    let mh = Message::new(Body::BindingUpdate(bu))
        .to_vec_with_checksum(home(), ha())
        .unwrap_or_default();
    let ext = DestinationOptions::home_address(IPPROTO_MH, home()).to_vec().unwrap_or_default();
    ipv6(coa(), ha(), IPPROTO_DSTOPTS, &ext, &mh)
}

/// A BA to the care-of address with a type 2 routing header (§6.4, §9.5.4).
fn our_ba_packet(ba: BindingAck) -> Vec<u8> {
    let mh =
        Message::new(Body::BindingAck(ba)).to_vec_with_checksum(ha(), home()).unwrap_or_default();
    let rh =
        RoutingHeader2::new(IPPROTO_MH, home()).to_vec().map(|r| r.to_vec()).unwrap_or_default();
    ipv6(ha(), coa(), IPPROTO_ROUTING, &rh, &mh)
}

fn bu() -> BindingUpdate {
    BindingUpdate {
        sequence: 0x1234,
        acknowledge: true,
        home_registration: true,
        key_management_mobility: true,
        lifetime: 150,
        options: vec![MobilityOption::AlternateCareOfAddress(coa())],
        ..BindingUpdate::default()
    }
}

fn ba() -> BindingAck {
    BindingAck {
        status: BaStatus::ACCEPTED,
        key_management_mobility: false,
        sequence: 0x1234,
        lifetime: 100,
        options: vec![MobilityOption::BindingRefreshAdvice { refresh_interval: 75 }],
    }
}

/// A classic pcap (magic a1b2c3d4, version 2.4) of raw IP packets (LINKTYPE_RAW, 101).
fn pcap(packets: &[Vec<u8>]) -> Vec<u8> {
    let mut f = Vec::new();
    for v in [0xa1b2_c3d4u32.to_le_bytes(), [2, 0, 4, 0], [0; 4], [0; 4]] {
        f.extend_from_slice(&v);
    }
    f.extend_from_slice(&65535u32.to_le_bytes());
    f.extend_from_slice(&101u32.to_le_bytes());
    for (n, p) in packets.iter().enumerate() {
        f.extend_from_slice(&(1_700_000_000u32 + n as u32).to_le_bytes());
        f.extend_from_slice(&0u32.to_le_bytes());
        f.extend_from_slice(&(p.len() as u32).to_le_bytes());
        f.extend_from_slice(&(p.len() as u32).to_le_bytes());
        f.extend_from_slice(p);
    }
    f
}

const FIELDS: [&str; 19] = [
    "mip6.mhtype",
    "mip6.bu.seqnr",
    "mip6.bu.a_flag",
    "mip6.bu.h_flag",
    "mip6.bu.k_flag",
    "mip6.bu.lifetime",
    "ipv6.opt.mipv6.home_address",
    "mip6.acoa.acoa",
    "mip6.ba.status",
    "mip6.ba.seqnr",
    "mip6.ba.lifetime",
    "ipv6.routing.type",
    "ipv6.routing.mipv6.home_address",
    "mip6.bra.interval",
    "mip6.be.status",
    "mip6.be.haddr",
    "mip6.ni.hni",
    "_ws.malformed",
    "_ws.expert.message",
];

fn tshark(file: &std::path::Path) -> Option<Vec<Vec<String>>> {
    let mut cmd = Command::new("tshark");
    cmd.args(["-n", "-r"]).arg(file).args([
        "-T",
        "fields",
        "-E",
        "occurrence=a",
        "-E",
        "aggregator=|",
    ]);
    for f in FIELDS {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().ok()?;
    assert!(out.status.success(), "tshark: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    Some(text.lines().map(|l| l.split('\t').map(str::to_string).collect()).collect())
}

fn field<'a>(row: &'a [String], name: &str) -> &'a str {
    FIELDS.iter().position(|f| *f == name).and_then(|i| row.get(i)).map_or("", |s| s.as_str())
}

#[test]
fn tshark_dissects_our_mobility_headers() {
    if !Command::new("tshark").arg("--version").output().is_ok_and(|o| o.status.success()) {
        println!("SKIPPED: needs tshark");
        return;
    }
    let be = Message::new(Body::BindingError(BindingError {
        status: BeStatus::UNKNOWN_BINDING_FOR_HOME_ADDRESS_OPTION,
        home_address: home(),
        options: vec![],
    }))
    .to_vec_with_checksum(ha(), coa())
    .unwrap_or_default();
    let rr_bu = BindingUpdate {
        sequence: 9,
        lifetime: 3,
        options: vec![
            MobilityOption::NonceIndices { home_nonce_index: 10, care_of_nonce_index: 11 },
            MobilityOption::BindingAuthorizationData(vec![0xaa; 12]),
        ],
        ..BindingUpdate::default()
    };
    let mut packets = vec![
        our_bu_packet(bu()),
        our_ba_packet(ba()),
        ipv6(ha(), coa(), IPPROTO_MH, &[], &be),
        our_bu_packet(rr_bu),
    ];
    // Control: the BU again with a Header Len 8 octets longer than the packet, to show this
    // harness sees a malformed packet when there is one.
    let mut control = packets[0].clone();
    control[40 + 24 + 1] += 1;
    packets.push(control);
    // Our own checksums, with the addresses §6.1.1 names.
    assert!(verify_checksum(home(), ha(), &packets[0][40 + 24..]));
    assert!(verify_checksum(ha(), home(), &packets[1][40 + 24..]));
    let dir = std::env::temp_dir().join(format!("mip6_tshark_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_default();
    let file = dir.join("mip6.pcap");
    std::fs::write(&file, pcap(&packets)).unwrap_or_default();
    let rows = tshark(&file);
    let _ = std::fs::remove_dir_all(&dir);
    let Some(rows) = rows else {
        println!("SKIPPED: tshark did not run");
        return;
    };
    assert_eq!(rows.len(), packets.len(), "{rows:#?}");
    let control =
        rows.last().map(|r| field(r, "_ws.malformed").to_string() + field(r, "_ws.expert.message"));
    println!("control: {control:?}");
    assert!(control.is_some_and(|c| !c.is_empty()), "the control packet must show as malformed");
    for (n, r) in rows[..rows.len() - 1].iter().enumerate() {
        println!("packet {}: {r:?}", n + 1);
        assert!(field(r, "_ws.malformed").is_empty(), "packet {} malformed: {r:?}", n + 1);
        let experts = field(r, "_ws.expert.message");
        assert!(!experts.contains("Malformed"), "packet {}: {experts}", n + 1);
    }
    let (bu_row, ba_row, be_row, rr_row) = (&rows[0], &rows[1], &rows[2], &rows[3]);
    let bool_true = |s: &str| s == "1" || s.eq_ignore_ascii_case("true");
    assert_eq!(field(bu_row, "mip6.mhtype"), "5");
    assert_eq!(field(bu_row, "mip6.bu.seqnr"), "4660");
    assert!(
        bool_true(field(bu_row, "mip6.bu.a_flag")) && bool_true(field(bu_row, "mip6.bu.h_flag"))
    );
    assert!(bool_true(field(bu_row, "mip6.bu.k_flag")));
    assert_eq!(field(bu_row, "mip6.bu.lifetime"), "150");
    assert_eq!(field(bu_row, "ipv6.opt.mipv6.home_address"), home().to_string());
    assert_eq!(field(bu_row, "mip6.acoa.acoa"), coa().to_string());
    assert_eq!(field(ba_row, "mip6.mhtype"), "6");
    assert_eq!(field(ba_row, "mip6.ba.status"), "0");
    assert_eq!(field(ba_row, "mip6.ba.seqnr"), "4660");
    assert_eq!(field(ba_row, "mip6.ba.lifetime"), "100");
    assert_eq!(field(ba_row, "ipv6.routing.type"), "2");
    assert_eq!(field(ba_row, "ipv6.routing.mipv6.home_address"), home().to_string());
    assert_eq!(field(ba_row, "mip6.bra.interval"), "75");
    assert_eq!(field(be_row, "mip6.be.status"), "1");
    assert_eq!(field(be_row, "mip6.be.haddr"), home().to_string());
    assert_eq!(field(rr_row, "mip6.bu.seqnr"), "9");
    assert_eq!(field(rr_row, "mip6.ni.hni"), "10");
}

/// The Python with scapy: $SCAPY_PYTHON, the repository's .venv, or python3.
fn scapy_python() -> Option<String> {
    let venv = concat!(env!("CARGO_MANIFEST_DIR"), "/../../.venv/bin/python").to_string();
    let candidates = [std::env::var("SCAPY_PYTHON").ok(), Some(venv), Some("python3".into())];
    candidates.into_iter().flatten().find(|py| {
        Command::new(py)
            .args(["-c", "import scapy.layers.inet6"])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

const SCAPY: &str = r#"
import sys, json
from scapy.layers.inet6 import IPv6, IPv6ExtHdrDestOpt, HAO, MIP6MH_BU, MIP6MH_BA, IPv6ExtHdrRouting, MIP6OptAltCoA
home, ha, coa = sys.argv[2:5]
if sys.argv[1] == "build":
    bu = IPv6(src=coa, dst=ha)/IPv6ExtHdrDestOpt(options=[HAO(hoa=home)])/MIP6MH_BU(seq=0x1234, flags="AHK", mhtime=150, options=[MIP6OptAltCoA(acoa=coa)])
    back = IPv6(src=home, dst=ha)/MIP6MH_BU(seq=7, flags="AH", mhtime=0)
    print(json.dumps([bytes(bu).hex(), bytes(back).hex()]))
else:
    p = IPv6(bytes.fromhex(sys.argv[5]))
    ba = p[MIP6MH_BA]
    q = IPv6(bytes.fromhex(sys.argv[5]))
    del q[MIP6MH_BA].cksum
    q = IPv6(bytes(q))
    rh = p[IPv6ExtHdrRouting]
    print(json.dumps(dict(status=ba.status, seq=ba.seq, lifetime=ba.mhtime, k=bool(ba.flags.K),
        cksum=ba.cksum, recomputed=q[MIP6MH_BA].cksum, rh_type=rh.type, rh_segleft=rh.segleft,
        rh_home=rh.addresses[0], opts=[o.__class__.__name__ for o in ba.options])))
"#;

fn run_scapy(py: &str, args: &[String]) -> String {
    let out = Command::new(py).args(["-c", SCAPY]).args(args).output();
    let out = out.unwrap_or_else(|e| panic!("{py}: {e}"));
    assert!(out.status.success(), "scapy: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2).filter_map(|i| u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()).collect()
}

#[test]
fn scapy_both_directions() {
    let Some(py) = scapy_python() else {
        println!("SKIPPED: scapy is not importable (set SCAPY_PYTHON or create .venv with scapy)");
        return;
    };
    let addrs = [home(), ha(), coa()].map(|x| x.to_string());
    let mut args = vec!["build".to_string()];
    args.extend(addrs.iter().cloned());
    let built = run_scapy(&py, &args);
    let pkts: Vec<Vec<u8>> = built
        .trim_matches(|c| c == '[' || c == ']')
        .split(',')
        .map(|s| hex(s.trim().trim_matches('"')))
        .collect();
    assert_eq!(pkts.len(), 2, "{built}");

    // scapy's BU behind its Home Address option, parsed by ours.
    let p = &pkts[0];
    assert_eq!(p[6], IPPROTO_DSTOPTS);
    let (dest, ext_len) = DestinationOptions::parse(&p[40..]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((dest.next_header, dest.find_home_address()), (IPPROTO_MH, Some(home())));
    let mh = &p[40 + ext_len..];
    let m = Message::parse(mh).unwrap_or_else(|e| panic!("{e}"));
    let Body::BindingUpdate(got) = m.body else { panic!("not a BU: {m:?}") };
    assert_eq!(got, bu(), "scapy's BU fields");
    let by_home = verify_checksum(home(), ha(), mh);
    let by_coa = verify_checksum(coa(), ha(), mh);
    println!(
        "scapy BU checksum: home-address pseudo-header {by_home}, care-of {by_coa} (the known scapy 2.8 slip)"
    );
    assert!(by_home || by_coa, "scapy's BU checksum matches neither pseudo-header");
    // A BU sent from the home address: no option, the checksum must be exact.
    let p = &pkts[1];
    let m = Message::parse(&p[40..]).unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(m.body, Body::BindingUpdate(BindingUpdate { sequence: 7, lifetime: 0, .. })));
    assert!(verify_checksum(home(), ha(), &p[40..]), "checksum of scapy's BU from home");

    // Our BA behind a type 2 routing header, parsed by scapy.
    let ours = our_ba_packet(BindingAck { key_management_mobility: true, ..ba() });
    let mut args = vec!["parse".to_string()];
    args.extend(addrs.iter().cloned());
    args.push(ours.iter().map(|b| format!("{b:02x}")).collect());
    let seen = run_scapy(&py, &args);
    println!("scapy reads our BA: {seen}");
    let cksum = u16::from_be_bytes([ours[40 + 24 + 4], ours[40 + 24 + 5]]);
    for want in [
        "\"status\": 0".to_string(),
        format!("\"seq\": {}", 0x1234),
        "\"lifetime\": 100".into(),
        "\"k\": true".into(),
        format!("\"cksum\": {cksum}"),
        format!("\"recomputed\": {cksum}"),
        "\"rh_type\": 2".into(),
        "\"rh_segleft\": 1".into(),
        format!("\"rh_home\": \"{}\"", home()),
        "MIP6OptBRAdvice".into(),
    ] {
        assert!(seen.contains(&want), "scapy disagrees on {want}: {seen}");
    }
}
