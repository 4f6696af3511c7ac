//! The Initiator (RFC 7401 §4.1, §6.8, §6.10): I1-SENT → I2-SENT → ESTABLISHED, each state a
//! type. A packet that does not hold gives the state back ([`Rejected`]): an attacker's R1 or
//! R2 cannot end or divert the exchange, the real one still can.

use super::{
    Config, ESP_KEY_SETS, Established, HipKeys, Rejected, check_hmac, dh_group, draw_hip_keys, get,
    hip_keys_len, hmac, hmac_of, host_id, missing, open, peer_identity, random, seal,
};
use crate::error::Error;
use crate::esp;
use crate::hit::HostIdentityTag;
use crate::identity::{HostIdentity, LocalHost};
use crate::keymat::Keymat;
use crate::puzzle;
use crate::suite::HitSuite;
use crypto::{EspSuite as Suite, KeyExchange, Provider};
use std::net::IpAddr;
use wire::hip::{
    DhGroupId, DhGroupList, DiffieHellman, Encrypted, EspInfo, EspTransform, Header, HiAlgorithm,
    HipCipher, HipMac, HipSignature, Message, Packet, PacketType, Param, ParamType, R1Counter,
    Solution, TransportFormatList, emit_params, zero_for_signature_2,
};

/// I1 sent; waiting for R1.
#[derive(Debug)]
pub struct I1Sent {
    me: HostIdentityTag,
    peer: HostIdentityTag,
    config: Config,
    i1: Vec<u8>,
    /// Our Diffie-Hellman key for the first group we list, made while I1 travels so that R1's
    /// processing (T2) does not wait for it; R1 may pick another group, which gets a fresh key.
    kx: Option<(DhGroupId, KeyExchange)>,
}

/// What solving R1 took: the lab's T2 split (puzzle vs the rest).
#[derive(Debug, Clone, Copy)]
pub struct R1Work {
    /// Hashes the puzzle took.
    pub puzzle_tries: u64,
    /// The puzzle's K.
    pub k: u8,
}

impl I1Sent {
    /// Starts an exchange with `peer` (its HIT), from locator `src` to `dst`: returns the
    /// state and the I1 to send (and to resend on the retransmission timer, [`I1Sent::i1`]).
    pub fn start(
        host: &LocalHost,
        peer: HostIdentityTag,
        config: Config,
        src: IpAddr,
        dst: IpAddr,
    ) -> Result<I1Sent, Error> {
        let me = host.hit();
        let m = Message::new(Header::new(PacketType::I1, me.0, peer.0))
            .with(DhGroupList { groups: config.dh_groups.clone() });
        let i1 = seal(&m, src, dst)?;
        Ok(I1Sent { me, peer, config, i1, kx: None })
    }

    /// Makes our Diffie-Hellman key for the first group we list: call it after the I1 left, so
    /// that the key is made while I1 and R1 travel and R1's processing (T2) does not wait for
    /// it (HIPL likewise keeps DH keys made ahead). Without it, R1's processing makes the key.
    pub fn prepare_dh(&mut self) -> Result<(), Error> {
        if self.kx.is_none() {
            if let Some(&id) = self.config.dh_groups.first() {
                if let Some(g) = dh_group(id) {
                    self.kx = Some((id, KeyExchange::generate(g)?));
                }
            }
        }
        Ok(())
    }

    /// The I1 (for retransmission).
    pub fn i1(&self) -> &[u8] {
        &self.i1
    }

    /// The peer's HIT.
    pub fn peer(&self) -> HostIdentityTag {
        self.peer
    }

    /// Processes R1 (§6.8): checks the Responder's signature and our preferences, solves the
    /// puzzle, does Diffie-Hellman and returns the I2 to send.
    pub fn on_r1(
        self,
        host: &LocalHost,
        provider: &'static dyn Provider,
        r1: &[u8],
        src: IpAddr,
        dst: IpAddr,
    ) -> Result<(I2Sent, R1Work), Rejected<I1Sent>> {
        self.on_r1_solving(host, provider, r1, src, dst, &|p, s, i, r, seed| p.solve(s, i, r, seed))
    }

