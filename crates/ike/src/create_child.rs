//! CREATE_CHILD_SA for CHILD SAs (RFC 7296 §1.3.1 new, §1.3.3 rekey with REKEY_SA, optional
//! PFS with a KE payload, §2.17 KEYMAT with the exchange's own nonces), both ends. The rekey's
//! initiator deletes the old pair once the new one is up (§2.8). An IKE proposal goes to
//! `ike_rekey.rs`. Simultaneous rekeys of one pair are resolved by the nonce rule of §2.8.1, with
//! events the driver can apply make-before-break going by its own requests alone: the peer's
//! pair of a collision comes without `rekeys`, ours with it only if it survives (else it is
//! reported superseded and deleted, never installed); a queued rekey of ours is dropped when the
//! peer rekeys the pair first; a pair we are deleting is not rekeyed (TEMPORARY_FAILURE, §2.25).

use crate::auth::{ts_narrow, ts_within};
use crate::config::{ChildSaKeys, Mode};
use crate::error::{Error, PeerMisbehaved};
use crate::keys::ChildKeyMat;
use crate::sa::{NONCE_LEN, find_notify, notify, random, take_payload};
use crate::session::{
    ChildRequest, ChildSa, Collision, Event, Output, Pending, Request, Session, deleting,
};
use crate::suite::ChildSuite;
use crypto::{DhGroup, KeyExchange};
use wire::ikev2::{Ke, Notify, NotifyType, Payload, ProtocolId, Sa, TrafficSelector, Ts};

impl Session {
    /// The configured PFS group for a CHILD SA of `suite` under policy `policy` (the initial
    /// CHILD SA never has one).
    fn pfs_for(&self, suite: &ChildSuite, policy: usize) -> Option<DhGroup> {
        let suites = self.policy_suites(policy);
        let c = suites.iter().find(|s| s.esp == suite.esp && s.esn == suite.esn);
        c.and_then(|s| s.pfs)
    }

    /// The proposals of CHILD SA policy `policy` (0: the first, IKE_AUTH's).
    fn policy_suites(&self, policy: usize) -> &[ChildSuite] {
        match policy.checked_sub(1) {
            None => &self.config.child_suites,
            Some(i) => self.config.more_children.get(i).map_or(&[], |c| c.suites.as_slice()),
        }
    }

    /// The policy a pair with these selectors belongs to: the first whose selectors hold them
    /// (each child of a connection has its own, §2.9), else the first.
    pub(crate) fn policy_of(&self, local: &[TrafficSelector], remote: &[TrafficSelector]) -> usize {
        self.config
            .child_policies()
            .iter()
            .position(|p| ts_within(local, &p.local_ts) && ts_within(remote, &p.remote_ts))
            .unwrap_or(0)
    }

    /// The group the peer asked for with INVALID_KE_PAYLOAD (§1.3: the responder "MUST reject
    /// the request and indicate its preferred Diffie-Hellman group in the INVALID_KE_PAYLOAD
    /// Notify payload", two octets, §3.10.1), if this request may be sent again with it: once,
    /// and only with a group configured for the same ESP suite.
    pub(crate) fn invalid_ke_retry(
        &self,
        req: &ChildRequest,
        payloads: &[Payload],
    ) -> Option<DhGroup> {
        if req.ke_retried
            || crate::sa::error_notify(payloads) != Some(NotifyType::INVALID_KE_PAYLOAD)
        {
            return None;
        }
        let n = find_notify(payloads, NotifyType::INVALID_KE_PAYLOAD)?;
        let id = u16::from_be_bytes(<[u8; 2]>::try_from(n.data.as_slice()).ok()?);
        let g = DhGroup::from_ike_id(id)?;
        if req.suite.pfs == Some(g) {
            return None;
        }
        let s = &req.suite;
        self.policy_suites(req.policy)
            .iter()
            .any(|c| c.esp == s.esp && c.esn == s.esn && c.pfs == Some(g))
            .then_some(g)
    }

