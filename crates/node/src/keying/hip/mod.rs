//! The HIP driver: runs the `hip` crate's base exchange for this host and turns what
//! it establishes into BEET-mode SAs through the control plane.
//!
//! - Known peers get a trap policy from our HIT to theirs; the first packet to a peer's HIT
//!   raises an acquire and starts the exchange (I1 to its locator).
//! - I1s are answered by the stateless Responder; R1, I2 and R2 move the association.
//! - I1 and I2 are resent (RFC 7401 §4.4.3) until answered or given up.
//! - The Responder's R1 generation changes every [`R1_GENERATION_US`].

mod close;
pub mod install;
mod mobility;
mod notify;
mod notify_state;
mod rekey;
mod rekey_state;
pub mod runtime;
pub mod socket;
pub mod solver;
mod status;

use crate::config::hip::HipConf;
use crate::datapath::mailbox::{InKey, OutKey};
use crate::keying::plane::{ControlPlane, in_key_of, out_key_of};
use crate::log::{Level, log_event};
use hip::bex::initiator::{I1Sent, I2Sent};
use hip::bex::responder::Responder;
use hip::bex::{Config, Established};
use hip::{HostIdentityTag, LocalHost};
use ipsec::spd_table::PolicyId;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use wire::hip::{NotifyType, Packet, PacketType};

/// HIP's policy ids: apart from the config's, IKE's (1 << 40) and the command line's.
const POLICY_BASE: PolicyId = 1 << 41;
/// First retransmission after 1 s, doubling, five tries (RFC 7401 §4.4.3 leaves the numbers
/// to the implementation; these are HIPL's and strongSwan's order of magnitude).
const RETRANSMIT_US: u64 = 1_000_000;
const TRIES: u32 = 5;
/// How long one R1 generation lasts (its puzzles and DH keys; the previous one is still
/// accepted, RFC 7401 §4.1.4).
pub const R1_GENERATION_US: u64 = 120_000_000;

/// A datagram to send.
#[derive(Debug)]
pub struct Transmit {
    /// Where to.
    pub to: IpAddr,
    /// The HIP packet.
    pub bytes: Vec<u8>,
}

enum State {
    I1Sent(I1Sent),
    I2Sent(I2Sent),
    Established {
        est: Box<Established>,
        in_key: InKey,
        out_key: OutKey,
    },
    /// Our CLOSE is out (RFC 7401 §6.14): waiting for the CLOSE_ACK that echoes `nonce`.
    Closing {
        est: Box<Established>,
        in_key: InKey,
        out_key: OutKey,
        nonce: Vec<u8>,
        close: Vec<u8>,
    },
}

struct Assoc {
    locator: IpAddr,
    /// Our address towards the peer (the HIP packets' source; with a wildcard `[network] local`
    /// the route's, which changes when the host moves).
    local: IpAddr,
    /// Our UPDATE announcing a new address, until the peer acknowledges it: (update ID,
    /// packet, next resend, tries).
    announcing: Option<(u32, Vec<u8>, u64, u32)>,
    /// A locator the peer announced, being checked: (address, echo nonce).
    verifying: Option<(IpAddr, Vec<u8>)>,
    /// A rekey of the ESP pair under way (`rekey.rs`).
    rekey: Option<rekey_state::Rekey>,
    state: State,
    initiator: bool,
    started_us: u64,
    bex_us: Option<u64>,
    resend_at_us: u64,
    tries: u32,
    /// The R2 we sent (a Responder resends it to a repeated I2, §6.9).
    r2: Option<(Vec<u8>, Vec<u8>)>,
    /// Processing times of seed 001's phases (its Figure 3), microseconds: T2 and T4 (ours as
    /// Initiator: R1 → I2, R2 → established), T3 (ours as Responder: I2 → R2).
    t2_us: Option<u64>,
    t3_us: Option<u64>,
    t4_us: Option<u64>,
}

