//! The Security Association (RFC 4301 §4.4.2): cold parameters, the keyed transform built once,
//! and hot per-packet state (outbound sequence counter, replay window, usage). Keys live only
//! inside the provider's key objects and are zeroized when the SA is dropped.

use crate::admitted::Tail;
use crate::drop::DropReason;
use crate::lifetime::{Due, Lifetime, SaEvent, Usage};
use crate::replay::ReplayWindow;
use crate::types::{SeqNum, Spi, Time};
use crypto::{Aead, BlockCipher, EncrAlg, EspSuite, IntegAlg, Mac, Provider};
use std::net::IpAddr;
use wire::{IpVersion, proto};
use zeroize::Zeroizing;

/// Encapsulation mode (RFC 4301 §4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// A new outer IP header between `src` and `dst` of the SA.
    Tunnel,
    /// ESP/AH inserted after the original IP header.
    Transport,
}

/// Which IPsec protocol and algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// ESP with an encryption (+ integrity) suite.
    Esp(EspSuite),
    /// AH with an integrity algorithm.
    Ah(IntegAlg),
}

impl Protocol {
    /// IP protocol number.
    pub fn number(self) -> u8 {
        match self {
            Protocol::Esp(_) => proto::ESP,
            Protocol::Ah(_) => proto::AH,
        }
    }
    /// "esp" or "ah".
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Esp(_) => "esp",
            Protocol::Ah(_) => "ah",
        }
    }
}

/// Everything needed to build an SA.
#[derive(Debug, Clone)]
pub struct SaParams {
    /// SPI chosen by the receiver.
    pub spi: Spi,
    /// ESP or AH and their algorithms.
    pub protocol: Protocol,
    /// Tunnel or transport.
    pub mode: Mode,
    /// Source address: the tunnel's outer source, or the sending host.
    pub src: IpAddr,
    /// Destination address: the tunnel's outer destination, or the receiving host.
    pub dst: IpAddr,
    /// Encryption key; for AEADs the last 4 bytes are the salt (RFC 4106 §8.1).
    pub enc_key: Zeroizing<Vec<u8>>,
    /// Integrity key; for GMAC the last 4 bytes are the salt (RFC 4543 §6).
    pub auth_key: Zeroizing<Vec<u8>>,
    /// Extended (64-bit) sequence numbers (RFC 4303 §2.2.1).
    pub esn: bool,
    /// Replay window size; 0 disables the check.
    pub replay_window: u32,
    /// Soft limits (events for rekeying).
    pub soft: Lifetime,
    /// Hard limits (the SA stops).
    pub hard: Lifetime,
}

