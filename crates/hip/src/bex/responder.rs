//! The Responder (RFC 7401 §4.1.1, §6.6–§6.9): stateless until a valid I2.
//!
//! R1s are built and signed once per *generation* (§4.1.4: R1_COUNTER), one per Diffie-Hellman
//! group we offer, with the Receiver's HIT and the puzzle's #I and Opaque zero — exactly what
//! HIP_SIGNATURE_2 leaves out (§5.2.15). An I1 costs a copy, a keyed hash for #I and a
//! checksum; no state is kept. #I is HMAC(generation secret, HIT-I | HIT-R), so the I2's
//! SOLUTION proves which R1 it answers without our remembering it, and the puzzle is checked
//! (one hash) before any Diffie-Hellman or signature work (§6.9 step 5 onwards).

use super::{
    Config, ESP_KEY_SETS, Established, check_hmac, dh_group, draw_hip_keys, get, hip_keys_len,
    hmac, hmac_of, host_id, missing, open, peer_identity, random, seal,
};
use crate::error::Error;
use crate::esp;
use crate::hit::HostIdentityTag;
use crate::identity::LocalHost;
use crate::keymat::Keymat;
use crate::puzzle;
use crate::suite::HitSuite;
use crypto::{KeyExchange, Prf, PrfAlg, Provider};
use std::net::IpAddr;
use wire::hip::{
    DhGroupId, DhGroupList, DiffieHellman, EspInfo, EspTransform, Header, HiAlgorithm, HipCipher,
    HipMac2, HipSignature, HipSignature2, HitSuiteId, HitSuiteList, Message, Packet, PacketType,
    Param, ParamType, Puzzle, R1Counter, TransportFormatList, fill_checksum, zero_for_signature_2,
};
use zeroize::Zeroizing;

/// One pre-signed R1.
struct R1Template {
    group: DhGroupId,
    bytes: Vec<u8>,
    /// Offset of the PUZZLE's Opaque field.
    opaque_at: usize,
}

/// One R1 generation: its secret for #I, its Diffie-Hellman keys, its signed R1s.
struct Generation {
    counter: u64,
    secret: Zeroizing<Vec<u8>>,
    dh: Vec<(DhGroupId, KeyExchange)>,
    r1s: Vec<R1Template>,
}

/// The Responder side of a host.
pub struct Responder {
    config: Config,
    provider: &'static dyn Provider,
    current: Generation,
    previous: Option<Generation>,
    /// Our HIT's suite, the exchange's (see [`super::exchange_suite`]).
    suite: HitSuite,
}

impl std::fmt::Debug for Responder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Responder")
            .field("generation", &self.current.counter)
            .field("k", &self.config.puzzle_k)
            .finish_non_exhaustive()
    }
}

impl Responder {
    /// A Responder for `host`, generation 1.
    pub fn new(
        host: &LocalHost,
        config: Config,
        provider: &'static dyn Provider,
    ) -> Result<Responder, Error> {
        if config.dh_groups.iter().all(|&g| dh_group(g).is_none()) {
            return Err(Error::Config("no Diffie-Hellman group we implement (7, 8)".into()));
        }
        let suite = super::exchange_suite(&host.hit())?;
        let current = generation(host, &config, provider, 1)?;
        Ok(Responder { config, provider, current, previous: None, suite })
    }

    /// Starts a new generation (new secret, new Diffie-Hellman keys, new R1s); the previous
    /// one's I2s are still taken, older ones are not (§4.1.4). Call it every few minutes.
    pub fn rotate(&mut self, host: &LocalHost) -> Result<(), Error> {
        let next = generation(host, &self.config, self.provider, self.current.counter + 1)?;
        self.previous = Some(std::mem::replace(&mut self.current, next));
        Ok(())
    }

    /// The current R1 generation.
    pub fn generation(&self) -> u64 {
        self.current.counter
    }

    /// The puzzle difficulty R1s carry.
    pub fn puzzle_k(&self) -> u8 {
        self.config.puzzle_k
    }

