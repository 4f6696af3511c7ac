//! Two hosts run the base exchange in memory: keys agree, and every broken packet is refused
//! without moving the state.

use super::initiator::I1Sent;
use super::responder::Responder;
use super::*;
use crypto::EcCurve;
use std::net::{IpAddr, Ipv6Addr};

const A: IpAddr = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1));
const B: IpAddr = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2));

fn p() -> &'static dyn Provider {
    crypto::default_provider()
}

struct Run {
    i: Established,
    r: Established,
    packets: [Vec<u8>; 4],
}

fn exchange(ci: EcCurve, cr: EcCurve, config: Config) -> Run {
    let hi = LocalHost::generate(ci).unwrap();
    let hr = LocalHost::generate(cr).unwrap();
    exchange_hosts(&hi, &hr, config)
}

fn exchange_hosts(hi: &LocalHost, hr: &LocalHost, config: Config) -> Run {
    let resp = Responder::new(hr, config.clone(), p()).unwrap();
    let s = I1Sent::start(hi, hr.hit(), config, A, B).unwrap();
    let i1 = s.i1().to_vec();
    let r1 = resp.on_i1(&hr.hit(), &i1, A, B).unwrap();
    let (s, work) = s.on_r1(hi, p(), &r1, B, A).unwrap();
    assert_eq!(work.k, 10);
    let i2 = s.i2().to_vec();
    let (r2, r) = resp.on_i2(hr, &i2, A, B).unwrap();
    let i = s.on_r2(&r2, B, A).unwrap();
    Run { i, r, packets: [i1, r1, i2, r2] }
}

fn mirrored(run: &Run) {
    let (i, r) = (&run.i, &run.r);
    assert_eq!(i.peer.hit(), r.local_hit);
    assert_eq!(r.peer.hit(), i.local_hit);
    assert_eq!(i.esp.spi_out, r.esp.spi_in);
    assert_eq!(r.esp.spi_out, i.esp.spi_in);
    assert_eq!(*i.esp.enc_out, *r.esp.enc_in);
    assert_eq!(*i.esp.auth_out, *r.esp.auth_in);
    assert_eq!(*r.esp.enc_out, *i.esp.enc_in);
    assert_ne!(*i.esp.enc_out, *i.esp.enc_in);
    assert_eq!(*i.hip.integ_out, *r.hip.integ_in);
    assert_eq!(i.next_keymat_index, r.next_keymat_index);
}

#[test]
fn base_exchange_agrees_on_keys_for_every_offer() {
    for (ci, cr) in [
        (EcCurve::P256, EcCurve::P256),
        (EcCurve::P384, EcCurve::P256),
        (EcCurve::P256, EcCurve::P384),
    ] {
        mirrored(&exchange(ci, cr, Config::default()));
    }
    let null = Config { ciphers: vec![wire::hip::CipherId::NULL_ENCRYPT], ..Config::default() };
    mirrored(&exchange(EcCurve::P256, EcCurve::P256, null));
    let cbc = Config {
        dh_groups: vec![DhGroupId::NIST_P384],
        esp_suites: vec![EspSuite::AES_128_CBC_HMAC_SHA256],
        ..Config::default()
    };
    let run = exchange(EcCurve::P256, EcCurve::P256, cbc);
    mirrored(&run);
    assert_eq!(run.i.esp.auth_out.len(), 32);
}

/// RFC 7401 §5.3.3 lays the I2 out with HOST_ID among its own parameters; §5.2.18's ENCRYPTED
/// may carry it instead. The Responder takes either, under every HIP_CIPHER we offer — NULL
/// (§5.2.8: NULL-ENCRYPT, ENCRYPTED's contents sent as they are), AES-128-CBC and AES-256-CBC —
/// and what we send by default is the clear form.
#[test]
fn i2_in_every_form_completes() {
    use wire::hip::{CipherId, Message, Param};
    for cipher in [CipherId::NULL_ENCRYPT, CipherId::AES_128_CBC, CipherId::AES_256_CBC] {
        for encrypt_host_id in [false, true] {
            let config = Config { ciphers: vec![cipher], encrypt_host_id, ..Config::default() };
            let run = exchange(EcCurve::P256, EcCurve::P384, config);
            mirrored(&run);
            assert_eq!(run.i.hip.cipher, cipher);
            let i2 = Message::parse(&run.packets[2]).unwrap();
            let clear = i2.params.iter().any(|p| matches!(p, Param::HostId(_)));
            let hidden = i2.params.iter().any(|p| matches!(p, Param::Encrypted(_)));
            assert_eq!((clear, hidden), (!encrypt_host_id, encrypt_host_id), "{cipher}");
            // Parameters in ascending type order (§5.2.1).
            let types: Vec<u16> = i2.params.iter().map(|p| p.param_type().0).collect();
            assert!(types.windows(2).all(|w| w[0] <= w[1]), "{types:?}");
        }
    }
    assert!(!Config::default().encrypt_host_id, "the clear form is what we send");
}