/// Why an SA could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SaError {
    /// SPI 0..=255 are reserved.
    #[error("spi {0} is reserved (must be > 255)")]
    ReservedSpi(Spi),
    /// A key has the wrong length.
    #[error("{field} is {got} bytes; {alg} needs {want}")]
    KeyLength {
        /// `enc_key` or `auth_key`.
        field: &'static str,
        /// The algorithm.
        alg: String,
        /// Supplied length.
        got: usize,
        /// Required length.
        want: usize,
    },
    /// Tunnel endpoints of different IP versions.
    #[error("src {src} and dst {dst} are of different IP versions")]
    MixedVersions {
        /// Source.
        src: IpAddr,
        /// Destination.
        dst: IpAddr,
    },
    /// The replay window size is out of range.
    #[error(transparent)]
    Window(#[from] crate::replay::BadWindowSize),
    /// AH with no integrity algorithm.
    #[error("ah needs an integrity algorithm")]
    AhWithoutInteg,
    /// The crypto provider refused the key.
    #[error("crypto provider: {0}")]
    Crypto(#[from] crypto::CryptoError),
}

/// The keyed transform, built once per SA.
#[derive(Debug)]
pub enum Transform {
    /// ESP with an AEAD; nonce = salt || 64-bit IV (RFC 4106 §4).
    EspAead {
        /// The keyed AEAD.
        aead: Box<dyn Aead>,
        /// Nonce salt.
        salt: [u8; 4],
    },
    /// ESP with a CBC cipher and (unless confidentiality-only) an HMAC, boxed together so
    /// that this enum stays 24 bytes and line 1 of the SA has room for an IPv4 outer header
    /// (`SecurityAssociation::outer_v4`).
    EspCbc(Box<CbcKeys>),
    /// ESP with NULL encryption (RFC 2410) and an HMAC.
    EspNull {
        /// The keyed MAC.
        mac: Box<dyn Mac>,
    },
    /// AH with an HMAC.
    AhHmac {
        /// The keyed MAC.
        mac: Box<dyn Mac>,
    },
    /// AH with AES-GMAC (RFC 4543 §4).
    AhGmac {
        /// The keyed AEAD used with empty plaintext.
        aead: Box<dyn Aead>,
        /// Nonce salt.
        salt: [u8; 4],
    },
}

/// The keyed parts of a CBC transform (`Transform::EspCbc`).
#[derive(Debug)]
pub struct CbcKeys {
    /// The keyed cipher.
    pub cipher: Box<dyn BlockCipher>,
    /// The keyed MAC, if any.
    pub mac: Option<Box<dyn Mac>>,
}

/// A Security Association: parameters, transform and per-packet state.
///
/// Laid out for the per-packet path (`repr(C)` keeps the order): with thousands of SAs each
/// packet meets a cold SA, and every cache line it touches is a miss. Line 0 holds what every
/// packet writes (counters, the lifetime thresholds), line 1 what it reads (the keyed
/// transform, SPI, lengths, mode, and per direction an IPv4 tunnel's outer addresses or an
/// IPv4 flow's inbound policy memo), line 2 the replay window, line 3 the memo of an IPv6
/// flow, line 4 the outer header template, which only an IPv6 tunnel reads: a sealed packet
/// touches two lines of its SA (three through an IPv6 tunnel), an opened one three (four for
/// an IPv6 flow; eight when the parameters led the struct). The parameters no
/// packet reads (addresses, the lifetimes themselves, pending event, AH-GMAC's scratch) come
/// after them (`Cold`). Inline rather than boxed: an allocation per SA between the key
/// schedules the crypto library allocates spreads those out, and in `bench sas` sealing and
/// opening were a few ns slower with it. The const assertions below keep this true.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct SecurityAssociation {
    // Line 0: written by every packet.
    /// Last sequence number sent (outbound use). [`SHARED`] when the numbers come from
    /// `Cold::shared_seq` instead: a value no SA reaches, so that the one test every packet
    /// makes (`seq_out >= max`) sends a shared SA down the cold path, where it takes its number
    /// from the shared counter, and the line every packet writes gains no field.
    pub(crate) seq_out: u64,
    pub(crate) usage: Usage,
    /// When the lifetimes must next be evaluated (folded from `Cold::soft`/`hard`).
    pub(crate) due: Due,
    // Line 1: read by every packet.
    pub(crate) transform: Transform,
    pub(crate) spi: Spi,
    pub(crate) protocol: Protocol,
    pub(crate) mode: Mode,
    pub(crate) esn: bool,
    /// The outer (tunnel) or host addresses are IPv4.
    pub(crate) v4: bool,
    /// An event waits in `Cold::event` (so a packet checks this byte, not the event).
    pub(crate) has_event: bool,
    /// Explicit IV length (ESP) and ICV length; padding alignment (all below 256).
    pub(crate) iv_len: u8,
    pub(crate) icv_len: u8,
    pub(crate) pad_align: u8,
    pub(crate) outer_len: u8,
    /// Cache lines of the expanded key from `tail.key_at()` (`key_lines`).
    pub(crate) key_nlines: u8,
    /// Where `Option<Self>` keeps its tag (`Live`): in this line, which every packet reads.
    pub(crate) live: crate::types::Live,
    /// Sealing: an IPv4 SA's outer source and destination addresses, all an IPv4 tunnel
    /// header takes besides constants (`outer_v4_header`; here, in the line every packet
    /// reads, an IPv4 seal reads no further line of its SA: the template in line 4 was one in
    /// six of the lines sealing fetched beside the cipher's key at 10,000 SAs in
    /// `hipsec bench sas --sas 1,10000`), then where the expanded key starts (`key_lines`; read two packets ahead,
    /// from this line that an earlier prefetch brought in, to prefetch the key).
    /// Opening: the last IPv4 flow the inbound policy admitted (`admitted`'s module).
    pub(crate) tail: Tail,
    // Line 2: read by opening (64 bytes, 64-aligned).
    /// Replay window (inbound use).
    pub(crate) replay: ReplayWindow,
    // Line 3: read by opening an IPv6 flow; then the provider, which only CBC's random IVs
    // call.
    /// Inbound: the last IPv6 flow the inbound policy check let through on this SA, and the
    /// inbound SPD's generation then (`Engine::inbound`); an IPv4 one is in `tail`.
    pub(crate) admitted: Option<(u64, crate::spd::FlowKey)>,
    pub(crate) provider: &'static dyn Provider,
    // Line 4: read by sealing through an IPv6 tunnel.
    /// Outer header template for tunnel mode (length and checksum filled per packet); an
    /// IPv4 one is built from `outer_v4` instead.
    pub(crate) outer: [u8; 40],
    // Lines 4 (after `outer`) to 7: what no packet reads.
    pub(crate) cold: Cold,
}

