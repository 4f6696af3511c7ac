//! The base exchange (RFC 7401 §4.1, §6): I1, R1, I2, R2.
//!
//! ```text
//! Initiator                              Responder
//!   I1: DH_GROUP_LIST           ──►      (stateless: a pre-signed R1 from the generation's
//!                               ◄──  R1:  template, #I bound to the two HITs by a keyed hash)
//!   solve the puzzle, DH, KEYMAT,
//!   I2: SOLUTION, DH, ENCRYPTED{HOST_ID}, HIP_MAC, HIP_SIGNATURE
//!                               ──►      check the puzzle first (one hash), then DH,
//!                               ◄──  R2:  KEYMAT, HIP_MAC, signature; ESP_INFO, HIP_MAC_2
//! ```
//!
//! States are types ([`initiator::I1Sent`] → [`initiator::I2Sent`] → [`Established`]); a
//! transition consumes the state and one packet, and a packet that fails gives the state back
//! with the reason, so a forged or broken packet never moves an exchange (§6.4, §6.9).

pub mod initiator;
pub mod responder;

use crate::error::Error;
use crate::esp::EspKeys;
use crate::hit::HostIdentityTag;
use crate::identity::{HostIdentity, LocalHost};
use crate::keymat::Keymat;
use crate::suite::HitSuite;
use crypto::Provider;
use std::net::IpAddr;
use wire::hip::{
    CipherId, DhGroupId, DiType, EspSuite, HiAlgorithm, HostId, Message, Packet, PacketType, Param,
    fill_checksum,
};
use zeroize::Zeroizing;

/// What this host offers and asks, in its order of preference.
#[derive(Debug, Clone)]
pub struct Config {
    /// Diffie-Hellman groups (ECDH P-256 = 7, P-384 = 8).
    pub dh_groups: Vec<DhGroupId>,
    /// HIP_CIPHERs for ENCRYPTED.
    pub ciphers: Vec<CipherId>,
    /// ESP transforms (RFC 7402).
    pub esp_suites: Vec<EspSuite>,
    /// The Responder's puzzle difficulty K (§4.1.2).
    pub puzzle_k: u8,
    /// PUZZLE Lifetime exponent: the puzzle is valid 2^(value − 32) seconds (§5.2.4).
    pub puzzle_lifetime: u8,
    /// As Initiator, send our HOST_ID inside ENCRYPTED instead of in the clear. RFC 7401's I2
    /// (§5.3.3) lists HOST_ID among the I2's own parameters, where every HIPv2 host looks for
    /// it; ENCRYPTED (§5.2.18) is the form that hides the identity from onlookers. The
    /// Responder accepts either (§6.9), so this only matters to what we send. Off by default.
    pub encrypt_host_id: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            dh_groups: vec![DhGroupId::NIST_P256, DhGroupId::NIST_P384],
            ciphers: vec![CipherId::AES_128_CBC, CipherId::AES_256_CBC, CipherId::NULL_ENCRYPT],
            esp_suites: vec![EspSuite::AES_GCM_16, EspSuite::AES_128_CBC_HMAC_SHA256],
            puzzle_k: 10,
            puzzle_lifetime: 37,
            encrypt_host_id: false,
        }
    }
}

/// The crypto group of a HIP DH Group ID (§5.2.7), if we implement it. The public value is
/// x || y and the shared secret x, as for IKEv2's groups 19 and 20 (RFC 5903 §7, §9).
pub fn dh_group(id: DhGroupId) -> Option<crypto::DhGroup> {
    match id {
        DhGroupId::NIST_P256 => Some(crypto::DhGroup::Ecp256),
        DhGroupId::NIST_P384 => Some(crypto::DhGroup::Ecp384),
        _ => None,
    }
}

/// The HIP keys of an association (§6.5): encryption for ENCRYPTED, integrity for HIP_MAC.
pub struct HipKeys {
    /// The HIP_CIPHER chosen.
    pub cipher: CipherId,
    /// Encryption key for what we send.
    pub enc_out: Zeroizing<Vec<u8>>,
    /// Integrity key for what we send.
    pub integ_out: Zeroizing<Vec<u8>>,
    /// Encryption key for what we receive.
    pub enc_in: Zeroizing<Vec<u8>>,
    /// Integrity key for what we receive.
    pub integ_in: Zeroizing<Vec<u8>>,
}