/// An I2 with a clear HOST_ID and an ENCRYPTED one naming another identity is refused.
#[test]
fn i2_with_two_different_host_ids_is_refused() {
    use wire::hip::{Encrypted, Message, Param};
    let hi = LocalHost::generate(EcCurve::P256).unwrap();
    let other = LocalHost::generate(EcCurve::P256).unwrap();
    let hr = LocalHost::generate(EcCurve::P256).unwrap();
    let config = Config { ciphers: vec![wire::hip::CipherId::NULL_ENCRYPT], ..Config::default() };
    let resp = Responder::new(&hr, config.clone(), p()).unwrap();
    let s = I1Sent::start(&hi, hr.hit(), config, A, B).unwrap();
    let r1 = resp.on_i1(&hr.hit(), s.i1(), A, B).unwrap();
    let (s, _) = s.on_r1(&hi, p(), &r1, B, A).unwrap();
    let mut m = Message::parse(s.i2()).unwrap();
    // NULL-ENCRYPT: ENCRYPTED's data is the parameter itself.
    let inner = wire::hip::emit_params(&[Param::HostId(host_id(&other))]).unwrap();
    let at = m.params.iter().position(|p| matches!(p, Param::HostId(_))).unwrap();
    m.params.insert(at, Param::Encrypted(Encrypted { iv_and_data: inner }));
    let i2 = seal(&m, A, B).unwrap();
    let e = resp.on_i2(&hr, &i2, A, B).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("HOST_ID"), "{e}");
}

/// Every packet of a run parses back and carries a good checksum for its direction.
#[test]
fn packets_are_well_formed() {
    let run = exchange(EcCurve::P256, EcCurve::P256, Config::default());
    for (k, pkt) in run.packets.iter().enumerate() {
        let (s, d) = if k % 2 == 0 { (A, B) } else { (B, A) };
        assert!(wire::hip::verify_checksum(s, d, pkt), "packet {k}");
        Message::parse(pkt).unwrap();
    }
}

#[test]
fn broken_r1_and_r2_give_the_state_back() {
    let hi = LocalHost::generate(EcCurve::P256).unwrap();
    let hr = LocalHost::generate(EcCurve::P256).unwrap();
    let resp = Responder::new(&hr, Config::default(), p()).unwrap();
    let s = I1Sent::start(&hi, hr.hit(), Config::default(), A, B).unwrap();
    let r1 = resp.on_i1(&hr.hit(), s.i1(), A, B).unwrap();
    // A flipped bit in the signed part (checksum fixed up): the signature fails.
    let mut bad = r1.clone();
    let n = bad.len();
    bad[n - 120] ^= 1;
    wire::hip::fill_checksum(B, A, &mut bad).unwrap();
    let rej = s.on_r1(&hi, p(), &bad, B, A).unwrap_err();
    assert!(rej.error.to_string().contains("peer"), "{}", rej.error);
    // Bad checksum.
    let mut bad = r1.clone();
    bad[60] ^= 1;
    let rej = (*rej.state).on_r1(&hi, p(), &bad, B, A).unwrap_err();
    assert!(rej.error.to_string().contains("checksum"));
    let (s, _) = (*rej.state).on_r1(&hi, p(), &r1, B, A).unwrap();
    let (r2, _) = resp.on_i2(&hr, s.i2(), A, B).unwrap();
    let mut bad = r2.clone();
    let n = bad.len();
    bad[n - 10] ^= 1;
    wire::hip::fill_checksum(B, A, &mut bad).unwrap();
    let rej = s.on_r2(&bad, B, A).unwrap_err();
    assert!(rej.error.to_string().contains("HIP_SIGNATURE"), "{}", rej.error);
    (*rej.state).on_r2(&r2, B, A).unwrap();
}

