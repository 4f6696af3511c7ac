//! Cross-check of `wire::ikev2` against an independent implementation, scapy's
//! `scapy.contrib.ikev2`: scapy builds two messages, we parse them field by field and re-emit
//! the same bytes; we emit a message and scapy dissects it into the fields we meant.
//! Finds python like crates/hipsec/tests/interop_scapy.rs (`$VENV` or `.venv` at the repository
//! root) and skips, saying so, without a venv that has scapy.

use super::*;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::process::Command;

const SCRIPT: &str = r#"
import sys
from scapy.contrib.ikev2 import *
def build():
    tr = (IKEv2_Transform(next_payload=3, transform_type=1, transform_id=20, length=12, key_length=256)
        / IKEv2_Transform(next_payload=3, transform_type=2, transform_id=5)
        / IKEv2_Transform(next_payload=0, transform_type=4, transform_id=19))
    m1 = (IKEv2(init_SPI=bytes.fromhex("0102030405060708"), resp_SPI=bytes(8), exch_type=34, flags=0x08, id=0)
        / IKEv2_SA(prop=IKEv2_Proposal(proposal=1, proto=1, trans_nb=3, trans=tr))
        / IKEv2_KE(group=19, ke=bytes(range(64)))
        / IKEv2_Nonce(nonce=bytes(range(100, 132)))
        / IKEv2_Notify(proto=0, type=16388, notify=bytes(range(20)))
        / IKEv2_VendorID(vendorID=b"hipsec-test"))
    ts4 = IPv4TrafficSelector(IP_protocol_ID=6, start_port=80, end_port=443,
        starting_address_v4="10.0.0.0", ending_address_v4="10.0.0.255")
    ts6 = IPv6TrafficSelector(IP_protocol_ID=0, length=40, starting_address_v6="2001:db8::",
        ending_address_v6="2001:db8::ffff")
    m2 = (IKEv2(init_SPI=bytes.fromhex("0102030405060708"), resp_SPI=bytes.fromhex("1112131415161718"),
            exch_type=37, flags=0x20, id=7)
        / IKEv2_IDi(IDtype=2, ID=b"alice.example")
        / IKEv2_AUTH(auth_type=2, load=bytes(range(32)))
        / IKEv2_TSi(number_of_TSs=2, traffic_selector=[ts4, ts6])
        / IKEv2_Notify(proto=3, SPIsize=4, type=16393, SPI=bytes.fromhex("c0ffee01"))
        / IKEv2_Delete(proto=3, SPIsize=4, SPInum=2, SPI=[bytes.fromhex("00000101"), bytes.fromhex("00000202")]))
    print(bytes(m1).hex())
    print(bytes(m2).hex())
def dissect(h):
    p = IKEv2(bytes.fromhex(h))
    print("spi_i", p.init_SPI.hex(), "spi_r", p.resp_SPI.hex(), "exch", p.exch_type,
          "flags", int(p.flags), "id", p.id, "length", p.length)
    p = p.payload
    while p is not None and p.name != "Raw" and p.name != "NoPayload":
        if isinstance(p, IKEv2_SA):
            pr = p.prop
            t = pr.trans
            ts = []
            while isinstance(t, IKEv2_Transform):
                ts.append("%d:%d:%s" % (t.transform_type, t.transform_id, t.key_length if t.length > 8 else "-"))
                t = t.payload
            print("sa", pr.proposal, pr.proto, pr.SPI.hex() or "-", ",".join(ts))
        elif isinstance(p, IKEv2_KE):
            print("ke", p.group, p.ke.hex())
        elif isinstance(p, IKEv2_Nonce):
            print("nonce", p.nonce.hex())
        elif isinstance(p, IKEv2_IDr):
            print("idr", p.IDtype, p.ID)
        elif isinstance(p, IKEv2_TSr):
            print("tsr", ",".join("%d:%d-%d:%s-%s" % (t.IP_protocol_ID, t.start_port, t.end_port,
                t.starting_address_v4, t.ending_address_v4) for t in p.traffic_selector))
        elif isinstance(p, IKEv2_Encrypted):
            print("sk", p.next_payload, bytes(p.load).hex())
        else:
            print("other", p.name)
        p = p.payload if not isinstance(p, IKEv2_Encrypted) else None
if sys.argv[1] == "build":
    build()
else:
    dissect(sys.argv[2])
"#;