/// Counters for `status`.
#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
pub struct HipCounters {
    /// I1s answered with an R1.
    pub r1_sent: u64,
    /// Base exchanges completed, as Initiator.
    pub established_initiator: u64,
    /// Base exchanges completed, as Responder.
    pub established_responder: u64,
    /// Packets refused (bad checksum, signature, puzzle, unknown association ...).
    pub refused: u64,
    /// Exchanges given up after the retransmissions.
    pub timed_out: u64,
    /// HIP packets of kinds not handled yet (UPDATE, NOTIFY, CLOSE).
    pub unhandled: u64,
    /// Our own moves announced by UPDATE.
    pub moves: u64,
    /// Peers' new locators verified and moved to.
    pub locator_changes: u64,
    /// Associations ended by CLOSE (either side).
    pub closed: u64,
    /// NOTIFYs we sent (refusals the peer is told of, at most 10 a second).
    pub notify_sent: u64,
    /// NOTIFYs received (informational, RFC 7401 §6.13; the last one in `last_notify`).
    pub notify_received: u64,
    /// ESP pairs rekeyed by UPDATE (RFC 7402 §6.8), either side.
    pub rekeys: u64,
    /// Rekeys that failed or timed out (the old pair stays).
    pub rekey_failed: u64,
    /// I2s from HITs that are not configured peers (refused with `accept = "known"`).
    pub unknown_peer: u64,
    /// The last I1's processing time (T1 of seed 001: I1 in, R1 out), microseconds.
    pub last_t1_us: u64,
}

/// The next Update ID for a SEQ parameter, and the counter moved on (RFC 7401 §5.2.13: each
/// new UPDATE that needs an acknowledgement carries a larger ID than the one before; IDs left
/// unused by a failed send do no harm, a reused one would). A function on the field rather
/// than a method so that callers holding an association borrowed from the driver can use it.
pub(super) fn take_update_id(next: &mut u32) -> u32 {
    let id = *next;
    *next = next.wrapping_add(1);
    id
}

/// Runs `f` and measures it in microseconds (the control thread's own work, seed 001's T1–T4).
fn timed<T>(f: impl FnOnce() -> T) -> (T, u64) {
    let t = std::time::Instant::now();
    let r = f();
    (r, t.elapsed().as_micros() as u64)
}

/// The driver.
pub struct HipDriver {
    host: LocalHost,
    responder: Responder,
    config: Config,
    local: IpAddr,
    esp_port: u16,
    conf: HipConf,
    assocs: HashMap<HostIdentityTag, Assoc>,
    traps: HashMap<PolicyId, usize>,
    policies: HashMap<HostIdentityTag, PolicyId>,
    next_policy: PolicyId,
    next_rotation_us: u64,
    counters: HipCounters,
    /// With the debug switch: tshark `esp_sa` lines of every SA made, else None.
    exported: Option<Vec<String>>,
    /// Our address the packet being handled was sent to (the configured local one, or with a
    /// wildcard local the one its IP header names).
    here: IpAddr,
    /// Our next UPDATE's ID (RFC 7401 §5.2.16).
    next_update_id: u32,
    next_move_check_us: u64,
    /// The puzzle search's lanes (`[hip] puzzle-threads`).
    solver: solver::Solver,
    /// NOTIFYs: the rate limit's window and the last one received.
    notify: notify_state::NotifyState,
}

impl std::fmt::Debug for HipDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HipDriver").field("hit", &self.host.hit()).finish_non_exhaustive()
    }
}

impl HipDriver {
    /// A driver for `host` at locator `local`, its ESP in UDP on `esp_port`. With
    /// `export_keys` (a debugging switch) it keeps each SA's keys as tshark `esp_sa` lines.
    pub fn new(
        host: LocalHost,
        conf: HipConf,
        local: IpAddr,
        esp_port: u16,
        export_keys: bool,
    ) -> Result<HipDriver, String> {
        let config = Config {
            puzzle_k: conf.puzzle_k,
            esp_suites: conf.esp_suites.clone(),
            ..Config::default()
        };
        let responder = Responder::new(&host, config.clone(), crypto::default_provider())
            .map_err(|e| e.to_string())?;
        let solver = solver::Solver::new(conf.puzzle_threads);
        Ok(HipDriver {
            notify: notify_state::NotifyState::default(),
            solver,
            host,
            responder,
            config,
            local,
            esp_port,
            conf,
            assocs: HashMap::new(),
            traps: HashMap::new(),
            policies: HashMap::new(),
            next_policy: POLICY_BASE,
            next_rotation_us: R1_GENERATION_US,
            counters: HipCounters::default(),
            exported: export_keys.then(Vec::new),
            here: local,
            next_update_id: 1,
            next_move_check_us: 0,
        })
    }

    /// Our HIT.
    pub fn hit(&self) -> HostIdentityTag {
        self.host.hit()
    }

