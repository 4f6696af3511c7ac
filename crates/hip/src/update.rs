//! UPDATE for host mobility (RFC 8046 §3.2.1, RFC 7401 §6.11–§6.12): when a host's address
//! changes it tells its peer, and the peer checks that the new address is really reachable
//! before sending data there (§5.4: a stolen locator must not become a flooding tool):
//!
//! ```text
//! mobile M (from the new address)           peer P
//!  UPDATE(ESP_INFO, LOCATOR_SET, SEQ)  ──►   authenticated; the new locator is unverified
//!                                      ◄──  UPDATE(ESP_INFO, SEQ, ACK, ECHO_REQUEST_SIGNED)
//!  UPDATE(ACK, ECHO_RESPONSE_SIGNED)   ──►   the echo came back: the locator is verified
//! ```
//!
//! Every UPDATE carries HIP_MAC and HIP_SIGNATURE (`signed.rs`). The SPIs stay (no
//! rekey): ESP_INFO's old and new SPI are equal. IPv4 locators travel IPv4-mapped (§4).

use crate::bex::{Established, get, open, seal};
use crate::error::Error;
use crate::identity::LocalHost;
use crate::signed::{protect, verify};
use std::net::{IpAddr, Ipv6Addr};
use wire::hip::{
    Ack, EchoRequestSigned, EchoResponseSigned, EspInfo, Header, Locator, LocatorEntry, LocatorSet,
    Message, PacketType, Param, Seq, TrafficType,
};

/// Lifetime we give our locators (seconds).
pub const LOCATOR_LIFETIME: u32 = 600;

fn mapped(a: IpAddr) -> Ipv6Addr {
    match a {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    }
}

fn unmapped(a: Ipv6Addr) -> IpAddr {
    a.to_ipv4_mapped().map_or(IpAddr::V6(a), IpAddr::V4)
}

fn esp_info(est: &Established) -> Result<EspInfo, Error> {
    let index =
        u16::try_from(est.next_keymat_index).map_err(|_| Error::Config("KEYMAT index".into()))?;
    Ok(EspInfo { keymat_index: index, old_spi: est.esp.spi_in, new_spi: est.esp.spi_in })
}

fn header(est: &Established) -> Header {
    Header::new(PacketType::UPDATE, est.local_hit.0, est.peer.hit().0)
}

/// What an authenticated UPDATE says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateIn {
    /// Its SEQ (an update to acknowledge), if any.
    pub seq: Option<u32>,
    /// The update IDs it acknowledges.
    pub acks: Vec<u32>,
    /// The locators it announces (IPv4-mapped ones as IPv4).
    pub locators: Vec<IpAddr>,
    /// An echo request to return signed.
    pub echo_request: Option<Vec<u8>>,
    /// An echo response (to our request).
    pub echo_response: Option<Vec<u8>>,
    /// Its ESP_INFO: a rekey when the old and new SPI differ (`crate::rekey`).
    pub esp_info: Option<EspInfo>,
}

/// M's first UPDATE: our new locator `new`, update ID `seq`, from `src` (the new address) to
/// `dst` (the peer's locator).
pub fn announce(
    host: &LocalHost,
    est: &Established,
    seq: u32,
    new: IpAddr,
    src: IpAddr,
    dst: IpAddr,
) -> Result<Vec<u8>, Error> {
    let loc = LocatorEntry {
        traffic_type: TrafficType::BOTH,
        preferred: true,
        lifetime: LOCATOR_LIFETIME,
        locator: Locator::EspSpiAddress { spi: est.esp.spi_in, address: mapped(new) },
    };
    let m = Message::new(header(est))
        .with(esp_info(est)?)
        .with(LocatorSet { locators: vec![loc] })
        .with(Seq { update_id: seq });
    seal(&protect(host, est, m)?, src, dst)
}

/// P's answer to an announcement: acknowledges `ack`, asks for `nonce` back (address
/// check), with its own update ID `seq`; sent to the new locator `dst`.
pub fn acknowledge_and_check(
    host: &LocalHost,
    est: &Established,
    ack: u32,
    seq: u32,
    nonce: &[u8],
    src: IpAddr,
    dst: IpAddr,
) -> Result<Vec<u8>, Error> {
    let m = Message::new(header(est))
        .with(esp_info(est)?)
        .with(Seq { update_id: seq })
        .with(Ack { update_ids: vec![ack] })
        .with(EchoRequestSigned { data: nonce.to_vec() });
    seal(&protect(host, est, m)?, src, dst)
}

