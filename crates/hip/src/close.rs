//! Ending an association (RFC 7401 §5.3.7, §5.3.8, §6.14, §6.15): CLOSE carries a signed echo
//! request, CLOSE_ACK echoes it back; both are protected by HIP_MAC (the HIP integrity key of
//! the sender's direction) and HIP_SIGNATURE. The receiver of a valid CLOSE answers and
//! drops the association; the closer drops it on a CLOSE_ACK that echoes its nonce.

use crate::bex::{Established, check_hmac, get, hmac, missing, open, seal};
use crate::error::Error;
use crate::identity::LocalHost;
use crate::suite::HitSuite;
use std::net::IpAddr;
use wire::hip::{
    EchoRequestSigned, EchoResponseSigned, Header, HiAlgorithm, HipMac, HipSignature, Message,
    Packet, PacketType, ParamType,
};

const SUITE: HitSuite = HitSuite::EcdsaSha384;

fn protect(host: &LocalHost, est: &Established, mut m: Message) -> Result<Message, Error> {
    let mac = hmac(SUITE, &est.hip.integ_out, &before(&m, ParamType::HIP_MAC)?)?;
    m = m.with(HipMac { mac });
    let sig = host.sign(&before(&m, ParamType::HIP_SIGNATURE)?)?;
    Ok(m.with(HipSignature { algorithm: HiAlgorithm::ECDSA, signature: sig }))
}

fn before(m: &Message, ty: ParamType) -> Result<Vec<u8>, Error> {
    m.to_vec_before(ty).map_err(|e| Error::Config(e.to_string()))
}

/// Checks a received packet's HIP_MAC (with the peer's integrity key) and signature.
fn verify(est: &Established, bytes: &[u8], m: &Message) -> Result<(), Error> {
    let p = Packet::new_checked(bytes).map_err(|e| Error::Peer(e.to_string()))?;
    let mac = get!(m, HipMac).ok_or_else(|| missing("HIP_MAC"))?;
    let covered = p.to_vec_before(ParamType::HIP_MAC).map_err(|e| Error::Peer(e.to_string()))?;
    check_hmac(SUITE, &est.hip.integ_in, &covered, &mac.mac, "HIP_MAC")?;
    let sig = get!(m, HipSignature).ok_or_else(|| missing("HIP_SIGNATURE"))?;
    let covered =
        p.to_vec_before(ParamType::HIP_SIGNATURE).map_err(|e| Error::Peer(e.to_string()))?;
    est.peer.verify(&covered, &sig.signature)
}

/// A CLOSE for the association, from `src` to `dst`, with `nonce` (random bytes the
/// CLOSE_ACK must echo).
pub fn close(
    host: &LocalHost,
    est: &Established,
    nonce: &[u8],
    src: IpAddr,
    dst: IpAddr,
) -> Result<Vec<u8>, Error> {
    let m = Message::new(Header::new(PacketType::CLOSE, est.local_hit.0, est.peer.hit().0))
        .with(EchoRequestSigned { data: nonce.to_vec() });
    seal(&protect(host, est, m)?, src, dst)
}

/// A CLOSE that arrived `src` → `dst`: if it holds, the CLOSE_ACK to send (and the caller
/// drops the association).
pub fn on_close(
    host: &LocalHost,
    est: &Established,
    bytes: &[u8],
    src: IpAddr,
    dst: IpAddr,
) -> Result<Vec<u8>, Error> {
    let m = open(bytes, src, dst, PacketType::CLOSE, &est.local_hit, false)?;
    if m.header.sender_hit != est.peer.hit().0 {
        return Err(Error::Peer("CLOSE from another HIT".into()));
    }
    verify(est, bytes, &m)?;
    let echo = get!(m, EchoRequestSigned).ok_or_else(|| missing("ECHO_REQUEST_SIGNED"))?;
    let ack = Message::new(Header::new(PacketType::CLOSE_ACK, est.local_hit.0, est.peer.hit().0))
        .with(EchoResponseSigned { data: echo.data.clone() });
    seal(&protect(host, est, ack)?, dst, src)
}

/// A CLOSE_ACK for our CLOSE with `nonce`: Ok when it holds (the caller drops the association).
pub fn on_close_ack(
    est: &Established,
    nonce: &[u8],
    bytes: &[u8],
    src: IpAddr,
    dst: IpAddr,
) -> Result<(), Error> {
    let m = open(bytes, src, dst, PacketType::CLOSE_ACK, &est.local_hit, false)?;
    if m.header.sender_hit != est.peer.hit().0 {
        return Err(Error::Peer("CLOSE_ACK from another HIT".into()));
    }
    verify(est, bytes, &m)?;
    let echo = get!(m, EchoResponseSigned).ok_or_else(|| missing("ECHO_RESPONSE_SIGNED"))?;
    if crypto::provider::constant_time_eq(&echo.data, nonce) {
        Ok(())
    } else {
        Err(Error::Peer("CLOSE_ACK echoes another nonce".into()))
    }
}