    /// CREATE_CHILD_SA request for a CHILD SA (§1.3.1): rekeying the pair with inbound SPI
    /// `rekeys` (§1.3.3, with N(REKEY_SA) and its selectors), or a new pair from the config:
    /// SK {[N(REKEY_SA)], [N(USE_TRANSPORT_MODE)], SA, Ni, [KEi], TSi, TSr}. `group` is the
    /// group the peer asked for in INVALID_KE_PAYLOAD, when this is the request sent again.
    pub(crate) fn child_request(
        &mut self,
        rekeys: Option<u32>,
        group: Option<DhGroup>,
        policy: usize,
    ) -> Result<Option<(Vec<Payload>, Pending)>, Error> {
        let (suite, mode, local_ts, remote_ts, policy) = match rekeys {
            Some(spi_in) => {
                let Some(old) = self.children.iter().find(|c| c.spi_in == spi_in).cloned() else {
                    return Ok(None);
                };
                let policy = self.policy_of(&old.local_ts, &old.remote_ts);
                let suite = ChildSuite { pfs: self.pfs_for(&old.suite, policy), ..old.suite };
                (suite, old.mode, old.local_ts, old.remote_ts, policy)
            }
            None => {
                let Some(p) = self.config.child_policies().into_iter().nth(policy) else {
                    return Ok(None);
                };
                let Some(suite) = p.suites.first().copied() else {
                    return Ok(None);
                };
                (suite, p.mode, p.local_ts, p.remote_ts, policy)
            }
        };
        let suite = match group {
            Some(g) => ChildSuite { pfs: Some(g), ..suite },
            None => suite,
        };
        let new_spi_in = crypto::random_spi(self.provider)?;
        let ni = random::<NONCE_LEN>(self.provider)?.to_vec();
        let ke = suite.pfs.map(KeyExchange::generate).transpose()?;
        let mut inner = Vec::new();
        if let Some(spi_in) = rekeys {
            inner.push(Payload::Notify(Notify {
                protocol_id: ProtocolId::ESP,
                spi: spi_in.to_be_bytes().to_vec(),
                notify_type: NotifyType::REKEY_SA,
                data: Vec::new(),
            }));
        }
        if mode == Mode::Transport {
            inner.push(notify(NotifyType::USE_TRANSPORT_MODE, Vec::new()));
        }
        // §1.3: the proposals name every group we allow for this ESP suite, the KE's first, so
        // that a responder preferring another one can say so with INVALID_KE_PAYLOAD.
        let mut offered = vec![suite];
        for c in self.policy_suites(policy) {
            if c.esp == suite.esp && c.esn == suite.esn && !offered.contains(c) {
                offered.push(*c);
            }
        }
        let mut proposals = Vec::with_capacity(offered.len());
        for (n, s) in (1u8..).zip(&offered) {
            proposals.push(s.to_proposal(n, new_spi_in)?);
        }
        inner.push(Payload::Sa(Sa { proposals }));
        inner.push(Payload::Nonce(ni.clone()));
        if let Some(k) = &ke {
            inner.push(Payload::Ke(Ke {
                dh_group: k.group().ike_id(),
                data: k.public_key().to_vec(),
            }));
        }
        inner.push(Payload::TsI(Ts { selectors: local_ts.clone() }));
        inner.push(Payload::TsR(Ts { selectors: remote_ts.clone() }));
        let ke_retried = group.is_some();
        let req = ChildRequest {
            rekeys,
            policy,
            new_spi_in,
            suite,
            offered,
            mode,
            ni,
            ke,
            local_ts,
            remote_ts,
            ke_retried,
        };
        Ok(Some((inner, Pending::CreateChild(Box::new(req)))))
    }

