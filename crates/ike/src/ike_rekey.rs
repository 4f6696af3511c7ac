//! Rekeying the IKE SA itself (RFC 7296 §1.3.2, §2.18): CREATE_CHILD_SA with an IKE proposal
//! carrying the new SPI, Ni/Nr and a fresh key exchange; SKEYSEED = prf(SK_d (old), g^ir (new) |
//! Ni | Nr) with the old PRF; the peer that started the rekey is the new IKE SA's original
//! initiator; message IDs start at 0; the CHILD SAs move over; the initiator of the rekey then
//! deletes the old IKE SA. A request arriving while ours is outstanding is answered with
//! TEMPORARY_FAILURE (§2.25). Not here yet: simultaneous IKE rekeys (§2.8.2).

use crate::error::{Error, PeerMisbehaved};
use crate::keys::{IkeSaKeys, rekey_skeyseed};
use crate::sa::{
    IkeSa, NONCE_LEN, Retransmit, error_notify, header, missing, notify, random, random_ike_spi,
    take_payload,
};
use crate::session::{Event, Output, Pending, Request, Retiring, Session};
use crate::sk::{Role, SkKeys};
use crate::suite::IkeSuite;
use crypto::KeyExchange;
use wire::ikev2::{Delete, ExchangeType, Ke, NotifyType, Packet, Payload, ProtocolId, Sa};

impl Session {
    /// CREATE_CHILD_SA request rekeying the IKE SA: SK {SA (our new SPI), Ni, KEi}, with the
    /// current suite proposed first and its group in KE.
    pub(crate) fn rekey_ike_request(&mut self) -> Result<(Vec<Payload>, Pending), Error> {
        let p = self.provider;
        let new_spi = random_ike_spi(p)?;
        let ni = random::<NONCE_LEN>(p)?.to_vec();
        let current = self.ike.suite;
        let mut suites = vec![current];
        suites.extend(self.config.ike_suites.iter().filter(|s| **s != current));
        let mut proposals = Vec::new();
        for (n, s) in suites.iter().enumerate() {
            proposals.push(s.to_proposal(
                u8::try_from(n + 1).unwrap_or(u8::MAX),
                new_spi.to_be_bytes().to_vec(),
            )?);
        }
        let ke = KeyExchange::generate(current.dh)?;
        let inner = vec![
            Payload::Sa(Sa { proposals }),
            Payload::Nonce(ni.clone()),
            Payload::Ke(Ke { dh_group: current.dh.ike_id(), data: ke.public_key().to_vec() }),
        ];
        Ok((inner, Pending::RekeyIke { new_spi, ni, ke }))
    }

    /// The new IKE SA of a rekey: `(Ni, Nr)` and `(SPIi, SPIr)` as the rekey's initiator and
    /// responder chose them.
    fn new_ike(
        &self,
        role: Role,
        suite: IkeSuite,
        g_ir: &[u8],
        (ni, nr): (&[u8], &[u8]),
        (spi_i, spi_r): (u64, u64),
    ) -> Result<IkeSa, Error> {
        let old = &self.ike;
        let seed = rekey_skeyseed(old.suite.prf, &old.keys.sk_d, g_ir, ni, nr);
        let keys = IkeSaKeys::derive(&suite, &seed, ni, nr, spi_i, spi_r)?;
        let sk = SkKeys::new(self.provider, &suite, &keys, role)?;
        Ok(IkeSa {
            role,
            spi_i,
            spi_r,
            suite,
            nat: old.nat,
            keys,
            sk,
            next_request_id: 0,
            next_peer_request_id: 0,
            last_response: None,
        })
    }

    /// The answer to our IKE rekey: switch to the new IKE SA, delete the old one.
    pub(crate) fn on_rekey_ike_response(
        &mut self,
        now_ms: u64,
        new_spi: u64,
        ni: &[u8],
        ke: KeyExchange,
        payloads: &[Payload],
        out: &mut Output,
    ) -> Result<(), Error> {
        let result = (|| {
            if let Some(ty) = error_notify(payloads) {
                return Err(Error::from(PeerMisbehaved::ErrorNotify(ty)));
            }
            let ex = ExchangeType::CREATE_CHILD_SA;
            let sa = take_payload!(payloads, Sa).ok_or_else(|| missing(ex, "SA"))?;
            let nr = take_payload!(payloads, Nonce).ok_or_else(|| missing(ex, "Nonce"))?;
            let kr = take_payload!(payloads, Ke).ok_or_else(|| missing(ex, "KE"))?;
            let [p] = sa.proposals.as_slice() else {
                return Err(PeerMisbehaved::ProposalNotOffered("not exactly one proposal").into());
            };
            let suite = IkeSuite::from_chosen(p)?;
            let spi_r = <[u8; 8]>::try_from(p.spi.as_slice()).map(u64::from_be_bytes);
            let spi_r =
                spi_r.ok().filter(|s| *s != 0).ok_or(PeerMisbehaved::ProposalNotOffered("spi"))?;
            if !self.config.ike_suites.contains(&suite)
                || suite.dh != ke.group()
                || kr.dh_group != ke.group().ike_id()
            {
                return Err(PeerMisbehaved::ProposalNotOffered("suite").into());
            }
            let g_ir = ke.agree(&kr.data).map_err(|_| PeerMisbehaved::BadPublicValue)?;
            self.new_ike(Role::Initiator, suite, g_ir.as_bytes(), (ni, nr), (new_spi, spi_r))
        })();
        let new = match result {
            Ok(new) => new,
            Err(error) => {
                out.events.push(Event::RequestFailed { request: Request::RekeyIke, error });
                return Ok(());
            }
        };
        let (spi_i, spi_r) = (new.spi_i, new.spi_r);
        let mut old = std::mem::replace(&mut self.ike, new);
        out.events.push(Event::IkeRekeyed { spi_i, spi_r });
        // §2.18: the initiator of the rekey deletes the old IKE SA.
        let id = old.next_request_id;
        old.next_request_id = id.wrapping_add(1);
        let h = header(old.spi_i, old.spi_r, ExchangeType::INFORMATIONAL, old.role, false, id);
        let del = Payload::Delete(Delete { protocol_id: ProtocolId::IKE, spis: Vec::new() });
        let bytes = old.sk.seal(self.provider, &h, &[del])?;
        out.send.push(bytes.clone());
        self.retiring =
            Some(Retiring { ike: old, delete: Some((id, Retransmit::new(bytes, now_ms))) });
        Ok(())
    }

