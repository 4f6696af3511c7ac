//! Rekeying the ESP SA pair by UPDATE, with new keys drawn from the association's KEYMAT and no
//! new Diffie-Hellman (RFC 7402 §6.8–§6.10, §7; RFC 7401 §6.11–§6.12 for UPDATE itself):
//!
//! ```text
//! rekeying host R                                      peer P
//!  UPDATE(ESP_INFO(idx, old in, new in), SEQ a)  ──►   installs its new inbound SA
//!                                                ◄──  UPDATE(ESP_INFO(idx', old in, new in),
//!                                                            SEQ b, ACK a)
//!  installs its new inbound SA, sends on the new pair
//!  UPDATE(ACK b)                                 ──►   sends on the new pair
//! ```
//!
//! Make before break: each host installs its new inbound SA before its UPDATE names it, and
//! moves its outbound traffic only once the peer's UPDATE showed the peer's new inbound SA is
//! there. The new keys are drawn at the larger of the two hosts' KEYMAT indices (each offers
//! where it would draw next; both then agree on the answer's index, which the rekeying host
//! checks is not behind its own), so a key is never drawn twice.
//!
//! Every UPDATE carries HIP_MAC and HIP_SIGNATURE (`signed.rs`). An ESP_INFO whose old and new
//! SPI differ asks for a rekey; equal ones are mobility's (`update.rs`).

use crate::bex::{Established, seal};
use crate::error::Error;
use crate::esp::{EspKeys, draw, keymat_len};
use crate::identity::LocalHost;
use crate::signed::protect;
use std::net::IpAddr;
use wire::hip::{Ack, EspInfo, Header, Message, PacketType, Seq};

fn header(est: &Established) -> Header {
    Header::new(PacketType::UPDATE, est.local_hit.0, est.peer.hit().0)
}

fn index16(index: usize) -> Result<u16, Error> {
    u16::try_from(index).map_err(|_| Error::Config(format!("KEYMAT index {index} past 65535")))
}

/// True if an ESP_INFO asks for new SAs (its old and new SPI differ, both set).
pub fn is_rekey(info: &EspInfo) -> bool {
    info.old_spi != 0 && info.new_spi != 0 && info.old_spi != info.new_spi
}

/// A fresh SPI to receive on, other than the one in use.
pub fn new_spi(est: &Established) -> Result<u32, Error> {
    loop {
        let spi = crypto::random_spi(crypto::default_provider())?;
        if spi != est.esp.spi_in {
            return Ok(spi);
        }
    }
}

/// Whether the KEYMAT holds another SA pair's keys at `index` (else a new base exchange, or an
/// UPDATE with a new Diffie-Hellman, which this host does not do, is needed).
pub fn keys_left(est: &Established, index: usize) -> bool {
    est.keymat.read(index, keymat_len(&est.esp.suite)).is_ok()
}

/// R's first UPDATE: we will receive on `new_spi_in`, keys from our next KEYMAT index.
pub fn offer(
    host: &LocalHost,
    est: &Established,
    seq: u32,
    new_spi_in: u32,
    src: IpAddr,
    dst: IpAddr,
) -> Result<Vec<u8>, Error> {
    if !keys_left(est, est.next_keymat_index) {
        return Err(Error::Config("KEYMAT has no keys left for a rekey".into()));
    }
    let info = EspInfo {
        keymat_index: index16(est.next_keymat_index)?,
        old_spi: est.esp.spi_in,
        new_spi: new_spi_in,
    };
    let m = Message::new(header(est)).with(info).with(Seq { update_id: seq });
    seal(&protect(host, est, m)?, src, dst)
}

/// The index both hosts draw at for an offer made at `offered`: the larger of it and ours.
pub fn agreed_index(est: &Established, offered: u16) -> usize {
    usize::from(offered).max(est.next_keymat_index)
}

/// The new pair's keys at `index`: we receive on `spi_in`, send to the peer's `spi_out`.
pub fn keys(est: &Established, index: usize, spi_in: u32, spi_out: u32) -> Result<EspKeys, Error> {
    draw(&est.keymat, index, est.esp.suite, &est.local_hit, &est.peer.hit(), spi_in, spi_out)
}

/// P's answer: acknowledges `ack`, our new inbound SPI and the agreed `index`, our update ID
/// `seq` (R acknowledges it once it sends on the new pair).
#[allow(clippy::too_many_arguments, reason = "the UPDATE's fields and its two addresses")]
pub fn answer(
    host: &LocalHost,
    est: &Established,
    ack: u32,
    seq: u32,
    index: usize,
    new_spi_in: u32,
    src: IpAddr,
    dst: IpAddr,
) -> Result<Vec<u8>, Error> {
    let info =
        EspInfo { keymat_index: index16(index)?, old_spi: est.esp.spi_in, new_spi: new_spi_in };
    let m = Message::new(header(est))
        .with(info)
        .with(Seq { update_id: seq })
        .with(Ack { update_ids: vec![ack] });
    seal(&protect(host, est, m)?, src, dst)
}

