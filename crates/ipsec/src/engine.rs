//! The engine: SAD (inbound SAs by SPI and protocol), outbound SAs referenced from the SPD, and the
//! per-packet and batch entry points. Every rejection is counted by [`DropReason`].

use crate::admitted;
use crate::buf::PacketBuf;
use crate::drop::{DropCounters, DropReason};
use crate::lifetime::SaEvent;
use crate::sa::{Protocol, SaError, SecurityAssociation};
use crate::sad::{Sad, SadEntry, SadKey, sad_key};
use crate::spd::{Action, FlowKey};
use crate::spd_table::{SpdTable, Verdict};
use crate::types::{SeqNum, Spi, Time};
use crypto::Provider;
use wire::{IpLayout, proto};

/// How many nested ESP/AH headers inbound processing unwraps (AH+ESP is two).
const MAX_NESTING: usize = 3;

#[path = "engine_batch.rs"]
mod batch;
/// How many packets ahead the batch calls warm an SA's key (`engine_batch.rs`); benches that
/// model the engine's prefetching use the same lead.
pub use batch::AHEAD as PREFETCH_LEAD;
#[path = "engine_tables.rs"]
mod tables;
pub use crate::types::Prefetch;

/// Handle of an outbound SA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SaHandle(pub usize);

/// Errors of SA management (not of packets, which get a [`DropReason`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// The SA could not be built.
    #[error(transparent)]
    Sa(#[from] SaError),
    /// An inbound SA with this SPI and protocol exists.
    #[error("an inbound {proto} SA with spi {spi} exists already")]
    DuplicateSpi {
        /// The SPI.
        spi: Spi,
        /// "esp" or "ah".
        proto: &'static str,
    },
    /// A policy names an SA handle that does not exist.
    #[error("policy names outbound SA #{0}, which does not exist")]
    UnknownSa(usize),
    /// A protect policy with no SA would pass packets unprotected.
    #[error("a protect policy needs at least one SA")]
    EmptyBundle,
    /// No SA or policy with this key or id.
    #[error("no such {0}")]
    NotFound(&'static str),
    /// The inbound SA table is full (its slot numbers are 32 bits).
    #[error("no room for another inbound SA")]
    TooManySas,
}

/// Default least time between two acquires raised by one policy.
pub const DEFAULT_ACQUIRE_INTERVAL: Time = Time(1_000_000);

fn addr_of(b: &[u8]) -> Option<std::net::IpAddr> {
    match b.len() {
        4 => <[u8; 4]>::try_from(b).ok().map(std::net::IpAddr::from),
        16 => <[u8; 16]>::try_from(b).ok().map(std::net::IpAddr::from),
        _ => None,
    }
}

/// What happened to a packet that was not dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Processed {
    /// Outbound: protected by one or more SAs; `sa` is the outermost (last applied), whose
    /// destination the packet goes to.
    Protected {
        /// The outermost SA of the bundle.
        sa: SaHandle,
    },
    /// Outbound: the SPD said bypass.
    Bypassed,
    /// Inbound: IPsec removed; the buffer holds the IP packet.
    Decapsulated {
        /// SPI of the outermost SA.
        spi: Spi,
        /// Its sequence number.
        seq: SeqNum,
    },
}

/// Packet and byte totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Packets protected.
    pub out_packets: u64,
    /// Packets bypassed.
    pub bypassed: u64,
    /// Packets decapsulated.
    pub in_packets: u64,
}