impl std::fmt::Debug for HipKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HipKeys").field("cipher", &self.cipher).finish_non_exhaustive()
    }
}

/// Octets of KEYMAT the HIP keys take.
pub(crate) fn hip_keys_len(cipher: CipherId, suite: HitSuite) -> Result<usize, Error> {
    let e = crate::cipher::key_len(cipher)
        .ok_or_else(|| Error::Peer(format!("HIP_CIPHER {cipher} not offered")))?;
    Ok(2 * (e + suite.rhash_len()))
}

/// Draws the HIP keys (§6.5): HIP-gl encryption, HIP-gl integrity, HIP-lg encryption, HIP-lg
/// integrity; we send with the gl keys when our HIT is the greater.
pub(crate) fn draw_hip_keys(
    km: &mut Keymat,
    cipher: CipherId,
    suite: HitSuite,
    me: &HostIdentityTag,
    peer: &HostIdentityTag,
) -> Result<HipKeys, Error> {
    let e = crate::cipher::key_len(cipher)
        .ok_or_else(|| Error::Peer(format!("HIP_CIPHER {cipher} not offered")))?;
    let a = suite.rhash_len();
    let (enc_gl, integ_gl, enc_lg, integ_lg) = (km.draw(e)?, km.draw(a)?, km.draw(e)?, km.draw(a)?);
    Ok(if me.0 > peer.0 {
        HipKeys { cipher, enc_out: enc_gl, integ_out: integ_gl, enc_in: enc_lg, integ_in: integ_lg }
    } else {
        HipKeys { cipher, enc_out: enc_lg, integ_out: integ_lg, enc_in: enc_gl, integ_in: integ_gl }
    })
}

/// KEYMAT drawn in all: the HIP keys, then room for this many ESP key sets (the first at the
/// BEX, the rest for rekeys by UPDATE without a new Diffie-Hellman, RFC 7402 §6.9).
pub(crate) const ESP_KEY_SETS: usize = 8;

/// The suite's HMAC, also the KEYMAT's HKDF hash (§6.5).
pub(crate) fn hmac_of(suite: HitSuite) -> Result<crypto::PrfAlg, Error> {
    suite.hmac().ok_or_else(|| Error::Config(format!("no HMAC for {suite:?}")))
}

/// HIP_MAC / HIP_MAC_2 value: the suite's HMAC (§5.2.12).
pub(crate) fn hmac(suite: HitSuite, key: &[u8], data: &[u8]) -> Result<Vec<u8>, Error> {
    let alg = suite.hmac().ok_or_else(|| Error::Config(format!("no HMAC for {suite:?}")))?;
    Ok(crypto::Prf::new(alg, key).compute(&[data]).to_vec())
}

/// Checks a received HIP_MAC in constant time.
pub(crate) fn check_hmac(
    suite: HitSuite,
    key: &[u8],
    data: &[u8],
    mac: &[u8],
    what: &str,
) -> Result<(), Error> {
    if crypto::provider::constant_time_eq(&hmac(suite, key, data)?, mac) {
        Ok(())
    } else {
        Err(Error::Peer(format!("{what} does not verify")))
    }
}

/// An association the base exchange completed: what the node turns into BEET-mode SAs between
/// the two HITs, and what UPDATE and CLOSE need later.
#[derive(Debug)]
pub struct Established {
    /// Our HIT.
    pub local_hit: HostIdentityTag,
    /// The peer's host identity (its HIT included).
    pub peer: HostIdentity,
    /// The ESP SA pair.
    pub esp: EspKeys,
    /// HIP keys (HIP_MAC of UPDATE, CLOSE; ENCRYPTED).
    pub hip: HipKeys,
    /// The rest of the KEYMAT.
    pub keymat: Keymat,
    /// Where the next ESP keys would be drawn.
    pub next_keymat_index: usize,
    /// The HIT suite whose RHASH and HMAC the association uses: the Responder's (see
    /// [`exchange_suite`]).
    pub suite: HitSuite,
}