/// What no packet reads: kept out of the SA's hot lines.
#[derive(Debug)]
pub(crate) struct Cold {
    pub(crate) src: IpAddr,
    pub(crate) dst: IpAddr,
    pub(crate) soft: Lifetime,
    pub(crate) hard: Lifetime,
    pub(crate) event: Option<SaEvent>,
    /// AH-GMAC's contiguous AAD copy (empty for every other transform).
    pub(crate) scratch: Vec<u8>,
    /// The last sequence number handed out, shared by every copy of this outbound SA.
    pub(crate) shared_seq: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
}

// The layout the comment on `SecurityAssociation` promises.
const _: () = {
    use std::mem::{offset_of, size_of};
    type Sa = SecurityAssociation;
    assert!(offset_of!(Sa, due) + size_of::<Due>() <= 64);
    assert!(offset_of!(Sa, transform) >= 64 && offset_of!(Sa, outer_len) < 128);
    assert!(offset_of!(Sa, tail) >= 64 && offset_of!(Sa, tail) + size_of::<Tail>() <= 128);
    assert!(offset_of!(Sa, replay) == 128 && size_of::<ReplayWindow>() == 64);
    assert!(offset_of!(Sa, admitted) == 192 && offset_of!(Sa, provider) + 16 <= 256);
    assert!(offset_of!(Sa, outer) == 256 && size_of::<Sa>() <= 512);
    // `Option<Sa>` keeps its tag in a niche, so an SA sits at its slot's own address
    // (`prefetch_slot`).
    assert!(size_of::<Option<Sa>>() == size_of::<Sa>());
};

/// `seq_out` of an SA whose sequence numbers are shared (see the field).
const SHARED: u64 = u64::MAX;

fn split_salt(key: &[u8], key_len: usize) -> ([u8; 4], &[u8]) {
    let mut salt = [0u8; 4];
    let (k, s) = key.split_at(key_len);
    salt.copy_from_slice(s);
    (salt, k)
}

fn check_len(field: &'static str, alg: String, got: usize, want: usize) -> Result<(), SaError> {
    if got == want { Ok(()) } else { Err(SaError::KeyLength { field, alg, got, want }) }
}