    /// [`I1Sent::on_r1`] with the puzzle search done by `solve` (the node spreads it over
    /// several cores with [`puzzle::Puzzle::solve_lane`]); its answer is checked here.
    pub fn on_r1_solving(
        self,
        host: &LocalHost,
        provider: &'static dyn Provider,
        r1: &[u8],
        src: IpAddr,
        dst: IpAddr,
        solve: puzzle::Solver<'_>,
    ) -> Result<(I2Sent, R1Work), Rejected<I1Sent>> {
        match self.r1(host, provider, r1, src, dst, solve) {
            Ok(r) => Ok(r),
            Err(error) => Err(Rejected { state: Box::new(self), error }),
        }
    }

    fn r1(
        &self,
        host: &LocalHost,
        provider: &'static dyn Provider,
        r1: &[u8],
        src: IpAddr,
        dst: IpAddr,
        solve: puzzle::Solver<'_>,
    ) -> Result<(I2Sent, R1Work), Error> {
        let m = open(r1, src, dst, PacketType::R1, &self.me, false)?;
        if m.header.sender_hit != self.peer.0 {
            return Err(Error::Peer(format!(
                "R1 from HIT {}",
                HostIdentityTag(m.header.sender_hit)
            )));
        }
        let peer_host_id = get!(m, HostId).ok_or_else(|| missing("HOST_ID"))?.clone();
        let peer = peer_identity(&peer_host_id)?;
        if peer.hit() != self.peer {
            return Err(Error::Peer("R1: HOST_ID is not that of the Responder's HIT".into()));
        }
        // HIP_SIGNATURE_2 (§5.2.15): over R1 up to it, Receiver's HIT, Opaque and #I zero.
        let sig = get!(m, HipSignature2).ok_or_else(|| missing("HIP_SIGNATURE_2"))?;
        let packet = Packet::new_checked(r1).map_err(|e| Error::Peer(e.to_string()))?;
        let mut covered = packet
            .to_vec_before(ParamType::HIP_SIGNATURE_2)
            .map_err(|e| Error::Peer(e.to_string()))?;
        zero_for_signature_2(&mut covered).map_err(|e| Error::Peer(e.to_string()))?;
        peer.verify(&covered, &sig.signature)?;

        // Downgrade protection (§5.2.6, §6.8 step 5): the group used must be the first of our
        // list that the Responder's signed DH_GROUP_LIST has.
        let theirs = get!(m, DhGroupList).ok_or_else(|| missing("R1 DH_GROUP_LIST"))?;
        let want = self
            .config
            .dh_groups
            .iter()
            .find(|g| theirs.groups.contains(g))
            .ok_or_else(|| Error::Peer("R1: no Diffie-Hellman group in common".into()))?;
        let dh = get!(m, DiffieHellman).ok_or_else(|| missing("DIFFIE_HELLMAN"))?;
        let value = dh.values.iter().find(|v| v.group == *want).ok_or_else(|| {
            Error::Peer(format!("R1: DIFFIE_HELLMAN is not our preferred common group {want}"))
        })?;
        let group = dh_group(*want).ok_or_else(|| Error::Peer(format!("DH group {want}")))?;
        let cipher = *get!(m, HipCipher)
            .and_then(|c| self.config.ciphers.iter().find(|x| c.ciphers.contains(x)))
            .ok_or_else(|| Error::Peer("R1: no HIP_CIPHER in common".into()))?;
        let (esp_id, esp_suite) = get!(m, EspTransform)
            .and_then(|t| {
                self.config
                    .esp_suites
                    .iter()
                    .find(|x| t.suites.contains(x))
                    .and_then(|&id| esp::engine_suite(id).map(|s| (id, s)))
            })
            .ok_or_else(|| Error::Peer("R1: no ESP_TRANSFORM in common".into()))?;
        let pz = get!(m, Puzzle).ok_or_else(|| missing("PUZZLE"))?;

        // The work: the puzzle, then Diffie-Hellman and KEYMAT, all under the Responder's suite.
        let suite = super::exchange_suite(&self.peer)?;
        let seed = random(provider, suite.rhash_len())?;
        let p = puzzle::Puzzle { k: pz.k, i: pz.i.clone() };
        let (j, tries) = solve(&p, suite, &self.me, &self.peer, &seed)?;
        // A solver from outside is checked, not trusted: a wrong #J would only cost us the
        // exchange, but it costs nothing to know at once.
        p.verify(suite, &self.me, &self.peer, &j)?;
        let fresh;
        let kx = match &self.kx {
            Some((id, kx)) if id == want => kx,
            _ => {
                fresh = KeyExchange::generate(group)?;
                &fresh
            }
        };
        let public = kx.public_key().to_vec();
        let kij = kx
            .agree_reused(&value.public_value)
            .map_err(|_| Error::Peer("DIFFIE_HELLMAN: bad public value".into()))?;
        let hip_len = hip_keys_len(cipher, suite)?;
        let km_len = hip_len + ESP_KEY_SETS * esp::keymat_len(&esp_suite);
        let mut km = Keymat::derive(
            hmac_of(suite)?,
            kij.as_bytes(),
            &self.me,
            &self.peer,
            &pz.i,
            &j,
            km_len,
        )?;
        let hip = draw_hip_keys(&mut km, cipher, suite, &self.me, &self.peer)?;
        let spi_in = crypto::random_spi(provider)?;
        let keymat_index =
            u16::try_from(hip_len).map_err(|_| Error::Config("KEYMAT index".into()))?;

        // I2 (§5.3.3, §6.8): our HOST_ID in the clear, where §5.3.3 places it, or (configured)
        // inside ENCRYPTED under the HIP key of our direction. Parameters stay in type order
        // (§5.2.1): HIP_CIPHER 579, ENCRYPTED 641, HOST_ID 705, TRANSPORT_FORMAT_LIST 2049.
        let hidden = if self.config.encrypt_host_id {
            let inner = emit_params(&[Param::HostId(host_id(host))])
                .map_err(|e| Error::Config(e.to_string()))?;
            let iv = random(provider, crate::cipher::iv_len(cipher))?;
            Some(crate::cipher::encrypt(provider, cipher, &hip.enc_out, &iv, &inner)?)
        } else {
            None
        };
        let mut i2 = Message::new(Header::new(PacketType::I2, self.me.0, self.peer.0))
            .with(EspInfo { keymat_index, old_spi: 0, new_spi: spi_in });
        if let Some(c) = get!(m, R1Counter) {
            i2 = i2.with(R1Counter { counter: c.counter });
        }
        i2 = i2
            .with(Solution { k: pz.k, opaque: pz.opaque, i: pz.i.clone(), j })
            .with(DiffieHellman::new(*want, public))
            .with(HipCipher { ciphers: vec![cipher] });
        i2 = match hidden {
            Some(enc) => i2.with(Encrypted { iv_and_data: enc }),
            None => i2.with(host_id(host)),
        };
        i2 = i2
            .with(TransportFormatList { formats: vec![ParamType::ESP_TRANSFORM] })
            .with(EspTransform { suites: vec![esp_id] });
        let mac = hmac(
            suite,
            &hip.integ_out,
            &super::responder::to_vec_before(&i2, ParamType::HIP_MAC)?,
        )?;
        i2 = i2.with(HipMac { mac });
        let signed = host.sign(&super::responder::to_vec_before(&i2, ParamType::HIP_SIGNATURE)?)?;
        let algorithm = HiAlgorithm(host.identity().algorithm());
        i2 = i2.with(HipSignature { algorithm, signature: signed });
        let bytes = seal(&i2, dst, src)?;
        let state = I2Sent {
            me: self.me,
            peer,
            peer_host_id,
            i2: bytes,
            hip,
            keymat: km,
            esp_suite,
            keymat_index: hip_len,
            spi_in,
            suite,
        };
        Ok((state, R1Work { puzzle_tries: tries, k: pz.k }))
    }
}