/// The HIT suite of an exchange: the Responder's, whose HIT the Initiator asked for. Its RHASH
/// is the puzzle's hash and the KEYMAT's HKDF hash, its HMAC that of HIP_MAC and HIP_MAC_2.
///
/// RFC 7401 §5.2.4's PUZZLE layout (its field table, as another HIPv2 implementation's source
/// quotes it): "Length 4 + RHASH_len / 8" and "Random #I random number of size RHASH_len
/// bits". That RHASH is the Responder's HIT suite's hash is paraphrased (the sentence itself
/// was not reachable); hiplib and cutehip likewise take RHASH and the HMAC from the Responder
/// HIT's OGA ID. A HIT whose suite we do not implement is refused, naming it.
pub fn exchange_suite(responder: &HostIdentityTag) -> Result<HitSuite, Error> {
    responder.suite().filter(|s| s.hmac().is_some()).ok_or_else(|| {
        Error::Peer(format!("HIT {responder}: its HIT suite (OGA ID) is not one we implement"))
    })
}

/// First parameter of a variant in a message.
macro_rules! get {
    ($msg:expr, $variant:ident) => {
        $msg.params.iter().find_map(|p| match p {
            wire::hip::Param::$variant(x) => Some(x),
            _ => None,
        })
    };
}
pub(crate) use get;

/// A received parameter that is missing.
pub(crate) fn missing(what: &str) -> Error {
    Error::Peer(format!("{what} missing"))
}

/// Refuses a packet with a critical parameter we do not know (§5.2.1).
pub(crate) fn check_critical(msg: &Message) -> Result<(), Error> {
    match msg.params.iter().find(|p| matches!(p, Param::Unknown { .. }) && p.is_critical()) {
        Some(p) => {
            Err(Error::Peer(format!("unsupported critical parameter type {}", p.param_type())))
        }
        None => Ok(()),
    }
}

/// Checks a received packet's framing, checksum, type and receiver, and parses it.
/// `me`: our HIT; `any_receiver`: an I1 may name no Responder (opportunistic mode, §4.1.8).
pub(crate) fn open(
    bytes: &[u8],
    src: IpAddr,
    dst: IpAddr,
    want: PacketType,
    me: &HostIdentityTag,
    any_receiver: bool,
) -> Result<Message, Error> {
    let p = Packet::new_checked(bytes).map_err(|e| Error::Peer(e.to_string()))?;
    if !p.verify_checksum(src, dst) {
        return Err(Error::Peer("bad checksum".into()));
    }
    if p.packet_type() != want {
        return Err(Error::Peer(format!("a {} where a {want} belongs", p.packet_type())));
    }
    let to = p.receiver_hit();
    if to != me.0 && !(any_receiver && to == [0; 16]) {
        return Err(Error::Peer(format!("for HIT {}, not ours", HostIdentityTag(to))));
    }
    let m = Message::parse(bytes).map_err(|e| Error::Peer(e.to_string()))?;
    check_critical(&m)?;
    Ok(m)
}

/// The packet with its checksum for `src` → `dst`.
pub(crate) fn seal(msg: &Message, src: IpAddr, dst: IpAddr) -> Result<Vec<u8>, Error> {
    let mut v = msg.to_vec().map_err(|e| Error::Config(e.to_string()))?;
    fill_checksum(src, dst, &mut v).map_err(|e| Error::Config(e.to_string()))?;
    Ok(v)
}

/// Our HOST_ID parameter.
pub(crate) fn host_id(host: &LocalHost) -> HostId {
    let id = host.identity();
    HostId {
        algorithm: HiAlgorithm(id.algorithm()),
        host_identity: id.encoded().to_vec(),
        di_type: DiType::NONE,
        domain_identifier: Vec::new(),
    }
}

/// A peer's HOST_ID as an identity.
pub(crate) fn peer_identity(h: &HostId) -> Result<HostIdentity, Error> {
    HostIdentity::parse(h.algorithm.0, &h.host_identity)
}

/// Random bytes.
pub(crate) fn random(p: &dyn Provider, n: usize) -> Result<Vec<u8>, Error> {
    let mut v = vec![0u8; n];
    p.fill_random(&mut v)?;
    Ok(v)
}

/// A packet that did not move the state: the state back, and why.
#[derive(Debug)]
pub struct Rejected<S> {
    /// The state, unchanged (boxed: states hold keys and packets).
    pub state: Box<S>,
    /// What was wrong.
    pub error: Error,
}

#[cfg(test)]
mod tests;