    /// Answers an I1 that arrived `src` → `dst` with an R1 (§6.7), keeping no state.
    pub fn on_i1(
        &self,
        me: &HostIdentityTag,
        i1: &[u8],
        src: IpAddr,
        dst: IpAddr,
    ) -> Result<Vec<u8>, Error> {
        let m = open(i1, src, dst, PacketType::I1, me, true)?;
        let hit_i = HostIdentityTag(m.header.sender_hit);
        let offered = get!(m, DhGroupList).ok_or_else(|| missing("DH_GROUP_LIST"))?;
        // §5.2.6: the first group of the Initiator's list that we have.
        let t = offered
            .groups
            .iter()
            .find_map(|g| self.current.r1s.iter().find(|t| t.group == *g))
            .ok_or_else(|| {
                Error::Peer("DH_GROUP_LIST: no group in common (NO_DH_PROPOSAL_CHOSEN)".into())
            })?;
        let mut r1 = t.bytes.clone();
        if let Some(r) = r1.get_mut(24..40) {
            r.copy_from_slice(&hit_i.0);
        }
        let i = puzzle_i(&self.current, self.suite, &hit_i, me);
        if let Some(at) = r1.get_mut(t.opaque_at + 2..t.opaque_at + 2 + i.len()) {
            at.copy_from_slice(&i);
        }
        fill_checksum(dst, src, &mut r1).map_err(|e| Error::Config(e.to_string()))?;
        Ok(r1)
    }