/// I2 sent; waiting for R2.
pub struct I2Sent {
    me: HostIdentityTag,
    peer: HostIdentity,
    /// The Responder's HOST_ID parameter as R1 carried it, Domain Identifier included: the
    /// one HIP_MAC_2 covers.
    peer_host_id: wire::hip::HostId,
    i2: Vec<u8>,
    hip: HipKeys,
    keymat: Keymat,
    esp_suite: Suite,
    keymat_index: usize,
    spi_in: u32,
    suite: HitSuite,
}

impl std::fmt::Debug for I2Sent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("I2Sent").field("peer", &self.peer.hit()).finish_non_exhaustive()
    }
}

impl I2Sent {
    /// The I2 (for retransmission).
    pub fn i2(&self) -> &[u8] {
        &self.i2
    }

    /// Processes R2 (§6.10): HIP_MAC_2 (over R2 with the Responder's HOST_ID), the signature,
    /// the Responder's SPI; returns the association.
    pub fn on_r2(
        self,
        r2: &[u8],
        src: IpAddr,
        dst: IpAddr,
    ) -> Result<Established, Rejected<I2Sent>> {
        match self.r2(r2, src, dst) {
            Ok((esp, next)) => Ok(Established {
                local_hit: self.me,
                peer: self.peer,
                esp,
                hip: self.hip,
                keymat: self.keymat,
                next_keymat_index: next,
                suite: self.suite,
            }),
            Err(error) => Err(Rejected { state: Box::new(self), error }),
        }
    }