/// M's last UPDATE: acknowledges `ack` and returns the echo.
pub fn echo_back(
    host: &LocalHost,
    est: &Established,
    ack: u32,
    echo: &[u8],
    src: IpAddr,
    dst: IpAddr,
) -> Result<Vec<u8>, Error> {
    let m = Message::new(header(est))
        .with(Ack { update_ids: vec![ack] })
        .with(EchoResponseSigned { data: echo.to_vec() });
    seal(&protect(host, est, m)?, src, dst)
}

/// Reads an UPDATE that arrived `src` → `dst`: refused unless its HIP_MAC and signature hold.
pub fn read(est: &Established, bytes: &[u8], src: IpAddr, dst: IpAddr) -> Result<UpdateIn, Error> {
    let m = open(bytes, src, dst, PacketType::UPDATE, &est.local_hit, false)?;
    if m.header.sender_hit != est.peer.hit().0 {
        return Err(Error::Peer("UPDATE from another HIT".into()));
    }
    verify(est, bytes, &m)?;
    let locators = m
        .params
        .iter()
        .filter_map(|p| if let Param::LocatorSet(s) = p { Some(s) } else { None })
        .flat_map(|s| s.locators.iter().filter_map(|l| l.locator.address().map(unmapped)))
        .collect();
    Ok(UpdateIn {
        seq: get!(m, Seq).map(|s| s.update_id),
        acks: get!(m, Ack).map(|a| a.update_ids.clone()).unwrap_or_default(),
        locators,
        echo_request: get!(m, EchoRequestSigned).map(|e| e.data.clone()),
        echo_response: get!(m, EchoResponseSigned).map(|e| e.data.clone()),
        esp_info: get!(m, EspInfo).cloned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bex::Config;
    use crate::bex::initiator::I1Sent;
    use crate::bex::responder::Responder;
    use crypto::EcCurve;

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));
    const A2: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 11));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 2));

    /// The three UPDATEs of a move from A to A2, each read by the other side; a forged one
    /// (MAC broken) is refused.
    #[test]
    fn a_move_is_announced_checked_and_confirmed() {
        let p = crypto::default_provider();
        let (hm, hp) = (
            LocalHost::generate(EcCurve::P256).unwrap(),
            LocalHost::generate(EcCurve::P256).unwrap(),
        );
        let resp = Responder::new(&hp, Config::default(), p).unwrap();
        let s = I1Sent::start(&hm, hp.hit(), Config::default(), A, B).unwrap();
        let r1 = resp.on_i1(&hp.hit(), s.i1(), A, B).unwrap();
        let (s, _) = s.on_r1(&hm, p, &r1, B, A).unwrap();
        let (r2, ep) = resp.on_i2(&hp, s.i2(), A, B).unwrap();
        let em = s.on_r2(&r2, B, A).unwrap();

        let u1 = announce(&hm, &em, 1, A2, A2, B).unwrap();
        let got = read(&ep, &u1, A2, B).unwrap();
        assert_eq!(got.locators, vec![A2]);
        assert_eq!(got.seq, Some(1));
        let mut forged = u1.clone();
        let n = forged.len();
        forged[n - 90] ^= 1;
        wire::hip::fill_checksum(A2, B, &mut forged).unwrap();
        assert!(read(&ep, &forged, A2, B).is_err());

        let u2 = acknowledge_and_check(&hp, &ep, 1, 7, b"are you there", B, A2).unwrap();
        let got = read(&em, &u2, B, A2).unwrap();
        assert_eq!(got.acks, vec![1]);
        assert_eq!(got.seq, Some(7));
        assert_eq!(got.echo_request.as_deref(), Some(&b"are you there"[..]));

        let u3 = echo_back(&hm, &em, 7, b"are you there", A2, B).unwrap();
        let got = read(&ep, &u3, A2, B).unwrap();
        assert_eq!(got.acks, vec![7]);
        assert_eq!(got.echo_response.as_deref(), Some(&b"are you there"[..]));
        // tshark-level shape: the first UPDATE has ESP_INFO, LOCATOR_SET, SEQ, MAC, signature.
        let m = Message::parse(&u1).unwrap();
        let types: Vec<u16> = m.params.iter().map(|p| p.param_type().0).collect();
        assert_eq!(types, [65, 193, 385, 61505, 61697]);
    }
}