/// The IPsec engine of one worker.
#[derive(Debug)]
pub struct Engine {
    provider: &'static dyn Provider,
    outbound: Vec<Option<SecurityAssociation>>,
    inbound: Vec<Option<SecurityAssociation>>,
    /// Inbound SAs by (SPI, protocol): a direct-mapped table in front of an index hashed
    /// with a random key, so that a peer choosing SPIs cannot make lookups collide; a batch
    /// prefetches their slots (`sad`).
    sad: Sad,
    spd: SpdTable,
    /// Inbound policy (RFC 4301 §5.2): which SAs may carry which decapsulated traffic, and which
    /// cleartext may enter. Empty: no inbound check (the pcap tools' use).
    spd_in: SpdTable,
    /// Slots of removed SAs, reused by the next install once no policy names them.
    free_out: Vec<usize>,
    free_in: Vec<usize>,
    /// Least time between two acquires of one policy.
    acquire_interval: Time,
    counters: DropCounters,
    totals: Totals,
    events: Vec<SaEvent>,
    /// Last inbound lookup: consecutive packets of one SA share one lookup.
    last_in: Option<(SadKey, usize)>,
    /// `outbound_batch`'s per-packet lookups (kept for their capacity).
    batch_found: Vec<Option<(IpLayout, crate::spd_table::Probe, Option<usize>)>>,
    /// The packets of `outbound_batch` whose policy lies beyond its index's home slot
    /// (`SpdTable::prefetch_candidates`; kept for its capacity).
    batch_displaced: Vec<usize>,
    /// `inbound_batch`'s per-packet SAD lookups (kept for their capacity).
    batch_found_in: Vec<Option<(SadKey, SadEntry)>>,
    /// `inbound_batch`'s keys (kept for its capacity).
    batch_keys_in: Vec<Option<SadKey>>,
    /// The packets of `inbound_batch` whose SA is not in its direct slot, with their keys and
    /// hashes (`Sad`; kept for its capacity).
    batch_displaced_in: Vec<(usize, SadKey, u64)>,
}

impl Engine {
    /// An engine with no SAs and an empty SPD (everything outbound is discarded).
    pub fn new(provider: &'static dyn Provider) -> Engine {
        Engine {
            provider,
            outbound: Vec::new(),
            inbound: Vec::new(),
            sad: Sad::default(),
            spd: SpdTable::default(),
            spd_in: SpdTable::default(),
            free_out: Vec::new(),
            free_in: Vec::new(),
            acquire_interval: DEFAULT_ACQUIRE_INTERVAL,
            counters: DropCounters::default(),
            totals: Totals::default(),
            events: Vec::new(),
            last_in: None,
            batch_found: Vec::new(),
            batch_displaced: Vec::new(),
            batch_found_in: Vec::new(),
            batch_keys_in: Vec::new(),
            batch_displaced_in: Vec::new(),
        }
    }

    /// Sets the least time between two acquires of one policy.
    pub fn set_acquire_interval(&mut self, t: Time) {
        self.acquire_interval = t;
    }

    /// Checks a cleartext packet that arrived from the network against the inbound SPD: only
    /// `Bypass` admits it (RFC 4301 §5.2: traffic that policy wants protected must not enter in
    /// clear). Counted like every other drop.
    pub fn check_clear(&mut self, buf: &PacketBuf) -> Result<(), DropReason> {
        let r = match IpLayout::parse(buf.as_slice()) {
            Err(_) => Err(DropReason::Malformed),
            Ok(l) => match self.spd_in.lookup(buf.as_slice(), &l).map(|(_, a)| a) {
                Some(Action::Bypass) => Ok(()),
                Some(Action::Discard) => Err(DropReason::PolicyDiscard),
                Some(Action::Protect(_)) => Err(DropReason::InboundPolicyMismatch),
                None => Err(DropReason::NoPolicy),
            },
        };
        if let Err(d) = r {
            self.counters.count(d);
        }
        r
    }