    fn r2(&self, r2: &[u8], src: IpAddr, dst: IpAddr) -> Result<(esp::EspKeys, usize), Error> {
        let m = open(r2, src, dst, PacketType::R2, &self.me, false)?;
        if m.header.sender_hit != self.peer.hit().0 {
            return Err(Error::Peer("R2 from another HIT".into()));
        }
        let mac = get!(m, HipMac2).ok_or_else(|| missing("HIP_MAC_2"))?;
        // HIP_MAC_2, §5.2.13's field table (as another HIPv2 implementation's source quotes
        // it): "HMAC computed over the HIP packet, excluding the HIP_MAC_2 parameter and any
        // following parameters such as HIP_SIGNATURE, HIP_SIGNATURE_2, ECHO_REQUEST_UNSIGNED,
        // or ECHO_RESPONSE_UNSIGNED, and including an additional sender's HOST_ID parameter
        // during the HMAC calculation." The sender's HOST_ID parameter is the one the
        // Responder sends, R1's as it came, its Domain Identifier included (cutehip sends an
        // NAI there; a HOST_ID rebuilt without it does not verify).
        let mut with_hi = m.clone();
        let hi = self.peer_host_id.clone();
        let at = with_hi
            .params
            .iter()
            .position(|p| p.param_type() > ParamType::HOST_ID)
            .unwrap_or(with_hi.params.len());
        with_hi.params.insert(at, Param::HostId(hi));
        let covered = super::responder::to_vec_before(&with_hi, ParamType::HIP_MAC_2)?;
        check_hmac(self.suite, &self.hip.integ_in, &covered, &mac.mac, "HIP_MAC_2")?;
        let sig = get!(m, HipSignature).ok_or_else(|| missing("HIP_SIGNATURE"))?;
        let packet = Packet::new_checked(r2).map_err(|e| Error::Peer(e.to_string()))?;
        let covered = packet
            .to_vec_before(ParamType::HIP_SIGNATURE)
            .map_err(|e| Error::Peer(e.to_string()))?;
        self.peer.verify(&covered, &sig.signature)?;
        let info = get!(m, EspInfo).ok_or_else(|| missing("ESP_INFO"))?;
        if usize::from(info.keymat_index) != self.keymat_index {
            return Err(Error::Peer(format!(
                "R2 ESP_INFO: KEYMAT index {} (we sent {})",
                info.keymat_index, self.keymat_index
            )));
        }
        let esp = esp::draw(
            &self.keymat,
            self.keymat_index,
            self.esp_suite,
            &self.me,
            &self.peer.hit(),
            self.spi_in,
            info.new_spi,
        )?;
        Ok((esp, self.keymat_index + esp::keymat_len(&self.esp_suite)))
    }
}