    /// The answer to our CREATE_CHILD_SA: install the new pair; after a rekey, delete the old
    /// one (§2.8). A refusal or a bad answer is reported as [`Event::RequestFailed`]; so is a
    /// rekey whose pair is not wanted (it lost a simultaneous rekey, §2.8.1, or the old pair is
    /// gone): the peer has it, so it is deleted, but it is never installed here.
    pub(crate) fn on_child_response(
        &mut self,
        req: ChildRequest,
        payloads: &[Payload],
        out: &mut Output,
    ) {
        let ChildRequest {
            rekeys,
            policy,
            new_spi_in,
            offered,
            mode,
            ni,
            ke,
            local_ts,
            remote_ts,
            ..
        } = req;
        // The peer's rekey seen while this request was out, if any, belongs to this answer.
        let collision = self.collision.take();
        let request = rekeys.map_or(Request::NewChild(policy), Request::RekeyChild);
        let result = (|| {
            if let Some(ty) = crate::sa::error_notify(payloads) {
                return Err(Error::from(PeerMisbehaved::ErrorNotify(ty)));
            }
            let ex = wire::ikev2::ExchangeType::CREATE_CHILD_SA;
            let sa = take_payload!(payloads, Sa).ok_or_else(|| crate::sa::missing(ex, "SA"))?;
            let nr =
                take_payload!(payloads, Nonce).ok_or_else(|| crate::sa::missing(ex, "Nonce"))?;
            let tsi = take_payload!(payloads, TsI).ok_or_else(|| crate::sa::missing(ex, "TSi"))?;
            let tsr = take_payload!(payloads, TsR).ok_or_else(|| crate::sa::missing(ex, "TSr"))?;
            let [p] = sa.proposals.as_slice() else {
                return Err(
                    PeerMisbehaved::ProposalNotOffered("not exactly one child proposal").into()
                );
            };
            let (suite, spi_out) = ChildSuite::from_chosen(p)?;
            if !offered.contains(&suite) {
                return Err(PeerMisbehaved::ProposalNotOffered("child suite").into());
            }
            if !ts_within(&tsi.selectors, &local_ts) || !ts_within(&tsr.selectors, &remote_ts) {
                return Err(PeerMisbehaved::TrafficSelectorsNotNarrowed.into());
            }
            // A proposal without a group (offered beside ours with one) takes no KE (§1.3);
            // one with a group must be the group of our KE, else the peer should have asked
            // for its group with INVALID_KE_PAYLOAD.
            let g_ir = match ke.filter(|_| suite.pfs.is_some()) {
                None => None,
                Some(k) if suite.pfs != Some(k.group()) => {
                    return Err(PeerMisbehaved::ProposalNotOffered("child D-H group").into());
                }
                Some(k) => {
                    let kr =
                        take_payload!(payloads, Ke).ok_or_else(|| crate::sa::missing(ex, "KE"))?;
                    if kr.dh_group != k.group().ike_id() {
                        return Err(PeerMisbehaved::KeMismatch {
                            got: kr.dh_group,
                            want: k.group().ike_id(),
                        }
                        .into());
                    }
                    Some(k.agree(&kr.data).map_err(|_| PeerMisbehaved::BadPublicValue)?)
                }
            };
            let g = g_ir.as_ref().map(|s| s.as_bytes());
            let km = ChildKeyMat::derive(
                self.ike.suite.prf,
                &self.ike.keys.sk_d,
                &suite.esp,
                g,
                &ni,
                nr,
            )?;
            let transport = find_notify(payloads, NotifyType::USE_TRANSPORT_MODE).is_some();
            let keys = ChildSaKeys {
                suite,
                mode: if transport && mode == Mode::Transport {
                    Mode::Transport
                } else {
                    Mode::Tunnel
                },
                spi_in: new_spi_in,
                spi_out,
                enc_key_in: km.encr_r,
                auth_key_in: km.integ_r,
                enc_key_out: km.encr_i,
                auth_key_out: km.integ_i,
                local_ts: tsi.selectors.clone(),
                remote_ts: tsr.selectors.clone(),
            };
            Ok((keys, nr.clone()))
        })();
        match result {
            Ok((keys, nr)) => {
                let Some(old_spi_in) = rekeys else {
                    self.children.push(ChildSa::of(&keys));
                    out.events.push(Event::InstallChild { keys: Box::new(keys), rekeys: None });
                    return;
                };
                // §2.8.1: if the peer rekeyed the same pair meanwhile, the exchange holding the
                // lowest of the four nonces made the redundant pair; its initiator deletes it,
                // and the other initiator deletes the old pair. The peer, having answered us
                // while its own request was out, reaches the same verdict.
                let collision = collision.filter(|c| c.old_spi_in == old_spi_in);
                let ours_redundant = collision.is_some_and(|c| {
                    let ours = ni.as_slice().min(nr.as_slice());
                    let theirs = c.ni.as_slice().min(c.nr.as_slice());
                    ours < theirs
                });
                let gone = self.children.iter().all(|c| c.spi_in != old_spi_in);
                if ours_redundant || gone {
                    // Never installed here, so never sent on: the peer sends on its own pair
                    // once it has deleted the old one, and we fall back to that pair then.
                    self.unwanted.push(keys.spi_in);
                    let why = if gone {
                        "the rekeyed CHILD SA is gone"
                    } else {
                        "the peer's simultaneous rekey of the CHILD SA survives (RFC 7296 2.8.1)"
                    };
                    out.events
                        .push(Event::RequestFailed { request, error: Error::Superseded(why) });
                } else {
                    // The peer installed the pair before answering: we may send on it at once.
                    self.children.push(ChildSa::of(&keys));
                    let rekeys = Some(old_spi_in);
                    out.events.push(Event::InstallChild { keys: Box::new(keys), rekeys });
                    self.queue.push_front(Request::DeleteChild(old_spi_in));
                }
            }
            Err(error) => out.events.push(Event::RequestFailed { request, error }),
        }
    }