    /// Processes an I2 (§6.9) and, when it holds, returns the R2 to send and the association.
    /// Cheap checks come first: the generation, the puzzle solution (one hash); only then
    /// Diffie-Hellman, KEYMAT, the HIP_MAC and the signature.
    pub fn on_i2(
        &self,
        host: &LocalHost,
        i2: &[u8],
        src: IpAddr,
        dst: IpAddr,
    ) -> Result<(Vec<u8>, Established), Error> {
        let me = host.hit();
        let m = open(i2, src, dst, PacketType::I2, &me, false)?;
        let hit_i = HostIdentityTag(m.header.sender_hit);
        let counter = get!(m, R1Counter).ok_or_else(|| missing("R1_COUNTER"))?.counter;
        let g = [Some(&self.current), self.previous.as_ref()]
            .into_iter()
            .flatten()
            .find(|g| g.counter == counter)
            .ok_or_else(|| {
                Error::Peer(format!("R1_COUNTER {counter}: not a current R1 generation"))
            })?;
        let sol = get!(m, Solution).ok_or_else(|| missing("SOLUTION"))?;
        if sol.k != self.config.puzzle_k {
            return Err(Error::Peer(format!(
                "SOLUTION: K = {} (we asked {})",
                sol.k, self.config.puzzle_k
            )));
        }
        let suite = self.suite;
        if !crypto::provider::constant_time_eq(&sol.i, &puzzle_i(g, suite, &hit_i, &me)) {
            return Err(Error::Peer("SOLUTION: #I is not one we sent".into()));
        }
        puzzle::Puzzle { k: sol.k, i: sol.i.clone() }.verify(suite, &hit_i, &me, &sol.j)?;

        // The puzzle holds: now the expensive part.
        let dh = get!(m, DiffieHellman).ok_or_else(|| missing("DIFFIE_HELLMAN"))?;
        let (value, kx) = dh
            .values
            .iter()
            .find_map(|v| g.dh.iter().find(|(grp, _)| *grp == v.group).map(|(_, k)| (v, k)))
            .ok_or_else(|| {
                Error::Peer("DIFFIE_HELLMAN: not a group of our R1 (INVALID_DH_CHOSEN)".into())
            })?;
        let kij = kx
            .agree_reused(&value.public_value)
            .map_err(|_| Error::Peer("DIFFIE_HELLMAN: bad public value".into()))?;
        let cipher = *get!(m, HipCipher)
            .and_then(|c| c.ciphers.first())
            .ok_or_else(|| missing("HIP_CIPHER"))?;
        if !self.config.ciphers.contains(&cipher) {
            return Err(Error::Peer(format!("HIP_CIPHER {cipher} was not offered")));
        }
        let suite_id = *get!(m, EspTransform)
            .and_then(|t| t.suites.first())
            .ok_or_else(|| missing("ESP_TRANSFORM"))?;
        let esp_suite = esp::engine_suite(suite_id)
            .filter(|_| self.config.esp_suites.contains(&suite_id))
            .ok_or_else(|| Error::Peer(format!("ESP_TRANSFORM {suite_id} was not offered")))?;
        let hip_len = hip_keys_len(cipher, suite)?;
        let km_len = hip_len + ESP_KEY_SETS * esp::keymat_len(&esp_suite);
        let mut km =
            Keymat::derive(hmac_of(suite)?, kij.as_bytes(), &hit_i, &me, &sol.i, &sol.j, km_len)?;
        let hip = draw_hip_keys(&mut km, cipher, suite, &me, &hit_i)?;

        // The Initiator's identity (§6.9): HOST_ID among the I2's parameters, as §5.3.3 lays
        // the I2 out, or inside ENCRYPTED under the Initiator's HIP key. Both are accepted; a
        // clear HOST_ID wins, and an ENCRYPTED beside it must then decrypt to the same one.
        let hidden = match get!(m, Encrypted) {
            Some(enc) => {
                let plain =
                    crate::cipher::decrypt(self.provider, cipher, &hip.enc_in, &enc.iv_and_data)?;
                let inner = wire::hip::parse_params(&plain)
                    .map_err(|e| Error::Peer(format!("ENCRYPTED: {e}")))?;
                inner
                    .into_iter()
                    .find_map(|p| if let Param::HostId(h) = p { Some(h) } else { None })
            }
            None => None,
        };
        let hi = match (get!(m, HostId), &hidden) {
            (Some(clear), Some(inner)) if clear != inner => {
                return Err(Error::Peer("HOST_ID: clear and ENCRYPTED ones differ".into()));
            }
            (Some(clear), _) => clear,
            (None, Some(inner)) => inner,
            (None, None) => return Err(missing("HOST_ID (in the clear or in ENCRYPTED)")),
        };
        let peer = peer_identity(hi)?;
        if peer.hit() != hit_i {
            return Err(Error::Peer(format!("HOST_ID is not that of HIT {hit_i}")));
        }
        let packet = Packet::new_checked(i2).map_err(|e| Error::Peer(e.to_string()))?;
        let mac = get!(m, HipMac).ok_or_else(|| missing("HIP_MAC"))?;
        let covered =
            packet.to_vec_before(ParamType::HIP_MAC).map_err(|e| Error::Peer(e.to_string()))?;
        check_hmac(suite, &hip.integ_in, &covered, &mac.mac, "HIP_MAC")?;
        let sig = get!(m, HipSignature).ok_or_else(|| missing("HIP_SIGNATURE"))?;
        let covered = packet
            .to_vec_before(ParamType::HIP_SIGNATURE)
            .map_err(|e| Error::Peer(e.to_string()))?;
        peer.verify(&covered, &sig.signature)?;

        // ESP (RFC 7402 §6.4): the Initiator's SPI and KEYMAT index.
        let info = get!(m, EspInfo).ok_or_else(|| missing("ESP_INFO"))?;
        let index = usize::from(info.keymat_index);
        if index < hip_len {
            return Err(Error::Peer(format!(
                "ESP_INFO: KEYMAT index {index} overlaps the HIP keys"
            )));
        }
        let spi_in = crypto::random_spi(self.provider)?;
        let esp = esp::draw(&km, index, esp_suite, &me, &hit_i, spi_in, info.new_spi)?;
        let next = index + esp::keymat_len(&esp_suite);

        // R2 (§6.9 step 13): ESP_INFO, HIP_MAC_2 over R2 with our HOST_ID in it, signature.
        let mut r2 = Message::new(Header::new(PacketType::R2, me.0, hit_i.0)).with(EspInfo {
            keymat_index: info.keymat_index,
            old_spi: 0,
            new_spi: spi_in,
        });
        let with_hi = r2.clone().with(host_id(host));
        let mac2 = hmac(suite, &hip.integ_out, &to_vec_before(&with_hi, ParamType::HIP_MAC_2)?)?;
        r2 = r2.with(HipMac2 { mac: mac2 });
        let signed = host.sign(&to_vec_before(&r2, ParamType::HIP_SIGNATURE)?)?;
        let algorithm = HiAlgorithm(host.identity().algorithm());
        r2 = r2.with(HipSignature { algorithm, signature: signed });
        let bytes = seal(&r2, dst, src)?;
        let keymat = km;
        Ok((
            bytes,
            Established { local_hit: me, peer, esp, hip, keymat, next_keymat_index: next, suite },
        ))
    }
}