impl SecurityAssociation {
    /// Starts fetching the first `lines` lines of the SA in `slot` (sealing reads 2, opening
    /// [`Self::open_lines`]),
    /// without reading the slot: `prefetch` is the CPU's prefetch instruction
    /// (`types::Prefetch`), given addresses inside the slot only (the line offsets are
    /// the layout asserted above). Taking the slot rather than the SA matters: telling `Some`
    /// from `None` reads the slot's tag, and that read would wait for the very miss this is
    /// meant to start early. The tag is `live`, in line 1, which both directions read anyway
    /// (before it, the compiler kept it in the replay window's line 2, and sealing fetched
    /// that line for nothing but the tag).
    pub(crate) fn prefetch_slot(
        slot: &Option<Self>,
        prefetch: impl crate::types::Prefetch,
        lines: u8,
    ) {
        let base = std::ptr::from_ref(slot).cast::<u8>();
        for l in 0..usize::from(lines.min(4)) {
            prefetch(base.wrapping_add(64 * l));
        }
    }

    /// The lines opening reads, as far as the SA can tell before a packet is decrypted: lines
    /// 0–2, and line 3 (the memo of an IPv6 flow) when the inner packets are likely IPv6. The
    /// outer family is the guess: right for transport mode, and for tunnels that carry their
    /// own family. A tunnel carrying the other family costs one line, prefetched for nothing
    /// (IPv4 inside IPv6) or read without a prefetch (IPv6 inside IPv4).
    pub(crate) fn open_lines(&self) -> u8 {
        if self.v4 { 3 } else { 4 }
    }

    /// Starts fetching line 4 of the SA, which sealing reads only through an IPv6 tunnel
    /// (`outer`; `reads_outer_tail`).
    pub(crate) fn prefetch_outer_tail(&self, prefetch: impl crate::types::Prefetch) {
        prefetch(std::ptr::from_ref(self).cast::<u8>().wrapping_add(256));
    }

    /// Whether sealing reads the template in line 4 (`outer`): an IPv6 tunnel.
    pub(crate) fn reads_outer_tail(&self) -> bool {
        self.mode == Mode::Tunnel && !self.v4
    }

    /// An IPv4 tunnel's outer header (length and checksum filled per packet): the template
    /// `outer_template` builds, from `tail` and constants, without reading line 4.
    #[inline]
    pub(crate) fn outer_v4_header(&self) -> [u8; 20] {
        let mut h = [0u8; 20];
        h[0] = 0x45;
        h[8] = 64;
        h[9] = self.protocol.number();
        h[12..20].copy_from_slice(&self.tail.outer_v4());
        h
    }

    /// Where the keyed transform's expanded key lives (`Aead::state_span`): address and whole
    /// cache lines from there, for the engine to keep beside this SA's index (`SadEntry`) and
    /// the SA in its line 1 (`tail`, `key_nlines`).
    /// `(0, 0)` for transforms that do not say (CBC, HMAC: their state is behind the
    /// library's own pointers).
    fn key_lines(&self) -> (usize, u8) {
        let (at, len) = match &self.transform {
            Transform::EspAead { aead, .. } | Transform::AhGmac { aead, .. } => aead.state_span(),
            _ => (0, 0),
        };
        let first = at & !63;
        let lines = at.saturating_add(len).div_ceil(64).saturating_sub(first / 64);
        (first, u8::try_from(lines).unwrap_or(u8::MAX).min(16))
    }