    /// A peer's IKE rekey request (the SA payload proposes protocol IKE); returns the answer.
    pub(crate) fn on_rekey_ike(&mut self, payloads: &[Payload]) -> Result<Vec<Payload>, Error> {
        let refuse = |ty: NotifyType, data: Vec<u8>| Ok(vec![notify(ty, data)]);
        if self.outstanding.is_some() || self.retiring.is_some() || self.rekeyed.is_some() {
            return refuse(NotifyType::TEMPORARY_FAILURE, Vec::new());
        }
        let (Some(sa), Some(ni), Some(ke_i)) = (
            take_payload!(payloads, Sa),
            take_payload!(payloads, Nonce),
            take_payload!(payloads, Ke),
        ) else {
            return refuse(NotifyType::INVALID_SYNTAX, Vec::new());
        };
        let same_group: Vec<IkeSuite> = self
            .config
            .ike_suites
            .iter()
            .filter(|s| s.dh.ike_id() == ke_i.dh_group)
            .copied()
            .collect();
        let Some((num, suite)) = IkeSuite::select(&sa.proposals, &same_group) else {
            return match IkeSuite::select(&sa.proposals, &self.config.ike_suites) {
                Some((_, s)) => {
                    refuse(NotifyType::INVALID_KE_PAYLOAD, s.dh.ike_id().to_be_bytes().to_vec())
                }
                None => refuse(NotifyType::NO_PROPOSAL_CHOSEN, Vec::new()),
            };
        };
        let chosen = sa.proposals.iter().find(|p| p.num == num && p.protocol_id == ProtocolId::IKE);
        let spi_i =
            chosen.and_then(|p| <[u8; 8]>::try_from(p.spi.as_slice()).ok()).map(u64::from_be_bytes);
        let Some(spi_i) = spi_i.filter(|s| *s != 0) else {
            return refuse(NotifyType::INVALID_SYNTAX, Vec::new());
        };
        let nr = random::<NONCE_LEN>(self.provider)?.to_vec();
        let spi_r = random_ike_spi(self.provider)?;
        let mine = KeyExchange::generate(suite.dh)?;
        let public = Ke { dh_group: suite.dh.ike_id(), data: mine.public_key().to_vec() };
        let Ok(g_ir) = mine.agree(&ke_i.data) else {
            return refuse(NotifyType::INVALID_SYNTAX, Vec::new());
        };
        let new =
            self.new_ike(Role::Responder, suite, g_ir.as_bytes(), (ni, &nr), (spi_i, spi_r))?;
        self.rekeyed = Some(new);
        Ok(vec![
            Payload::Sa(Sa {
                proposals: vec![suite.to_proposal(num, spi_r.to_be_bytes().to_vec())?],
            }),
            Payload::Nonce(nr),
            Payload::Ke(public),
        ])
    }

    /// After answering a peer's IKE rekey: the answer went out under the old keys; switch now.
    pub(crate) fn switch_to_rekeyed(&mut self, out: &mut Output) {
        if let Some(new) = self.rekeyed.take() {
            out.events.push(Event::IkeRekeyed { spi_i: new.spi_i, spi_r: new.spi_r });
            let old = std::mem::replace(&mut self.ike, new);
            self.retiring = Some(Retiring { ike: old, delete: None });
        }
    }

    /// A message for the old IKE SA: the answer to our DELETE of it, the peer's DELETE of it, or
    /// a retransmission of the request that rekeyed it.
    pub(crate) fn handle_retiring(&mut self, bytes: &[u8]) -> Result<Output, Error> {
        let mut out = Output::default();
        let Some(r) = self.retiring.as_mut() else { return Ok(out) };
        let p = Packet::new_checked(bytes).map_err(Error::InvalidMessage)?;
        let id = p.message_id();
        if p.flags().response {
            if r.delete.as_ref().is_none_or(|(d, _)| *d != id) {
                return Err(PeerMisbehaved::UnexpectedMessage("response on the old IKE SA").into());
            }
            r.ike.sk.open(bytes)?;
            self.retiring = None;
            return Ok(out);
        }
        let expected = r.ike.next_peer_request_id;
        if id.wrapping_add(1) == expected {
            r.ike.sk.open(bytes)?;
            out.send.extend(r.ike.last_response.clone());
            return Ok(out);
        }
        let (_, payloads) = r.ike.sk.open(bytes)?;
        let deletes_ike = payloads
            .iter()
            .any(|p| matches!(p, Payload::Delete(d) if d.protocol_id == ProtocolId::IKE));
        if id != expected || p.exchange_type() != ExchangeType::INFORMATIONAL || !deletes_ike {
            return Err(PeerMisbehaved::UnexpectedMessage("request on the old IKE SA").into());
        }
        let h = header(r.ike.spi_i, r.ike.spi_r, ExchangeType::INFORMATIONAL, r.ike.role, true, id);
        out.send.push(r.ike.sk.seal(self.provider, &h, &[])?);
        self.retiring = None;
        Ok(out)
    }
}