    /// Installs a trap for every known peer.
    pub fn install_traps(&mut self, plane: &mut ControlPlane) {
        let me = self.host.hit();
        let mut specs = Vec::new();
        for (i, p) in self.conf.peers.iter().enumerate() {
            let id = self.next_policy;
            self.next_policy += 1;
            self.traps.insert(id, i);
            self.policies.insert(p.hit, id);
            specs.push((id, install::trap(&me, &p.hit)));
        }
        if let Err(e) = plane.set_policies(specs) {
            log_event!(Level::Warn, "hip-trap-failed", "why" => e.to_string());
        }
    }

    /// Makes the Diffie-Hellman key of every exchange whose I1 just left (the runtime calls
    /// this after sending), so that R1's processing does not wait for it.
    pub fn prepare_keys(&mut self) {
        for a in self.assocs.values_mut() {
            if let State::I1Sent(s) = &mut a.state {
                if let Err(e) = s.prepare_dh() {
                    log_event!(Level::Warn, "hip-dh-failed", "why" => e.to_string());
                }
            }
        }
    }

    /// An acquire: if it is one of our traps and no exchange runs, start one.
    pub fn acquire(&mut self, policy: PolicyId, now_us: u64) -> Vec<Transmit> {
        let Some(&i) = self.traps.get(&policy) else { return Vec::new() };
        let Some(peer) = self.conf.peers.get(i).cloned() else { return Vec::new() };
        if self.assocs.contains_key(&peer.hit) {
            return Vec::new();
        }
        let local = self.source_to(peer.locator);
        match I1Sent::start(&self.host, peer.hit, self.config.clone(), local, peer.locator) {
            Ok(s) => {
                let out = vec![Transmit { to: peer.locator, bytes: s.i1().to_vec() }];
                log_event!(Level::Info, "hip-i1", "peer" => peer.hit.to_string(), "locator" => peer.locator);
                self.assocs.insert(
                    peer.hit,
                    Assoc {
                        locator: peer.locator,
                        local,
                        announcing: None,
                        verifying: None,
                        rekey: None,
                        state: State::I1Sent(s),
                        initiator: true,
                        started_us: now_us,
                        bex_us: None,
                        resend_at_us: now_us + RETRANSMIT_US,
                        tries: 1,
                        r2: None,
                        t2_us: None,
                        t3_us: None,
                        t4_us: None,
                    },
                );
                out
            }
            Err(e) => {
                log_event!(Level::Warn, "hip-start-failed", "peer" => peer.hit.to_string(), "why" => e.to_string());
                Vec::new()
            }
        }
    }

    fn refuse(&mut self, what: &str, from: IpAddr, e: impl std::fmt::Display) {
        self.counters.refused += 1;
        log_event!(Level::Debug, "hip-refused", "packet" => what, "from" => from, "why" => e.to_string());
    }

    /// A HIP packet from `from`.
    pub fn packet(
        &mut self,
        plane: &mut ControlPlane,
        from: IpAddr,
        to: Option<IpAddr>,
        bytes: &[u8],
        now_us: u64,
    ) -> Vec<Transmit> {
        self.here = to.filter(|_| self.local.is_unspecified()).unwrap_or(self.local);
        let (ty, sender) = match Packet::new_checked(bytes) {
            Ok(p) => (p.packet_type(), HostIdentityTag(p.sender_hit())),
            Err(e) => {
                self.refuse("?", from, e);
                return Vec::new();
            }
        };
        let me = self.host.hit();
        match ty {
            PacketType::I1 => match timed(|| self.responder.on_i1(&me, bytes, from, self.here)) {
                (Ok(r1), t) => {
                    self.counters.r1_sent += 1;
                    self.counters.last_t1_us = t;
                    vec![Transmit { to: from, bytes: r1 }]
                }
                (Err(e), _) => {
                    self.refuse("I1", from, e);
                    Vec::new()
                }
            },
            PacketType::R1 => self.r1(sender, from, bytes, now_us),
            PacketType::I2 => self.i2(plane, sender, from, bytes, now_us),
            PacketType::R2 => {
                self.r2(plane, sender, from, bytes, now_us);
                Vec::new()
            }
            PacketType::CLOSE => self.on_close(plane, sender, from, bytes),
            PacketType::UPDATE => self.on_update(plane, sender, from, bytes),
            PacketType::CLOSE_ACK => {
                self.on_close_ack(plane, sender, from, bytes);
                Vec::new()
            }
            PacketType::NOTIFY => {
                self.on_notify(from, bytes);
                Vec::new()
            }
            _ => {
                self.counters.unhandled += 1;
                Vec::new()
            }
        }
    }