/// An I2 with a wrong puzzle solution is refused on the SOLUTION (before Diffie-Hellman); one
/// from a generation two rotations old is refused on R1_COUNTER; the previous generation's
/// still works.
#[test]
fn responder_checks_the_puzzle_first_and_the_generation() {
    let hi = LocalHost::generate(EcCurve::P256).unwrap();
    let hr = LocalHost::generate(EcCurve::P256).unwrap();
    let mut resp = Responder::new(&hr, Config::default(), p()).unwrap();
    let s = I1Sent::start(&hi, hr.hit(), Config::default(), A, B).unwrap();
    let r1 = resp.on_i1(&hr.hit(), s.i1(), A, B).unwrap();
    let (s, _) = s.on_r1(&hi, p(), &r1, B, A).unwrap();
    // Flip bits of #J until it no longer solves the puzzle (each flip solves it by chance
    // with probability 2^-10, and is then refused later, on HIP_MAC): the refusal names
    // SOLUTION.
    let mut refused = None;
    for bit in 0..64 {
        let mut m = Message::parse(s.i2()).unwrap();
        for prm in &mut m.params {
            if let Param::Solution(sol) = prm {
                sol.j[bit / 8] ^= 1 << (bit % 8);
            }
        }
        match resp.on_i2(&hr, &seal(&m, A, B).unwrap(), A, B) {
            Err(e) if e.to_string().contains("SOLUTION") => {
                refused = Some(e);
                break;
            }
            Err(e) => assert!(e.to_string().contains("HIP_MAC"), "{e}"),
            Ok(_) => panic!("an I2 with a changed #J was taken"),
        }
    }
    let e = refused.expect("some flipped #J fails");
    assert!(e.to_string().contains("SOLUTION: wrong puzzle solution"), "{e}");
    resp.rotate(&hr).unwrap();
    resp.on_i2(&hr, s.i2(), A, B).unwrap();
    resp.rotate(&hr).unwrap();
    let e = resp.on_i2(&hr, s.i2(), A, B).unwrap_err();
    assert!(e.to_string().contains("R1_COUNTER"), "{e}");
}

#[test]
fn i1_refusals() {
    let hr = LocalHost::generate(EcCurve::P256).unwrap();
    let resp = Responder::new(&hr, Config::default(), p()).unwrap();
    let other = HostIdentityTag::from_host_id(HitSuite::EcdsaSha384, b"x");
    let i1 = Message::new(wire::hip::Header::new(PacketType::I1, other.0, other.0))
        .with(wire::hip::DhGroupList { groups: vec![DhGroupId::NIST_P256] });
    let e = resp.on_i1(&hr.hit(), &seal(&i1, A, B).unwrap(), A, B).unwrap_err();
    assert!(e.to_string().contains("not ours"), "{e}");
    let i1 = Message::new(wire::hip::Header::new(PacketType::I1, other.0, hr.hit().0))
        .with(wire::hip::DhGroupList { groups: vec![DhGroupId::MODP_3072] });
    let e = resp.on_i1(&hr.hit(), &seal(&i1, A, B).unwrap(), A, B).unwrap_err();
    assert!(e.to_string().contains("no group in common"), "{e}");
    let i1 = Message::new(wire::hip::Header::new(PacketType::I1, other.0, [0; 16]))
        .with(wire::hip::DhGroupList { groups: vec![DhGroupId::NIST_P256] })
        .with(Param::raw(wire::hip::ParamType(1001), vec![1, 2]));
    let e = resp.on_i1(&hr.hit(), &seal(&i1, A, B).unwrap(), A, B).unwrap_err();
    assert!(e.to_string().contains("critical"), "{e}");
    // Opportunistic (no Responder HIT) is answered.
    let i1 = Message::new(wire::hip::Header::new(PacketType::I1, other.0, [0; 16]))
        .with(wire::hip::DhGroupList { groups: vec![DhGroupId::NIST_P384, DhGroupId::NIST_P256] });
    let r1 = resp.on_i1(&hr.hit(), &seal(&i1, A, B).unwrap(), A, B).unwrap();
    let m = Message::parse(&r1).unwrap();
    assert_eq!(get!(m, DiffieHellman).unwrap().values[0].group, DhGroupId::NIST_P384);
    assert_eq!(m.header.receiver_hit, other.0);
}