    /// A peer's CREATE_CHILD_SA request; returns the response's payloads (an error notify when
    /// refused: CHILD_SA_NOT_FOUND §2.25, NO_PROPOSAL_CHOSEN, INVALID_KE_PAYLOAD, TS_UNACCEPTABLE).
    pub(crate) fn on_create_child(
        &mut self,
        payloads: &[Payload],
        out: &mut Output,
    ) -> Result<Vec<Payload>, Error> {
        let refuse = |ty: NotifyType, data: Vec<u8>| Ok(vec![notify(ty, data)]);
        let ike_proposal = |sa: &Sa| sa.proposals.iter().any(|p| p.protocol_id == ProtocolId::IKE);
        if take_payload!(payloads, Sa).is_some_and(ike_proposal) {
            return self.on_rekey_ike(payloads);
        }
        let (Some(sa), Some(ni), Some(tsi), Some(tsr)) = (
            take_payload!(payloads, Sa),
            take_payload!(payloads, Nonce),
            take_payload!(payloads, TsI),
            take_payload!(payloads, TsR),
        ) else {
            return refuse(NotifyType::INVALID_SYNTAX, Vec::new());
        };
        let rekeyed = match find_notify(payloads, NotifyType::REKEY_SA) {
            None => None,
            Some(n) => {
                let spi = <[u8; 4]>::try_from(n.spi.as_slice()).ok().map(u32::from_be_bytes);
                match spi.and_then(|s| self.children.iter().find(|c| c.spi_out == s)) {
                    // §2.25: a pair we are closing (our DELETE of it is on its way, after our own
                    // rekey of it) is not rekeyed again.
                    Some(c) if deleting(self.outstanding.as_ref(), &self.queue, c.spi_in) => {
                        return refuse(NotifyType::TEMPORARY_FAILURE, Vec::new());
                    }
                    Some(c) => Some(c.clone()),
                    None => {
                        let nf = Notify {
                            protocol_id: n.protocol_id,
                            spi: n.spi.clone(),
                            notify_type: NotifyType::CHILD_SA_NOT_FOUND,
                            data: Vec::new(),
                        };
                        return Ok(vec![Payload::Notify(nf)]);
                    }
                }
            }
        };
        let ke_i = take_payload!(payloads, Ke);
        // §1.3: the KE's group is one of those the proposal offers; a suite of ours in the
        // KE's group is preferred, so that a peer offering several groups we accept is not
        // sent back for another one (INVALID_KE_PAYLOAD only when the KE's group is not ours).
        let ke_group = ke_i.map(|k| k.dh_group);
        // The child policy: a rekey keeps its pair's; a new pair takes the first of ours whose
        // selectors meet the proposed ones (§2.9), as strongSwan picks a child config.
        let policies = self.config.child_policies();
        let policy = match &rekeyed {
            Some(c) => self.policy_of(&c.local_ts, &c.remote_ts),
            None => policies
                .iter()
                .position(|p| {
                    !ts_narrow(&tsi.selectors, &p.remote_ts).is_empty()
                        && !ts_narrow(&tsr.selectors, &p.local_ts).is_empty()
                })
                .unwrap_or(0),
        };
        let Some(pol) = policies.get(policy) else {
            return refuse(NotifyType::NO_PROPOSAL_CHOSEN, Vec::new());
        };
        let Some((num, suite, spi_out)) =
            ChildSuite::select_for_ke(&sa.proposals, &pol.suites, ke_group)
        else {
            return refuse(NotifyType::NO_PROPOSAL_CHOSEN, Vec::new());
        };
        if let Some(g) = suite.pfs {
            if ke_i.is_none_or(|k| k.dh_group != g.ike_id() || k.data.len() != g.public_len()) {
                return refuse(NotifyType::INVALID_KE_PAYLOAD, g.ike_id().to_be_bytes().to_vec());
            }
        }
        let tsi_n = ts_narrow(&tsi.selectors, &pol.remote_ts);
        let tsr_n = ts_narrow(&tsr.selectors, &pol.local_ts);
        if tsi_n.is_empty() || tsr_n.is_empty() {
            return refuse(NotifyType::TS_UNACCEPTABLE, Vec::new());
        }
        let nr = random::<NONCE_LEN>(self.provider)?.to_vec();
        let spi_in = crypto::random_spi(self.provider)?;
        let (ke_pub, g_ir) = match (suite.pfs, ke_i) {
            (Some(g), Some(k)) => {
                let mine = KeyExchange::generate(g)?;
                let public = Ke { dh_group: g.ike_id(), data: mine.public_key().to_vec() };
                match mine.agree(&k.data) {
                    Ok(s) => (Some(public), Some(s)),
                    Err(_) => return refuse(NotifyType::INVALID_SYNTAX, Vec::new()),
                }
            }
            _ => (None, None),
        };
        let g = g_ir.as_ref().map(|s| s.as_bytes());
        let km =
            ChildKeyMat::derive(self.ike.suite.prf, &self.ike.keys.sk_d, &suite.esp, g, ni, &nr)?;
        let transport = find_notify(payloads, NotifyType::USE_TRANSPORT_MODE).is_some()
            && pol.mode == Mode::Transport;
        let mode = if transport { Mode::Transport } else { Mode::Tunnel };
        let mut inner = Vec::new();
        if transport {
            inner.push(notify(NotifyType::USE_TRANSPORT_MODE, Vec::new()));
        }
        inner.push(Payload::Sa(Sa { proposals: vec![suite.to_proposal(num, spi_in)?] }));
        let nr_copy = nr.clone();
        inner.push(Payload::Nonce(nr));
        inner.extend(ke_pub.map(Payload::Ke));
        inner.push(Payload::TsI(Ts { selectors: tsi_n.clone() }));
        inner.push(Payload::TsR(Ts { selectors: tsr_n.clone() }));
        let keys = ChildSaKeys {
            suite,
            mode,
            spi_in,
            spi_out,
            enc_key_in: km.encr_i,
            auth_key_in: km.integ_i,
            enc_key_out: km.encr_r,
            auth_key_out: km.integ_r,
            local_ts: tsr_n,
            remote_ts: tsi_n,
        };
        let mut rekeys = rekeyed.map(|c| c.spi_in);
        if let Some(old) = rekeys {
            let ours_too = self.outstanding.as_ref().is_some_and(
                |o| matches!(&o.pending, Pending::CreateChild(r) if r.rekeys == Some(old)),
            );
            if ours_too {
                // Both rekeys in flight (§2.8.1): which pair survives is known with our answer;
                // until then the peer's pair is not one to switch to.
                self.collision = Some(Collision { old_spi_in: old, ni: ni.clone(), nr: nr_copy });
                rekeys = None;
            } else {
                // A rekey of ours still queued would now only collide: drop it, and say so
                // before the install, so the driver knows this rekey is the peer's.
                let before = self.queue.len();
                self.queue.retain(|r| *r != Request::RekeyChild(old));
                for _ in self.queue.len()..before {
                    out.events.push(Event::RequestFailed {
                        request: Request::RekeyChild(old),
                        error: Error::Superseded("the peer rekeyed the CHILD SA first"),
                    });
                }
            }
        }
        self.children.push(ChildSa::of(&keys));
        out.events.push(Event::InstallChild { keys: Box::new(keys), rekeys });
        Ok(inner)
    }
}