    /// RFC 4301 §5.2 step 4: a decapsulated packet must meet an inbound policy that admits the
    /// SA it came in. An SA's packets are mostly one flow, so each SA remembers the last flow it
    /// let through (the fields the selectors read) and the SPD generation then; the same flow
    /// under the same SPD meets the same entry, and skips the lookup — which, with thousands
    /// of peers, costs cache misses in the SPD's maps, slots and SA lists.
    fn check_inbound_policy(&mut self, buf: &PacketBuf, sa: usize) -> Result<(), DropReason> {
        if self.spd_in.is_empty() {
            return Ok(());
        }
        let p = buf.as_slice();
        let l = IpLayout::parse(p).map_err(|_| DropReason::InnerMalformed)?;
        let generation = self.spd_in.generation();
        let Some(s) = self.inbound.get_mut(sa).and_then(Option::as_mut) else {
            return Err(DropReason::NoSa);
        };
        // IPv4: the memo in line 1 (`admitted`'s module); IPv6: the full key in line 3.
        let v4 = admitted::memo_v4(p, &l, generation);
        let v6 = match v4 {
            Some(m) if s.tail.admits(&m) => return Ok(()),
            Some(_) => None,
            None => {
                let memo = Some((generation, FlowKey::of(p, &l)));
                if s.admitted == memo {
                    return Ok(());
                }
                memo
            }
        };
        match self.spd_in.lookup(p, &l).map(|(_, a)| a) {
            // An empty list admits any inbound SA (`set_inbound_policy`).
            Some(Action::Protect(hs)) if hs.is_empty() || hs.contains(&sa) => {
                match v4 {
                    Some(m) => s.tail.remember(m),
                    None => s.admitted = v6,
                }
                Ok(())
            }
            _ => Err(DropReason::InboundPolicyMismatch),
        }
    }

    /// True if events wait to be drained (cheap enough to ask after every batch).
    pub fn has_events(&self) -> bool {
        !self.events.is_empty()
    }

    /// Drop counters.
    pub fn counters(&self) -> &DropCounters {
        &self.counters
    }

    /// Packet totals.
    pub fn totals(&self) -> Totals {
        self.totals
    }

    /// Takes the lifetime events gathered so far.
    pub fn drain_events(&mut self) -> Vec<SaEvent> {
        std::mem::take(&mut self.events)
    }

    /// Re-evaluates time-based lifetimes of every SA (the driver calls this from a timer).
    pub fn poll(&mut self, now: Time) {
        for sa in self.outbound.iter_mut().chain(self.inbound.iter_mut()).flatten() {
            sa.poll(now);
            if let Some(e) = sa.take_event() {
                self.events.push(e);
            }
        }
    }

    /// Applies the outbound SAs `bundle`, in order, to the packet in `buf`.
    pub fn protect_with(
        &mut self,
        bundle: &[SaHandle],
        buf: &mut PacketBuf,
        now: Time,
    ) -> Result<Processed, DropReason> {
        let r = Self::protect(
            &mut self.outbound,
            &mut self.events,
            bundle.iter().map(|h| h.0),
            buf,
            now,
        );
        self.tally(r)
    }

    fn protect(
        outbound: &mut [Option<SecurityAssociation>],
        events: &mut Vec<SaEvent>,
        bundle: impl Iterator<Item = usize>,
        buf: &mut PacketBuf,
        now: Time,
    ) -> Result<Processed, DropReason> {
        let mut last = None;
        for h in bundle {
            last = Some(h);
            let sa = outbound.get_mut(h).and_then(Option::as_mut).ok_or(DropReason::NoSa)?;
            let r = match sa.protocol {
                Protocol::Esp(_) => sa.esp_seal(buf, now),
                Protocol::Ah(_) => sa.ah_seal(buf, now),
            };
            if let Some(e) = sa.take_event() {
                events.push(e);
            }
            r?;
        }
        // An empty bundle protects nothing: fail closed rather than pass the packet in clear.
        last.map(|h| Processed::Protected { sa: SaHandle(h) }).ok_or(DropReason::NoSa)
    }