/// CLOSE and CLOSE_ACK after a base exchange: the peer accepts our CLOSE and its ACK echoes
/// our nonce; a CLOSE with a broken MAC, or an ACK with another nonce, is refused.
#[test]
fn close_and_close_ack() {
    let hi = LocalHost::generate(EcCurve::P256).unwrap();
    let hr = LocalHost::generate(EcCurve::P256).unwrap();
    let resp = Responder::new(&hr, Config::default(), p()).unwrap();
    let s = I1Sent::start(&hi, hr.hit(), Config::default(), A, B).unwrap();
    let r1 = resp.on_i1(&hr.hit(), s.i1(), A, B).unwrap();
    let (s, _) = s.on_r1(&hi, p(), &r1, B, A).unwrap();
    let (r2, er) = resp.on_i2(&hr, s.i2(), A, B).unwrap();
    let ei = s.on_r2(&r2, B, A).unwrap();
    let c = crate::close::close(&hi, &ei, b"nonce-1", A, B).unwrap();
    let mut bad = c.clone();
    let n = bad.len();
    bad[n - 80] ^= 1;
    wire::hip::fill_checksum(A, B, &mut bad).unwrap();
    assert!(crate::close::on_close(&hr, &er, &bad, A, B).is_err());
    let ack = crate::close::on_close(&hr, &er, &c, A, B).unwrap();
    crate::close::on_close_ack(&ei, b"nonce-1", &ack, B, A).unwrap();
    let e = crate::close::on_close_ack(&ei, b"nonce-2", &ack, B, A).unwrap_err();
    assert!(e.to_string().contains("another nonce"), "{e}");
    // The Initiator's own CLOSE is no CLOSE_ACK, and not for the Responder's HIT either way.
    assert!(crate::close::on_close_ack(&ei, b"nonce-1", &c, A, B).is_err());
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
        /// Any corruption of R1, I2 or R2 is refused or (rarely, outside what is covered)
        /// accepted, never a panic; the Initiator's state comes back on refusal.
        #[test]
        fn corrupted_packets_never_panic(which in 0usize..3, at in 0usize..4000, bit in 0u8..8) {
            let hi = LocalHost::generate(EcCurve::P256).unwrap();
            let hr = LocalHost::generate(EcCurve::P256).unwrap();
            let resp = Responder::new(&hr, Config::default(), p()).unwrap();
            let s = I1Sent::start(&hi, hr.hit(), Config::default(), A, B).unwrap();
            let mut r1 = resp.on_i1(&hr.hit(), s.i1(), A, B).unwrap();
            if which == 0 {
                let n = r1.len();
                r1[at % n] ^= 1 << bit;
                let _ = s.on_r1(&hi, p(), &r1, B, A);
                return Ok(());
            }
            let (s, _) = s.on_r1(&hi, p(), &r1, B, A).unwrap();
            let mut i2 = s.i2().to_vec();
            if which == 1 {
                let n = i2.len();
                i2[at % n] ^= 1 << bit;
                let _ = resp.on_i2(&hr, &i2, A, B);
                return Ok(());
            }
            let (mut r2, _) = resp.on_i2(&hr, &i2, A, B).unwrap();
            let n = r2.len();
            r2[at % n] ^= 1 << bit;
            let _ = s.on_r2(&r2, B, A);
        }
    }
}

/// An RSA host and an ECDSA host complete the base exchange in both roles, and two RSA hosts
/// too. Each signs with its own HI algorithm (RFC 7401 §5.2.14: HIP_SIGNATURE's "SIG alg"
/// is the signer's HI algorithm, §5.2.9: RSA = 5, ECDSA = 7; paraphrased, text not reachable), and the
/// exchange runs under the Responder's HIT suite: the puzzle's #I is RHASH_len long
/// (§5.2.4), the HIP keys and HIP_MAC are the suite's HMAC (§5.2.10: RSA,DSA/SHA-256 →
/// HMAC-SHA-256, ECDSA/SHA-384 → HMAC-SHA-384).
#[test]
fn rsa_and_ecdsa_hosts_complete_in_both_roles() {
    use crate::identity::{HI_ECDSA, HI_RSA};
    use crate::suite::HitSuite;
    use wire::hip::{HipMac, HipSignature, Message, Param, Puzzle};
    let rsa = LocalHost::generate_rsa(2048).unwrap();
    let rsa2 = LocalHost::generate_rsa(2048).unwrap();
    let ec = LocalHost::generate(EcCurve::P256).unwrap();
    for (hi, hr, want) in [
        (&rsa, &ec, HitSuite::EcdsaSha384),
        (&ec, &rsa, HitSuite::RsaDsaSha256),
        (&rsa, &rsa2, HitSuite::RsaDsaSha256),
    ] {
        let run = exchange_hosts(hi, hr, Config::default());
        mirrored(&run);
        assert_eq!((run.i.suite, run.r.suite), (want, want));
        assert_eq!(run.i.hip.integ_out.len(), want.rhash_len());
        assert_eq!(run.i.peer.hit(), hr.hit());
        let r1 = Message::parse(&run.packets[1]).unwrap();
        let i =
            r1.params.iter().find_map(|p| if let Param::Puzzle(z) = p { Some(z) } else { None });
        assert_eq!(i.map(|z: &Puzzle| z.i.len()), Some(want.rhash_len()));
        let i2 = Message::parse(&run.packets[2]).unwrap();
        let sig = i2.params.iter().find_map(|p| match p {
            Param::HipSignature(HipSignature { algorithm, signature }) => {
                Some((algorithm.0, signature.len()))
            }
            _ => None,
        });
        let mac = i2.params.iter().find_map(|p| match p {
            Param::HipMac(HipMac { mac }) => Some(mac.len()),
            _ => None,
        });
        assert_eq!(mac, Some(want.rhash_len()));
        let hi_alg = hi.identity().algorithm();
        assert_eq!(sig.map(|s| s.0), Some(hi_alg));
        if hi_alg == HI_RSA {
            assert_eq!(sig.map(|s| s.1), Some(256), "2048-bit RSA signs 256 octets");
        } else {
            assert_eq!(hi_alg, HI_ECDSA);
        }
    }
}