/// R's last UPDATE: acknowledges `ack` (P may now send on the new pair).
pub fn acknowledge(
    host: &LocalHost,
    est: &Established,
    ack: u32,
    src: IpAddr,
    dst: IpAddr,
) -> Result<Vec<u8>, Error> {
    let m = Message::new(header(est)).with(Ack { update_ids: vec![ack] });
    seal(&protect(host, est, m)?, src, dst)
}

/// The association now runs on `keys`, drawn at `index`: the next rekey draws after them.
pub fn adopt(est: &mut Established, keys: EspKeys, index: usize) {
    est.next_keymat_index = index + keymat_len(&keys.suite);
    est.esp = keys;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bex::Config;
    use crate::bex::initiator::I1Sent;
    use crate::bex::responder::Responder;
    use crate::update::read;
    use crypto::EcCurve;

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 2));

    /// Two rekeys in a row, each side reading the other's UPDATEs: both ends derive mirrored
    /// new keys that differ from the old ones and from the previous rekey's, the SPIs are the
    /// announced ones, and the KEYMAT runs out after the sets the base exchange derived.
    #[test]
    fn the_pair_is_rekeyed_from_keymat() {
        rekeyed_until_keymat_ends(
            &LocalHost::generate(EcCurve::P256).unwrap(),
            &LocalHost::generate(EcCurve::P256).unwrap(),
        );
    }

    /// The same between an RSA and an ECDSA host, each way round: the UPDATEs' HIP_MAC is the
    /// Responder's suite's HMAC (SHA-256 when the RSA host answered the BEX, SHA-384 when
    /// the ECDSA one did) and each host signs with its own key (RFC 7401 §5.3.5, §5.2.14).
    #[test]
    fn rsa_and_ecdsa_hosts_rekey_in_both_roles() {
        let rsa = LocalHost::generate_rsa(2048).unwrap();
        let ec = LocalHost::generate(EcCurve::P384).unwrap();
        rekeyed_until_keymat_ends(&rsa, &ec);
        rekeyed_until_keymat_ends(&ec, &rsa);
    }

    fn rekeyed_until_keymat_ends(hr: &LocalHost, hp: &LocalHost) {
        let p = crypto::default_provider();
        let resp = Responder::new(hp, Config::default(), p).unwrap();
        let s = I1Sent::start(hr, hp.hit(), Config::default(), A, B).unwrap();
        let r1 = resp.on_i1(&hp.hit(), s.i1(), A, B).unwrap();
        let (s, _) = s.on_r1(hr, p, &r1, B, A).unwrap();
        let (r2, mut ep) = resp.on_i2(hp, s.i2(), A, B).unwrap();
        let mut er = s.on_r2(&r2, B, A).unwrap();
        // The association keeps the suite of the base exchange's Responder (`hp`).
        assert_eq!((er.suite, ep.suite), (hp.identity().suite(), hp.identity().suite()));
        let mut previous = er.esp.enc_out.to_vec();
        let mut rounds = 0;
        while keys_left(&er, er.next_keymat_index) {
            rounds += 1;
            let (r_in, p_in) = (new_spi(&er).unwrap(), new_spi(&ep).unwrap());
            let u1 = offer(hr, &er, 10 + rounds, r_in, A, B).unwrap();
            let got = read(&ep, &u1, A, B).unwrap();
            let info = got.esp_info.unwrap();
            assert!(is_rekey(&info));
            assert_eq!((info.old_spi, info.new_spi), (er.esp.spi_in, r_in));
            let idx = agreed_index(&ep, info.keymat_index);
            let kp = keys(&ep, idx, p_in, info.new_spi).unwrap();
            let u2 = answer(hp, &ep, got.seq.unwrap(), 90 + rounds, idx, p_in, B, A).unwrap();
            let got2 = read(&er, &u2, B, A).unwrap();
            assert_eq!(got2.acks, vec![10 + rounds]);
            let info2 = got2.esp_info.unwrap();
            let idx2 = usize::from(info2.keymat_index);
            assert!(idx2 >= er.next_keymat_index);
            let kr = keys(&er, idx2, r_in, info2.new_spi).unwrap();
            let u3 = acknowledge(hr, &er, got2.seq.unwrap(), A, B).unwrap();
            assert_eq!(read(&ep, &u3, A, B).unwrap().acks, vec![90 + rounds]);
            assert_eq!(*kr.enc_out, *kp.enc_in);
            assert_eq!(*kr.auth_out, *kp.auth_in);
            assert_eq!(*kp.enc_out, *kr.enc_in);
            assert_eq!((kr.spi_in, kr.spi_out, kp.spi_in, kp.spi_out), (r_in, p_in, p_in, r_in));
            assert_ne!(kr.enc_out.to_vec(), previous);
            previous = kr.enc_out.to_vec();
            adopt(&mut er, kr, idx2);
            adopt(&mut ep, kp, idx);
            assert_eq!(er.next_keymat_index, ep.next_keymat_index);
        }
        // The base exchange derived 8 sets and used one.
        assert_eq!(rounds, 7);
        assert!(offer(hr, &er, 99, 12345, A, B).is_err());
        // Mobility's ESP_INFO (old = new) is not a rekey.
        assert!(!is_rekey(&EspInfo { keymat_index: 0, old_spi: 7, new_spi: 7 }));
    }
}