    fn r1(
        &mut self,
        sender: HostIdentityTag,
        from: IpAddr,
        bytes: &[u8],
        now_us: u64,
    ) -> Vec<Transmit> {
        let Some(mut a) = self.assocs.remove(&sender) else {
            self.refuse("R1", from, "no exchange with this HIT");
            return Vec::new();
        };
        let mut out = Vec::new();
        a.state = match a.state {
            State::I1Sent(s) => {
                let (r, t) = timed(|| {
                    let solver = &self.solver;
                    let solve = |p: &hip::puzzle::Puzzle, su, i: &_, r: &_, seed: &[u8]| {
                        solver.solve(p, su, i, r, seed)
                    };
                    s.on_r1_solving(
                        &self.host,
                        crypto::default_provider(),
                        bytes,
                        from,
                        self.here,
                        &solve,
                    )
                });
                match r {
                    Ok((s2, work)) => {
                        a.t2_us = Some(t);
                        out.push(Transmit { to: a.locator, bytes: s2.i2().to_vec() });
                        a.resend_at_us = now_us + RETRANSMIT_US;
                        a.tries = 1;
                        log_event!(Level::Debug, "hip-i2", "peer" => sender.to_string(), "puzzle_k" => work.k, "hashes" => work.puzzle_tries);
                        State::I2Sent(s2)
                    }
                    Err(rej) => {
                        self.refuse("R1", from, &rej.error);
                        State::I1Sent(*rej.state)
                    }
                }
            }
            // A late or repeated R1 (our I2 is out, or we are up): nothing to do.
            other => other,
        };
        self.assocs.insert(sender, a);
        out
    }

    fn i2(
        &mut self,
        plane: &mut ControlPlane,
        sender: HostIdentityTag,
        from: IpAddr,
        bytes: &[u8],
        now_us: u64,
    ) -> Vec<Transmit> {
        // A repeated I2 (our R2 was lost) gets the same R2 again (§6.9).
        if let Some(Assoc { r2: Some((i2, r2)), .. }) = self.assocs.get(&sender) {
            if i2.as_slice() == bytes {
                return vec![Transmit { to: from, bytes: r2.clone() }];
            }
        }
        // Only known peers, unless `accept = "any"`: checked on the header, before any work.
        if !self.conf.accept_any && !self.conf.peers.iter().any(|p| p.hit == sender) {
            self.counters.unknown_peer += 1;
            self.refuse(
                "I2",
                from,
                format!("HIT {sender} is not a [[hip.peer]] (accept = \"known\")"),
            );
            return self.notify(sender, from, NotifyType::BLOCKED_BY_POLICY, now_us);
        }
        let (r, t3) = timed(|| self.responder.on_i2(&self.host, bytes, from, self.here));
        match r {
            Ok((r2, e)) => {
                // A new exchange with a peer we had (it restarted, or both sides started at
                // once, §6.7): the new pair replaces the old one.
                let old = self.assocs.remove(&sender);
                let Some(state) = self.establish(plane, e, from) else { return Vec::new() };
                if let Some(Assoc {
                    state:
                        State::Established { in_key, out_key, .. }
                        | State::Closing { in_key, out_key, .. },
                    ..
                }) = old
                {
                    if let Err(err) = plane.remove(&[in_key], &[out_key]) {
                        log_event!(Level::Warn, "hip-remove-failed", "peer" => sender.to_string(), "why" => err.to_string());
                    }
                }
                self.counters.established_responder += 1;
                self.assocs.insert(
                    sender,
                    Assoc {
                        locator: from,
                        local: self.here,
                        announcing: None,
                        verifying: None,
                        rekey: None,
                        state,
                        initiator: false,
                        started_us: now_us,
                        bex_us: None,
                        resend_at_us: u64::MAX,
                        tries: 0,
                        r2: Some((bytes.to_vec(), r2.clone())),
                        t2_us: None,
                        t3_us: Some(t3),
                        t4_us: None,
                    },
                );
                vec![Transmit { to: from, bytes: r2 }]
            }
            Err(err) => {
                self.refuse("I2", from, err);
                Vec::new()
            }
        }
    }