/// A Responder whose HOST_ID carries a Domain Identifier (cutehip sends an NAI there): its
/// HIP_MAC_2 covers R2 with that HOST_ID parameter, DI included (§5.2.13's field table, as
/// another HIPv2 implementation's source quotes it: "including an additional sender's HOST_ID
/// parameter during the HMAC calculation"), so the Initiator must put in R1's HOST_ID as it
/// came, not one rebuilt from the key.
#[test]
fn r2_mac_2_covers_the_responders_host_id_with_its_domain_identifier() {
    use wire::hip::{DiType, HipMac2, HipSignature, HipSignature2, Message, Param, ParamType};
    let hi = LocalHost::generate(EcCurve::P256).unwrap();
    let hr = LocalHost::generate(EcCurve::P384).unwrap();
    let resp = Responder::new(&hr, Config::default(), p()).unwrap();
    let s = I1Sent::start(&hi, hr.hit(), Config::default(), A, B).unwrap();
    let r1 = resp.on_i1(&hr.hit(), s.i1(), A, B).unwrap();
    let mut with_di = host_id(&hr);
    with_di.di_type = DiType::NAI;
    with_di.domain_identifier = b"responder@example.org".to_vec();
    // R1 with that HOST_ID, signed again as a Responder sending it would.
    let mut m = Message::parse(&r1).unwrap();
    for p in &mut m.params {
        if let Param::HostId(h) = p {
            *h = with_di.clone();
        }
    }
    let mut covered = m.to_vec_before(ParamType::HIP_SIGNATURE_2).unwrap();
    wire::hip::zero_for_signature_2(&mut covered).unwrap();
    let sig2 = hr.sign(&covered).unwrap();
    for p in &mut m.params {
        if let Param::HipSignature2(HipSignature2 { signature, .. }) = p {
            *signature = sig2.clone();
        }
    }
    let r1 = seal(&m, B, A).unwrap();
    let (s, _) = s.on_r1(&hi, p(), &r1, B, A).unwrap();
    let (r2, r) = resp.on_i2(&hr, s.i2(), A, B).unwrap();
    // R2 as that Responder sends it: HIP_MAC_2 over R2 with its HOST_ID (DI included) put in.
    let mut m = Message::parse(&r2).unwrap();
    let mut with_hi = m.clone();
    let at = with_hi.params.iter().position(|p| p.param_type() > ParamType::HOST_ID).unwrap();
    with_hi.params.insert(at, Param::HostId(with_di));
    let mac2 =
        hmac(r.suite, &r.hip.integ_out, &with_hi.to_vec_before(ParamType::HIP_MAC_2).unwrap())
            .unwrap();
    for p in &mut m.params {
        if let Param::HipMac2(HipMac2 { mac }) = p {
            *mac = mac2.clone();
        }
    }
    let sig = hr.sign(&m.to_vec_before(ParamType::HIP_SIGNATURE).unwrap()).unwrap();
    for p in &mut m.params {
        if let Param::HipSignature(HipSignature { signature, .. }) = p {
            *signature = sig.clone();
        }
    }
    let r2 = seal(&m, B, A).unwrap();
    let i = s.on_r2(&r2, B, A).map_err(|rej| rej.error.to_string()).unwrap();
    assert_eq!(i.peer.hit(), hr.hit());
    assert_eq!(*i.esp.enc_out, *r.esp.enc_in);
}