    /// Builds the SA: checks the parameters and keys the transform once.
    pub fn new(p: &SaParams, provider: &'static dyn Provider, now: Time) -> Result<Self, SaError> {
        if !p.spi.is_valid() {
            return Err(SaError::ReservedSpi(p.spi));
        }
        if p.src.is_ipv4() != p.dst.is_ipv4() {
            return Err(SaError::MixedVersions { src: p.src, dst: p.dst });
        }
        let (transform, iv_len, icv_len, pad_align) = match p.protocol {
            Protocol::Esp(suite) => Self::esp_transform(p, suite, provider)?,
            Protocol::Ah(integ) => Self::ah_transform(p, integ, provider)?,
        };
        let (outer, outer_len) = outer_template(p.src, p.dst, p.protocol.number());
        let mut outer_v4 = [0; 8];
        if let (IpAddr::V4(s), IpAddr::V4(d)) = (p.src, p.dst) {
            outer_v4[..4].copy_from_slice(&s.octets());
            outer_v4[4..].copy_from_slice(&d.octets());
        }
        let usage = Usage { installed: now, ..Usage::default() };
        // Every length fits a byte: IVs are at most 16, ICVs 32, alignment 16, headers 40.
        let byte = |n: usize| u8::try_from(n).unwrap_or(u8::MAX);
        let mut sa = SecurityAssociation {
            seq_out: 0,
            due: usage.due(&p.soft, &p.hard),
            usage,
            transform,
            spi: p.spi,
            protocol: p.protocol,
            mode: p.mode,
            esn: p.esn,
            v4: p.src.is_ipv4(),
            has_event: false,
            iv_len: byte(iv_len),
            icv_len: byte(icv_len),
            pad_align: byte(pad_align),
            outer_len: byte(outer_len),
            live: crate::types::Live::Yes,
            tail: Tail::sealing(outer_v4, 0),
            key_nlines: 0,
            outer,
            provider,
            cold: Cold {
                src: p.src,
                dst: p.dst,
                soft: p.soft,
                hard: p.hard,
                event: None,
                scratch: Vec::new(),
                shared_seq: None,
            },
            replay: ReplayWindow::new(p.replay_window, p.esn)?,
            admitted: None,
        };
        let key_at;
        (key_at, sa.key_nlines) = sa.key_lines();
        sa.tail = Tail::sealing(outer_v4, key_at);
        Ok(sa)
    }

    fn esp_transform(
        p: &SaParams,
        suite: EspSuite,
        provider: &'static dyn Provider,
    ) -> Result<(Transform, usize, usize, usize), SaError> {
        let name = suite.to_string();
        check_len("enc_key", name.clone(), p.enc_key.len(), suite.encr.key_len())?;
        check_len("auth_key", name, p.auth_key.len(), suite.integ.key_len())?;
        let mac = match suite.integ {
            IntegAlg::Hmac(h) => Some(provider.hmac(h, &p.auth_key)?),
            _ => None,
        };
        let t = match (suite.encr, mac) {
            (EncrAlg::Aead(a), _) => {
                let (salt, key) = split_salt(&p.enc_key, a.key_len());
                Transform::EspAead { aead: provider.aead(a, key)?, salt }
            }
            (EncrAlg::Cbc(c), mac) => {
                Transform::EspCbc(Box::new(CbcKeys { cipher: provider.cbc(c, &p.enc_key)?, mac }))
            }
            (EncrAlg::Null, Some(mac)) => Transform::EspNull { mac },
            (EncrAlg::Null, None) => return Err(SaError::AhWithoutInteg),
        };
        Ok((t, suite.encr.iv_len(), suite.icv_len(), suite.encr.pad_align()))
    }

    fn ah_transform(
        p: &SaParams,
        integ: IntegAlg,
        provider: &'static dyn Provider,
    ) -> Result<(Transform, usize, usize, usize), SaError> {
        check_len("auth_key", integ.name().to_string(), p.auth_key.len(), integ.key_len())?;
        let t = match integ {
            IntegAlg::None => return Err(SaError::AhWithoutInteg),
            IntegAlg::Hmac(h) => Transform::AhHmac { mac: provider.hmac(h, &p.auth_key)? },
            IntegAlg::Aes128Gmac | IntegAlg::Aes256Gmac => {
                let alg = if integ == IntegAlg::Aes128Gmac {
                    crypto::AeadAlg::Aes128Gcm
                } else {
                    crypto::AeadAlg::Aes256Gcm
                };
                let (salt, key) = split_salt(&p.auth_key, alg.key_len());
                Transform::AhGmac { aead: provider.aead(alg, key)?, salt }
            }
        };
        // GMAC carries an 8-byte IV in the Authentication Data field (RFC 4543 §4).
        let iv_len = if matches!(t, Transform::AhGmac { .. }) { 8 } else { 0 };
        Ok((t, iv_len, integ.icv_len(), 4))
    }