    fn r2(
        &mut self,
        plane: &mut ControlPlane,
        sender: HostIdentityTag,
        from: IpAddr,
        bytes: &[u8],
        now_us: u64,
    ) {
        let Some(mut a) = self.assocs.remove(&sender) else {
            self.refuse("R2", from, "no exchange with this HIT");
            return;
        };
        a.state = match a.state {
            State::I2Sent(s) => match timed(|| s.on_r2(bytes, from, self.here)) {
                (Ok(e), t4) => match self.establish(plane, e, a.locator) {
                    Some(st) => {
                        a.t4_us = Some(t4);
                        a.bex_us = Some(now_us.saturating_sub(a.started_us));
                        a.resend_at_us = u64::MAX;
                        self.counters.established_initiator += 1;
                        st
                    }
                    None => return,
                },
                (Err(rej), _) => {
                    self.refuse("R2", from, &rej.error);
                    State::I2Sent(*rej.state)
                }
            },
            other => other,
        };
        self.assocs.insert(sender, a);
    }

    /// Installs the SA pair and points the policy between the HITs at it.
    fn establish(
        &mut self,
        plane: &mut ControlPlane,
        e: Established,
        locator: IpAddr,
    ) -> Option<State> {
        let peer = e.peer.hit();
        let (inb, outb) = install::specs(&e, SocketAddr::new(locator, self.esp_port));
        let (in_key, out_key) = (in_key_of(&inb.params), out_key_of(&outb.params));
        let id = *self.policies.entry(peer).or_insert_with(|| {
            let id = self.next_policy;
            self.next_policy += 1;
            id
        });
        let policy = install::policy(&e.local_hit, &peer, out_key, in_key);
        // SAs and policy in one envelope: one acknowledgement before R2 leaves (Responder) or
        // the first ESP packet can (Initiator).
        let r = plane.install_then(vec![inb], vec![outb], false, vec![(id, policy)]);
        if let Err(err) = r {
            log_event!(Level::Warn, "hip-install-failed", "peer" => peer.to_string(), "why" => err.to_string());
            return None;
        }
        if let Some(lines) = &mut self.exported {
            // On the wire: the locators (the HITs never travel, RFC 7402 §5).
            let k = &e.esp;
            lines.extend(crypto::wireshark::esp_sa_record(
                locator, self.here, k.spi_in, k.suite, &k.enc_in, &k.auth_in,
            ));
            lines.extend(crypto::wireshark::esp_sa_record(
                self.here,
                locator,
                k.spi_out,
                k.suite,
                &k.enc_out,
                &k.auth_out,
            ));
        }
        log_event!(Level::Info, "hip-established", "peer" => peer.to_string(), "locator" => locator, "spi_in" => format!("{:08x}", e.esp.spi_in), "spi_out" => format!("{:08x}", e.esp.spi_out));
        Some(State::Established { est: Box::new(e), in_key, out_key })
    }

    /// Retransmissions and the R1 generation.
    pub fn tick(&mut self, plane: &mut ControlPlane, now_us: u64) -> Vec<Transmit> {
        if now_us >= self.next_rotation_us {
            self.next_rotation_us = now_us + R1_GENERATION_US;
            if let Err(e) = self.responder.rotate(&self.host) {
                log_event!(Level::Warn, "hip-r1-rotate-failed", "why" => e.to_string());
            }
        }
        let mut out = self.moves(now_us);
        out.extend(self.rekey_timers(now_us));
        let mut gone = Vec::new();
        for (hit, a) in &mut self.assocs {
            if now_us < a.resend_at_us {
                continue;
            }
            let packet = match &a.state {
                State::I1Sent(s) => s.i1().to_vec(),
                State::I2Sent(s) => s.i2().to_vec(),
                State::Closing { close, .. } => close.clone(),
                State::Established { .. } => continue,
            };
            if a.tries >= TRIES {
                gone.push(*hit);
                continue;
            }
            a.tries += 1;
            a.resend_at_us = now_us + (RETRANSMIT_US << (a.tries - 1).min(6));
            out.push(Transmit { to: a.locator, bytes: packet });
        }
        for hit in gone {
            self.counters.timed_out += 1;
            log_event!(Level::Warn, "hip-timeout", "peer" => hit.to_string());
            // A CLOSE nobody acknowledged still ends the association (§6.14: after the
            // retransmissions, CLOSING goes to UNASSOCIATED).
            if matches!(self.assocs.get(&hit).map(|a| &a.state), Some(State::Closing { .. })) {
                self.teardown(plane, hit, "close-timeout");
            } else {
                self.assocs.remove(&hit);
            }
        }
        out
    }

    /// tshark `esp_sa` lines of every SA made, if the node was started to export them.
    pub fn wireshark_keys(&self) -> Option<&[String]> {
        self.exported.as_deref()
    }
}
