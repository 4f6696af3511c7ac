//! RFC 7296 §2.5: "If the critical flag is set and the payload type is unrecognized, the
//! message MUST be rejected and the response to the IKE request containing that payload MUST
//! include a Notify payload UNSUPPORTED_CRITICAL_PAYLOAD, indicating an unsupported critical
//! payload was included. In that Notify payload, the Notification Data contains the one-octet
//! payload type." An unknown payload without the critical bit is skipped.
//!
//! The IKE_SA_INIT request is built and our answer dissected by scapy (`scapy.contrib.ikev2`,
//! an independent encoder); the encrypted case seals the unknown payload with keys derived
//! apart from the sessions.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use crypto::{AeadAlg, CbcAlg, DhGroup, EncrAlg, EspSuite, HmacAlg, IntegAlg, PrfAlg};
use ike::auth::CookieSecret;
use ike::sk::SkKeys;
use ike::{
    AuthConfig, AuthOutcome, ChildSuite, Config, Endpoints, IkeSuite, InitOutcome, Mode, Responder,
    Role, SaInitNext, Session, initiator,
};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use wire::ikev2::{
    ExchangeType, Flags, Header, Id, NotifyType, Payload, PayloadType, TrafficSelector,
};
use zeroize::Zeroizing;

const SCRIPT: &str = r#"
import sys
from scapy.contrib.ikev2 import *
def build(critical):
    tr = (IKEv2_Transform(next_payload=3, transform_type=1, transform_id=20, length=12, key_length=128)
        / IKEv2_Transform(next_payload=3, transform_type=2, transform_id=5)
        / IKEv2_Transform(next_payload=0, transform_type=4, transform_id=31))
    m = (IKEv2(init_SPI=bytes.fromhex("0102030405060708"), resp_SPI=bytes(8), exch_type=34, flags=0x08, id=0)
        / IKEv2_SA(prop=IKEv2_Proposal(proposal=1, proto=1, trans_nb=3, trans=tr))
        / IKEv2_KE(group=31, ke=bytes(range(1, 33)))
        / IKEv2_Nonce(next_payload=200, nonce=bytes(range(100, 132)))
        / IKEv2_Payload(next_payload=0, flags=0x80 if critical else 0, load=b"\xaa\xbb\xcc\xdd"))
    print(bytes(m).hex())
def dissect(h):
    p = IKEv2(bytes.fromhex(h))
    print("exch", p.exch_type, "flags", int(p.flags), "id", p.id)
    n = p[IKEv2_Notify]
    print("notify", n.type, bytes(n.notify).hex())
if sys.argv[1] == "build":
    build(sys.argv[2] == "critical")
else:
    dissect(sys.argv[2])
"#;

fn python() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let venv = std::env::var("VENV").map_or_else(|_| root.join(".venv"), |v| root.join(v));
    let python = venv.join("bin/python");
    let ok = Command::new(&python)
        .args(["-c", "import scapy.contrib.ikev2"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        println!("SKIPPED: no venv with scapy at {}", venv.display());
    }
    ok.then_some(python)
}

fn scapy(python: &Path, args: &[&str]) -> String {
    let out = Command::new(python).args(["-c", SCRIPT]).args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn config(local: &str, remote: &str) -> Config {
    Config {
        local_id: Id::fqdn(local),
        remote_id: Some(Id::fqdn(remote)),
        auth: AuthConfig::Psk(Zeroizing::new(b"k".to_vec())),
        ike_suites: vec![IkeSuite {
            encr: EncrAlg::Aead(AeadAlg::Aes128Gcm),
            integ: IntegAlg::None,
            prf: PrfAlg::HmacSha256,
            dh: DhGroup::Curve25519,
        }],
        more_children: Vec::new(),
        peer_eap: None,
        child_suites: vec![ChildSuite {
            esp: EspSuite::new(EncrAlg::Cbc(CbcAlg::Aes128), IntegAlg::Hmac(HmacAlg::Sha256_128))
                .unwrap(),
            esn: false,
            pfs: None,
        }],
        local_ts: vec![TrafficSelector::any(false)],
        remote_ts: vec![TrafficSelector::any(false)],
        mode: Mode::Tunnel,
    }
}

fn responder() -> Responder {
    let secret = CookieSecret { version: 1, key: Zeroizing::new([2; 32]) };
    Responder::new(config("b", "a"), crypto::default_provider(), secret).unwrap()
}

fn addr(last: u8) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, last)), 500)
}