    /// SPI.
    pub fn spi(&self) -> Spi {
        self.spi
    }
    /// Protocol and algorithms.
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }
    /// Mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }
    /// Source and destination addresses.
    pub fn addrs(&self) -> (IpAddr, IpAddr) {
        (self.cold.src, self.cold.dst)
    }
    /// ESN in use.
    pub fn esn(&self) -> bool {
        self.esn
    }
    /// Bytes and packets processed so far, and install time.
    pub fn usage(&self) -> &Usage {
        &self.usage
    }
    /// Replay window state.
    pub fn replay(&self) -> &ReplayWindow {
        &self.replay
    }
    /// Last outbound sequence number used.
    pub fn last_seq_out(&self) -> SeqNum {
        match &self.cold.shared_seq {
            Some(c) => SeqNum(c.load(std::sync::atomic::Ordering::Relaxed)),
            None => SeqNum(self.seq_out),
        }
    }
    /// Bytes this SA adds to a packet at most (headers, IV, padding, ICV), for MTU computation.
    pub fn overhead(&self) -> usize {
        let outer = if self.mode == Mode::Tunnel { self.outer_len() } else { 0 };
        let (iv, icv) = (self.iv_len(), self.icv_len());
        match self.protocol {
            Protocol::Esp(_) => outer + 8 + iv + (self.pad_align() - 1) + 2 + icv,
            Protocol::Ah(_) => outer + 12 + wire::AhRepr::padded_icv_len(iv + icv, true),
        }
    }
    /// Like [`SecurityAssociation::overhead`] but without the tunnel's outer IP header, for
    /// carriers (ESP in UDP) that put their own header in its place.
    pub fn overhead_without_outer(&self) -> usize {
        let outer = if self.mode == Mode::Tunnel { self.outer_len() } else { 0 };
        self.overhead() - outer
    }

    /// Explicit IV length (ESP; AH-GMAC's IV in the Authentication Data).
    pub(crate) fn iv_len(&self) -> usize {
        usize::from(self.iv_len)
    }
    /// ICV length.
    pub(crate) fn icv_len(&self) -> usize {
        usize::from(self.icv_len)
    }
    /// ESP padding alignment.
    pub(crate) fn pad_align(&self) -> usize {
        usize::from(self.pad_align)
    }
    /// Length of the outer header template.
    pub(crate) fn outer_len(&self) -> usize {
        usize::from(self.outer_len)
    }

    /// Outer IP version in tunnel mode.
    pub fn outer_version(&self) -> IpVersion {
        if self.v4 { IpVersion::V4 } else { IpVersion::V6 }
    }

    /// Takes this outbound SA's sequence numbers from `counter` (the last number handed out),
    /// which other copies of the same SA share: several cores then seal on one SA and no two
    /// packets carry the same number (RFC 4303 §3.3.3). Each copy keeps its own usage counts.
    pub fn share_sequence(&mut self, counter: std::sync::Arc<std::sync::atomic::AtomicU64>) {
        self.cold.shared_seq = Some(counter);
        self.seq_out = SHARED;
    }

    /// Sets the next outbound sequence number (tests and the seq-exhaustion bench only).
    pub fn set_last_seq_out(&mut self, seq: SeqNum) {
        match &self.cold.shared_seq {
            Some(c) => c.store(seq.0, std::sync::atomic::Ordering::Relaxed),
            None => self.seq_out = seq.0,
        }
    }

    /// Takes the pending lifetime event, if any.
    pub fn take_event(&mut self) -> Option<SaEvent> {
        if !self.has_event {
            return None;
        }
        self.has_event = false;
        self.cold.event.take()
    }

    /// Refuses traffic once a hard limit was hit; evaluates time-based limits when one is due.
    #[inline]
    pub(crate) fn check_usable(&mut self, now: Time) -> Result<(), DropReason> {
        if self.usage.is_hard_expired() {
            return Err(DropReason::SaExpired);
        }
        if now >= self.due.time {
            self.poll(now);
            if self.usage.is_hard_expired() {
                return Err(DropReason::SaExpired);
            }
        }
        Ok(())
    }

    /// Re-evaluates the limits at `now` (for the driver's timer).
    pub fn poll(&mut self, now: Time) {
        let c = &mut self.cold;
        if let Some(e) = self.usage.evaluate(self.spi, &c.soft, &c.hard, now) {
            c.event = Some(e);
            self.has_event = true;
        }
        self.due = self.usage.due(&c.soft, &c.hard);
    }

    /// The next outbound sequence number; never wraps (RFC 4303 §3.3.3).
    #[inline]
    pub(crate) fn next_seq(&mut self) -> Result<SeqNum, DropReason> {
        let max = if self.esn { u64::MAX } else { u32::MAX as u64 };
        if self.seq_out >= max {
            if self.seq_out == SHARED && self.cold.shared_seq.is_some() {
                return self.next_shared_seq(max);
            }
            if let Some(e) = self.usage.expire(self.spi, "sequence") {
                self.cold.event = Some(e);
                self.has_event = true;
            }
            self.due = self.usage.due(&self.cold.soft, &self.cold.hard);
            return Err(DropReason::SeqExhausted);
        }
        self.seq_out += 1;
        Ok(SeqNum(self.seq_out))
    }

    /// [`Self::next_seq`] from the shared counter: one atomic add per packet (the copies on
    /// other cores take theirs from the same line). Past `max` the counter stays there.
    #[inline(never)]
    fn next_shared_seq(&mut self, max: u64) -> Result<SeqNum, DropReason> {
        use std::sync::atomic::Ordering;
        let Some(c) = &self.cold.shared_seq else { return Err(DropReason::SeqExhausted) };
        let n = c.fetch_add(1, Ordering::Relaxed).saturating_add(1);
        if n > max {
            c.store(max, Ordering::Relaxed);
            if let Some(e) = self.usage.expire(self.spi, "sequence") {
                self.cold.event = Some(e);
                self.has_event = true;
            }
            self.due = self.usage.due(&self.cold.soft, &self.cold.hard);
            return Err(DropReason::SeqExhausted);
        }
        Ok(SeqNum(n))
    }

    /// Counts a processed packet; evaluates the byte/packet limits once one is reached.
    #[inline]
    pub(crate) fn account(&mut self, len: usize, now: Time) {
        self.usage.add(len);
        if self.due.counted(&self.usage) {
            self.poll(now);
        }
    }

    /// Fills `out` from the provider's random generator (CBC IVs).
    pub(crate) fn random(&self, out: &mut [u8]) -> Result<(), DropReason> {
        self.provider.fill_random(out).map_err(|_| DropReason::CryptoFailure)
    }
}

/// An outer IPv4 or IPv6 header with TTL/hop limit 64 and the given protocol.
fn outer_template(src: IpAddr, dst: IpAddr, protocol: u8) -> ([u8; 40], usize) {
    let mut h = [0u8; 40];
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            h[0] = 0x45;
            h[8] = 64;
            h[9] = protocol;
            h[12..16].copy_from_slice(&s.octets());
            h[16..20].copy_from_slice(&d.octets());
            (h, 20)
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            h[0] = 0x60;
            h[6] = protocol;
            h[7] = 64;
            h[8..24].copy_from_slice(&s.octets());
            h[24..40].copy_from_slice(&d.octets());
            (h, 40)
        }
        // Mixed versions are refused in `new`; an empty template keeps this total.
        _ => (h, 0),
    }
}

#[cfg(test)]
#[path = "sa_tests.rs"]
mod tests;
