//! NOTIFY (RFC 7401 §5.3.6, NOTIFICATION §5.2.19): telling a peer why its packet was refused.
//! Informational only (§6.13): a receiver never changes an association because of one. Ours
//! carry HOST_ID and HIP_SIGNATURE, so that a receiver with no association can check who sent
//! it; one it cannot check is still reported, marked unverified.

use crate::bex::{get, host_id, open, peer_identity, seal};
use crate::error::Error;
use crate::hit::HostIdentityTag;
use crate::identity::LocalHost;
use crate::signed::before;
use std::net::IpAddr;
use wire::hip::{
    Header, HiAlgorithm, HipSignature, Message, Notification, NotifyType, Packet, PacketType,
    ParamType,
};

/// A NOTIFY from us to `peer`: `kind`, with `data` (e.g. the refused packet's first octets).
pub fn notify(
    host: &LocalHost,
    peer: &HostIdentityTag,
    kind: NotifyType,
    data: &[u8],
    src: IpAddr,
    dst: IpAddr,
) -> Result<Vec<u8>, Error> {
    let m = Message::new(Header::new(PacketType::NOTIFY, host.hit().0, peer.0))
        // Parameters go in type order (§5.2.1): HOST_ID (705) before NOTIFICATION (832).
        .with(host_id(host))
        .with(Notification { notify_type: kind, data: data.to_vec() });
    let sig = host.sign(&before(&m, ParamType::HIP_SIGNATURE)?)?;
    let algorithm = HiAlgorithm(host.identity().algorithm());
    seal(&m.with(HipSignature { algorithm, signature: sig }), src, dst)
}

/// What a NOTIFY said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifyIn {
    /// Its sender.
    pub from: HostIdentityTag,
    /// The notifications, in order.
    pub kinds: Vec<NotifyType>,
    /// True if its HOST_ID hashes to the sender's HIT and its signature holds.
    pub verified: bool,
}

/// Reads a NOTIFY to `me` (checksum, type, receiver checked; the signature if a HOST_ID came).
pub fn read(
    bytes: &[u8],
    src: IpAddr,
    dst: IpAddr,
    me: &HostIdentityTag,
) -> Result<NotifyIn, Error> {
    let m = open(bytes, src, dst, PacketType::NOTIFY, me, true)?;
    let from = HostIdentityTag(m.header.sender_hit);
    let kinds = m
        .params
        .iter()
        .filter_map(|p| {
            if let wire::hip::Param::Notification(n) = p { Some(n.notify_type) } else { None }
        })
        .collect();
    let verified = match (get!(m, HostId), get!(m, HipSignature)) {
        (Some(h), Some(sig)) => peer_identity(h)
            .ok()
            .filter(|id| id.hit() == from)
            .and_then(|id| {
                let p = Packet::new_checked(bytes).ok()?;
                let covered = p.to_vec_before(ParamType::HIP_SIGNATURE).ok()?;
                id.verify(&covered, &sig.signature).ok()
            })
            .is_some(),
        _ => false,
    };
    Ok(NotifyIn { from, kinds, verified })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crypto::EcCurve;

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 2));

    /// A signed NOTIFY reads back verified; one whose bytes changed after signing (checksum
    /// refreshed) reads back unverified; one for another HIT or with a bad checksum is refused.
    #[test]
    fn a_notify_round_trips_and_forgeries_show() {
        let (ha, hb) = (
            LocalHost::generate(EcCurve::P256).unwrap(),
            LocalHost::generate(EcCurve::P256).unwrap(),
        );
        let n = notify(&hb, &ha.hit(), NotifyType::BLOCKED_BY_POLICY, b"I2", B, A).unwrap();
        let got = read(&n, B, A, &ha.hit()).unwrap();
        assert_eq!(got.from, hb.hit());
        assert_eq!(got.kinds, vec![NotifyType::BLOCKED_BY_POLICY]);
        assert!(got.verified);
        let mut forged = n.clone();
        // A bit of the signature (the last parameter: its padding is at most 7 octets).
        let at = forged.len() - 12;
        forged[at] ^= 1;
        wire::hip::fill_checksum(B, A, &mut forged).unwrap();
        let got = read(&forged, B, A, &ha.hit()).unwrap();
        assert!(!got.verified, "a changed NOTIFY must not verify");
        assert!(read(&n, B, A, &hb.hit()).is_err(), "not for us");
        let mut bad = n.clone();
        bad[4] ^= 1;
        assert!(read(&bad, B, A, &ha.hit()).is_err(), "bad checksum");
    }
}
