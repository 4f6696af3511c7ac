//! Ending an association (RFC 7401 §5.3.7, §5.3.8, §6.14, §6.15): CLOSE carries a signed echo
//! request, CLOSE_ACK echoes it back; both are protected by HIP_MAC (the HIP integrity key of
//! the sender's direction) and HIP_SIGNATURE. The receiver of a valid CLOSE answers and
//! drops the association; the closer drops it on a CLOSE_ACK that echoes its nonce.

use crate::bex::{Established, get, missing, open, seal};
use crate::error::Error;
use crate::identity::LocalHost;
use crate::signed::{protect, verify};
use std::net::IpAddr;
use wire::hip::{EchoRequestSigned, EchoResponseSigned, Header, Message, PacketType};

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