fn python() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let venv = std::env::var("VENV").map_or_else(|_| root.join(".venv"), |v| root.join(v));
    let python = venv.join("bin/python");
    let has_scapy = Command::new(&python)
        .args(["-c", "import scapy.contrib.ikev2"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_scapy {
        println!(
            "SKIPPED: no venv with scapy at {} (run tests/interop/run.sh to create it)",
            venv.display()
        );
        return None;
    }
    Some(python)
}

fn run(python: &Path, args: &[&str]) -> String {
    let out = Command::new(python).arg("-c").arg(SCRIPT).args(args).output().unwrap();
    assert!(out.status.success(), "scapy: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn expected_sa_init() -> Message {
    Message {
        header: Header {
            spi_i: 0x0102030405060708,
            spi_r: 0,
            exchange_type: ExchangeType::IKE_SA_INIT,
            flags: Flags { initiator: true, ..Flags::default() },
            message_id: 0,
        },
        payloads: vec![
            Payload::Sa(Sa {
                proposals: vec![Proposal {
                    num: 1,
                    protocol_id: ProtocolId::IKE,
                    spi: vec![],
                    transforms: vec![
                        Transform::with_key_length(TransformType::ENCR, encr::AES_GCM_16, 256),
                        Transform::new(TransformType::PRF, prf::HMAC_SHA2_256),
                        Transform::new(TransformType::DH, dh::ECP_256),
                    ],
                }],
            }),
            Payload::Ke(Ke { dh_group: 19, data: (0..64).collect() }),
            Payload::Nonce((100..132).collect()),
            Payload::Notify(Notify::new(NotifyType::NAT_DETECTION_SOURCE_IP, (0..20).collect())),
            Payload::VendorId(b"hipsec-test".to_vec()),
        ],
    }
}

fn expected_informational() -> Message {
    let ts4 = TrafficSelector {
        ip_protocol: 6,
        start_port: 80,
        end_port: 443,
        start_addr: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 0)),
        end_addr: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 255)),
    };
    let ts6 = TrafficSelector {
        ip_protocol: 0,
        start_port: 0,
        end_port: 65535,
        start_addr: IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0)),
        end_addr: IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0xffff)),
    };
    Message {
        header: Header {
            spi_i: 0x0102030405060708,
            spi_r: 0x1112131415161718,
            exchange_type: ExchangeType::INFORMATIONAL,
            flags: Flags { response: true, ..Flags::default() },
            message_id: 7,
        },
        payloads: vec![
            Payload::IdI(Id::fqdn("alice.example")),
            Payload::Auth(Auth { method: AuthMethod::SHARED_KEY_MIC, data: (0..32).collect() }),
            Payload::TsI(Ts { selectors: vec![ts4, ts6] }),
            Payload::Notify(Notify {
                protocol_id: ProtocolId::ESP,
                spi: vec![0xc0, 0xff, 0xee, 0x01],
                notify_type: NotifyType::REKEY_SA,
                data: vec![],
            }),
            Payload::Delete(Delete { protocol_id: ProtocolId::ESP, spis: vec![0x101, 0x202] }),
        ],
    }
}

#[test]
fn scapy_built_messages_parse_field_by_field_and_reemit_identically() {
    let Some(python) = python() else { return };
    let out = run(&python, &["build"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    for (line, want) in lines.iter().zip([expected_sa_init(), expected_informational()]) {
        let bytes = hex::decode(line).unwrap();
        let got = Message::parse(&bytes).unwrap();
        assert_eq!(got.header, want.header);
        for (g, w) in got.payloads.iter().zip(&want.payloads) {
            assert_eq!(g, w);
        }
        assert_eq!(got.payloads.len(), want.payloads.len());
        assert_eq!(hex::encode(want.to_vec().unwrap()), *line, "our bytes differ from scapy's");
    }
}

#[test]
fn our_emitted_message_dissects_in_scapy() {
    let Some(python) = python() else { return };
    let mut m = expected_sa_init();
    m.header.flags = Flags { response: true, ..Flags::default() };
    m.header.spi_r = 0xa1a2a3a4a5a6a7a8;
    m.payloads.truncate(3);
    m.payloads.push(Payload::IdR(Id::ip(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)))));
    m.payloads.push(Payload::TsR(Ts { selectors: vec![TrafficSelector::any(false)] }));
    m.payloads.push(Payload::Sk(Sk { first_inner: PayloadType::IDI, body: vec![0xee; 40] }));
    let out = run(&python, &["dissect", &hex::encode(m.to_vec().unwrap())]);
    let want = format!(
        "spi_i 0102030405060708 spi_r a1a2a3a4a5a6a7a8 exch 34 flags 32 id 0 length {}\n\
         sa 1 1 - 1:20:256,2:5:-,4:19:-\n\
         ke 19 {}\n\
         nonce {}\n\
         idr 1 192.0.2.1\n\
         tsr 0:0-65535:0.0.0.0-255.255.255.255\n\
         sk 35 {}\n",
        m.buffer_len(),
        hex::encode((0..64).collect::<Vec<u8>>()),
        hex::encode((100..132).collect::<Vec<u8>>()),
        hex::encode([0xee; 40]),
    );
    assert_eq!(out, want);
}