    fn tally(&mut self, r: Result<Processed, DropReason>) -> Result<Processed, DropReason> {
        match r {
            Ok(Processed::Protected { .. }) => self.totals.out_packets += 1,
            Ok(Processed::Bypassed) => self.totals.bypassed += 1,
            Ok(Processed::Decapsulated { .. }) => self.totals.in_packets += 1,
            Err(d) => self.counters.count(d),
        }
        r
    }

    /// Outbound processing: SPD lookup, then protect, bypass or discard.
    pub fn outbound(&mut self, buf: &mut PacketBuf, now: Time) -> Result<Processed, DropReason> {
        let r = self.outbound_inner(buf, now);
        self.tally(r)
    }

    fn outbound_inner(&mut self, buf: &mut PacketBuf, now: Time) -> Result<Processed, DropReason> {
        let layout = IpLayout::parse(buf.as_slice()).map_err(|_| DropReason::Malformed)?;
        let found = self.spd.find(buf.as_slice(), &layout);
        self.outbound_found(buf, &layout, found, now)
    }

    /// Outbound processing once the SPD lookup is done: `found` is the entry
    /// [`SpdTable::lookup`] returned for this packet (`None`: no policy matched).
    fn outbound_found(
        &mut self,
        buf: &mut PacketBuf,
        layout: &IpLayout,
        found: Option<usize>,
        now: Time,
    ) -> Result<Processed, DropReason> {
        let (i, r) = match found.and_then(|i| self.spd.verdict(i).map(|v| (i, v))) {
            None => return Err(DropReason::NoPolicy),
            Some((_, Verdict::Discard)) => return Err(DropReason::PolicyDiscard),
            Some((_, Verdict::Bypass)) => return Ok(Processed::Bypassed),
            Some((i, Verdict::Protect(sas))) => {
                (i, Self::protect(&mut self.outbound, &mut self.events, sas.iter(), buf, now))
            }
        };
        if r == Err(DropReason::NoSa) {
            // RFC 4301 §4.4.1.1: ask the key manager for the SA; the packet itself is dropped
            // (fail closed), and a policy asks at most once per `acquire_interval`.
            if let Some(policy) = self.spd.acquire_due(i, now, self.acquire_interval) {
                let (s, d) = layout.addrs(buf.as_slice());
                if let (Some(src), Some(dst)) = (addr_of(s), addr_of(d)) {
                    let proto = layout.next_header;
                    self.events.push(SaEvent::Acquire { policy, src, dst, proto });
                }
            }
        }
        r
    }

    /// Inbound processing: removes every ESP/AH layer addressed to an SA in the SAD.
    pub fn inbound(&mut self, buf: &mut PacketBuf, now: Time) -> Result<Processed, DropReason> {
        let r = self.inbound_layers(buf, None, now).and_then(|(spi, seq, sa)| {
            self.check_inbound_policy(buf, sa)?;
            Ok(Processed::Decapsulated { spi, seq })
        });
        self.tally(r)
    }

    /// [`Engine::inbound`] for a packet whose IP header is in `buf` and whose ESP/AH part is
    /// still in `src` (a datagram in a receive buffer): `buf`'s window is the header followed by
    /// room for `src` (its bytes need not be there; the header's length field covers both).
    /// Only the headers are copied into `buf`; an AEAD decrypts from `src` straight into it,
    /// which saves the receive path one copy of every byte. Same outcomes and counters as
    /// copying `src` in and calling `inbound`.
    pub fn inbound_from(
        &mut self,
        buf: &mut PacketBuf,
        src: &[u8],
        now: Time,
    ) -> Result<Processed, DropReason> {
        let r = self.inbound_from_inner(buf, src, now).and_then(|(spi, seq, sa)| {
            self.check_inbound_policy(buf, sa)?;
            Ok(Processed::Decapsulated { spi, seq })
        });
        self.tally(r)
    }

