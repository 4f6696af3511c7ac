//! What every HIP packet after the base exchange carries (RFC 7401 §5.3.5–§5.3.8: UPDATE,
//! CLOSE, CLOSE_ACK): a HIP_MAC under the HIP integrity key of the sender's direction, then a
//! HIP_SIGNATURE by the sender's host identity; and their check on receipt.

use crate::bex::{Established, check_hmac, get, hmac, missing};
use crate::error::Error;
use crate::identity::LocalHost;
use wire::hip::{HiAlgorithm, HipMac, HipSignature, Message, Packet, ParamType};

pub(crate) fn protect(
    host: &LocalHost,
    est: &Established,
    mut m: Message,
) -> Result<Message, Error> {
    let mac = hmac(est.suite, &est.hip.integ_out, &before(&m, ParamType::HIP_MAC)?)?;
    m = m.with(HipMac { mac });
    let sig = host.sign(&before(&m, ParamType::HIP_SIGNATURE)?)?;
    let algorithm = HiAlgorithm(host.identity().algorithm());
    Ok(m.with(HipSignature { algorithm, signature: sig }))
}

pub(crate) fn before(m: &Message, ty: ParamType) -> Result<Vec<u8>, Error> {
    m.to_vec_before(ty).map_err(|e| Error::Config(e.to_string()))
}

/// Checks a received packet's HIP_MAC (with the peer's integrity key) and signature.
pub(crate) fn verify(est: &Established, bytes: &[u8], m: &Message) -> Result<(), Error> {
    let p = Packet::new_checked(bytes).map_err(|e| Error::Peer(e.to_string()))?;
    let mac = get!(m, HipMac).ok_or_else(|| missing("HIP_MAC"))?;
    let covered = p.to_vec_before(ParamType::HIP_MAC).map_err(|e| Error::Peer(e.to_string()))?;
    check_hmac(est.suite, &est.hip.integ_in, &covered, &mac.mac, "HIP_MAC")?;
    let sig = get!(m, HipSignature).ok_or_else(|| missing("HIP_SIGNATURE"))?;
    let covered =
        p.to_vec_before(ParamType::HIP_SIGNATURE).map_err(|e| Error::Peer(e.to_string()))?;
    est.peer.verify(&covered, &sig.signature)
}