#[test]
fn an_ike_sa_init_request_with_an_unknown_critical_payload_is_answered_with_the_notify() {
    let Some(py) = python() else { return };
    let ep = Endpoints { local: addr(2), remote: addr(1) };
    let request = hex::decode(scapy(&py, &["build", "critical"])).unwrap();
    let InitOutcome::Reply(reply, why) = responder().handle_init(0, ep, &request, false) else {
        panic!("not answered with a notify");
    };
    assert_eq!(why.unsupported_critical(), Some(200), "{why}");
    let seen = scapy(&py, &["dissect", &hex::encode(&reply)]);
    // IKE_SA_INIT (34), the Response flag (0x20), message ID 0; notify type 1 with the type.
    assert_eq!(seen, "exch 34 flags 32 id 0\nnotify 1 c8", "scapy read: {seen}");
    // Without the critical bit the same payload is skipped and the exchange goes on.
    let plain = hex::decode(scapy(&py, &["build", "plain"])).unwrap();
    let out = responder().handle_init(0, ep, &plain, false);
    assert!(matches!(out, InitOutcome::HalfOpen(..)), "a non-critical unknown payload is skipped");
}

/// Two sessions after IKE_AUTH.
fn established() -> (Session, Session) {
    let p = crypto::default_provider();
    let (a, b) = (addr(1), addr(2));
    let (st, m1) =
        initiator::start(config("a", "b"), p, Endpoints { local: a, remote: b }, 0).unwrap();
    let InitOutcome::HalfOpen(half, m2) =
        responder().handle_init(0, Endpoints { local: b, remote: a }, &m1, false)
    else {
        panic!()
    };
    let SaInitNext::Auth(auth, m3) = st.handle(0, &m2).unwrap() else { panic!() };
    let AuthOutcome::Established(eb, m4) = half.handle(&m3).unwrap() else { panic!() };
    let ea = auth.handle(&m4).unwrap();
    let (sa, _) = Session::new(config("a", "b"), p, ea);
    let (sb, _) = Session::new(config("b", "a"), p, *eb);
    (sa, sb)
}

#[test]
fn an_encrypted_request_with_an_unknown_critical_payload_is_answered_with_the_notify() {
    let p = crypto::default_provider();
    let (a, mut b) = established();
    let ike = a.ike();
    // The initiator's SK keys, derived again from the negotiated keys.
    let mut sk = SkKeys::new(p, &ike.suite, &ike.keys, Role::Initiator).unwrap();
    let header = Header {
        spi_i: ike.spi_i,
        spi_r: ike.spi_r,
        exchange_type: ExchangeType::INFORMATIONAL,
        flags: Flags { initiator: true, ..Flags::default() },
        message_id: ike.next_request_id,
    };
    // One payload of unassigned type 200, critical bit set, 4 bytes of body (§3.2 header).
    let chain = [0, 0x80, 0, 8, 0xaa, 0xbb, 0xcc, 0xdd];
    let request = sk.seal_chain(p, &header, PayloadType(200), &chain).unwrap();
    let out = b.handle(1, &request).expect("a request answered, not dropped");
    assert_eq!(out.send.len(), 1);
    let (h, payloads) = sk.open(&out.send[0]).unwrap();
    assert!(h.flags.response && h.message_id == header.message_id, "{h:?}");
    let notified = payloads.iter().any(|pl| {
        matches!(pl, Payload::Notify(n)
            if n.notify_type == NotifyType::UNSUPPORTED_CRITICAL_PAYLOAD && n.data == [200])
    });
    assert!(notified, "{payloads:?}");
    assert!(out.events.is_empty(), "nothing of the request acted on: {:?}", out.events);
    // The same request again is a retransmission: the same answer, from the cache (§2.1).
    let again = b.handle(2, &request).unwrap();
    assert_eq!(again.send, out.send);
    // The critical bit clear: the unknown payload is skipped; an empty INFORMATIONAL is a
    // liveness check, answered empty.
    let header = Header { message_id: header.message_id + 1, ..header };
    let chain = [0, 0, 0, 8, 0xaa, 0xbb, 0xcc, 0xdd];
    let request = sk.seal_chain(p, &header, PayloadType(200), &chain).unwrap();
    let out = b.handle(3, &request).unwrap();
    let (_, payloads) = sk.open(&out.send[0]).unwrap();
    assert!(payloads.is_empty(), "{payloads:?}");
}