    fn inbound_from_inner(
        &mut self,
        buf: &mut PacketBuf,
        src: &[u8],
        now: Time,
    ) -> Result<(Spi, SeqNum, usize), DropReason> {
        /// Bytes of `src` copied up front: any ESP header with its IV (8 + 16) or AH header
        /// up to its SPI, which the lookups read.
        const PREFIX: usize = 32;
        let h = IpLayout::parse(buf.as_slice()).map_err(|_| DropReason::Malformed)?.header_len;
        let room = buf.as_mut_slice().get_mut(h..).ok_or(DropReason::Malformed)?;
        if room.len() != src.len() {
            return Err(DropReason::Malformed);
        }
        let k = src.len().min(PREFIX);
        room[..k].copy_from_slice(&src[..k]);
        self.inbound_layers(buf, Some(src), now)
    }

    /// Removes the ESP/AH layers; `src`, if given, holds the outermost layer's bytes (see
    /// [`Engine::inbound_from`]), which only ESP reads from there.
    fn inbound_layers(
        &mut self,
        buf: &mut PacketBuf,
        mut src: Option<&[u8]>,
        now: Time,
    ) -> Result<(Spi, SeqNum, usize), DropReason> {
        let mut first: Option<(Spi, SeqNum, usize)> = None;
        for _ in 0..MAX_NESTING {
            let layout = IpLayout::parse(buf.as_slice()).map_err(|_| match first {
                None => DropReason::Malformed,
                Some(_) => DropReason::InnerMalformed,
            })?;
            let spi_at = match layout.next_header {
                proto::ESP => layout.header_len,
                proto::AH => layout.header_len + 4,
                _ => {
                    return match first {
                        None => Err(DropReason::NotIpsec),
                        Some(f) => Ok(f),
                    };
                }
            };
            if layout.is_fragment {
                return Err(DropReason::Fragment);
            }
            let spi = buf
                .as_slice()
                .get(spi_at..spi_at + 4)
                .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
                .ok_or(DropReason::Truncated)?;
            let key = sad_key(spi, layout.next_header);
            let idx = match self.last_in {
                Some((k, i)) if k == key => i,
                _ => {
                    let i = self.sad.get(&key).ok_or(DropReason::NoSa)?.idx as usize;
                    self.last_in = Some((key, i));
                    i
                }
            };
            let sa = self.inbound.get_mut(idx).and_then(Option::as_mut).ok_or(DropReason::NoSa)?;
            let r = match (sa.protocol, src.take()) {
                (Protocol::Esp(_), s) => sa.esp_open_from(buf, &layout, s, now),
                (Protocol::Ah(_), Some(s)) => {
                    // AH authenticates the whole packet in place: bring it all in first.
                    match buf.as_mut_slice().get_mut(layout.header_len..) {
                        Some(room) if room.len() == s.len() => room.copy_from_slice(s),
                        _ => return Err(DropReason::Malformed),
                    }
                    sa.ah_open(buf, &layout, now)
                }
                (Protocol::Ah(_), None) => sa.ah_open(buf, &layout, now),
            };
            if let Some(e) = sa.take_event() {
                self.events.push(e);
            }
            let opened = r?;
            first.get_or_insert((Spi(spi), opened.seq, idx));
            if sa.mode == crate::sa::Mode::Tunnel {
                break;
            }
        }
        let first = first.ok_or(DropReason::NestedTooDeep)?;
        // Transport mode that still leaves ESP/AH after MAX_NESTING layers.
        let l = IpLayout::parse(buf.as_slice()).map_err(|_| DropReason::InnerMalformed)?;
        if matches!(l.next_header, proto::ESP | proto::AH) && self.last_mode_transport() {
            return Err(DropReason::NestedTooDeep);
        }
        Ok(first)
    }

    fn last_mode_transport(&self) -> bool {
        self.last_in
            .and_then(|(_, i)| self.inbound.get(i).and_then(Option::as_ref))
            .is_some_and(|sa| sa.mode == crate::sa::Mode::Transport)
    }
}