pub(crate) fn to_vec_before(m: &Message, ty: ParamType) -> Result<Vec<u8>, Error> {
    m.to_vec_before(ty).map_err(|e| Error::Config(e.to_string()))
}

/// #I for an Initiator: HMAC-SHA-384(generation secret, HIT-I | HIT-R), RHASH_len bytes.
fn puzzle_i(
    g: &Generation,
    suite: HitSuite,
    hit_i: &HostIdentityTag,
    hit_r: &HostIdentityTag,
) -> Zeroizing<Vec<u8>> {
    let mut v = Prf::new(PrfAlg::HmacSha384, &g.secret).compute(&[&hit_i.0, &hit_r.0]);
    v.truncate(suite.rhash_len());
    v
}

fn generation(
    host: &LocalHost,
    config: &Config,
    provider: &'static dyn Provider,
    counter: u64,
) -> Result<Generation, Error> {
    let secret = Zeroizing::new(random(provider, 48)?);
    let mut dh = Vec::new();
    let mut r1s = Vec::new();
    for &g in &config.dh_groups {
        let Some(group) = dh_group(g) else { continue };
        let kx = KeyExchange::generate(group)?;
        let r1 = Message::new(Header::new(PacketType::R1, host.hit().0, [0; 16]))
            .with(R1Counter { counter })
            .with(Puzzle {
                k: config.puzzle_k,
                lifetime: config.puzzle_lifetime,
                opaque: 0,
                i: vec![0; host.identity().suite().rhash_len()],
            })
            .with(DhGroupList { groups: config.dh_groups.clone() })
            .with(DiffieHellman::new(g, kx.public_key().to_vec()))
            .with(HipCipher { ciphers: config.ciphers.clone() })
            .with(host_id(host))
            // §5.2.10: the suites we take, in our order of preference.
            .with(HitSuiteList {
                suites: vec![HitSuiteId::ECDSA_SHA384, HitSuiteId::RSA_DSA_SHA256],
            })
            .with(TransportFormatList { formats: vec![ParamType::ESP_TRANSFORM] })
            .with(EspTransform { suites: config.esp_suites.clone() });
        let mut covered = to_vec_before(&r1, ParamType::HIP_SIGNATURE_2)?;
        zero_for_signature_2(&mut covered).map_err(|e| Error::Config(e.to_string()))?;
        let sig = host.sign(&covered)?;
        let algorithm = HiAlgorithm(host.identity().algorithm());
        let r1 = r1.with(HipSignature2 { algorithm, signature: sig });
        let bytes = r1.to_vec().map_err(|e| Error::Config(e.to_string()))?;
        let opaque_at = Packet::new_checked(&bytes[..])
            .ok()
            .and_then(|p| p.find(ParamType::PUZZLE).ok().flatten().map(|raw| raw.offset + 4 + 2))
            .ok_or_else(|| Error::Config("R1 template without PUZZLE".into()))?;
        r1s.push(R1Template { group: g, bytes, opaque_at });
        dh.push((g, kx));
    }
    Ok(Generation { counter, secret, dh, r1s })
}
