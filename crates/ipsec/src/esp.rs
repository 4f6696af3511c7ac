//! ESP outbound and inbound processing (RFC 4303 §3.3 and §3.4) in place on a [`PacketBuf`]:
//! tunnel and transport mode, AEAD (RFC 4106, RFC 7634) and CBC+HMAC (RFC 3602, RFC 4868),
//! ESN high bits in the AAD / ICV input (§2.2.1), and the replay check before the ICV.

use crate::buf::PacketBuf;
use crate::drop::DropReason;
use crate::sa::{CbcKeys, Mode, SecurityAssociation, Transform};
use crate::types::{SeqNum, Time};
use wire::esp::{HEADER_LEN, TRAILER_LEN};
use wire::{EspRepr, EspTrailer, IpLayout, IpVersion, proto};

/// What inbound processing left in the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opened {
    /// Sequence number of the packet.
    pub seq: SeqNum,
    /// The protocol now at the front: for tunnel mode the inner packet's (4 or 41), for transport
    /// mode the upper-layer protocol now named in the IP header.
    pub next_header: u8,
}

/// Where the ESP header will go and what it wraps.
pub(crate) struct Insert {
    /// Offset of the new ESP/AH header after insertion.
    pub at: usize,
    /// Next Header value for the new header.
    pub next_header: u8,
    /// Bytes being protected (payload after the insertion point).
    pub payload_len: usize,
    /// Offset of the byte naming the protocol at the insertion point (transport mode).
    pub nh_offset: Option<usize>,
}

/// Prepares the buffer for a new header of `hdr_len` bytes: tunnel mode prepends the outer header
/// template, transport mode opens a gap after the IP header. Shared by ESP and AH.
pub(crate) fn insert_header(
    sa: &SecurityAssociation,
    buf: &mut PacketBuf,
    hdr_len: usize,
) -> Result<Insert, DropReason> {
    match sa.mode {
        Mode::Tunnel => {
            let next_header = match buf.as_slice().first().map(|b| b >> 4) {
                Some(4) => proto::IPV4,
                Some(6) => proto::IPV6,
                _ => return Err(DropReason::Malformed),
            };
            let payload_len = buf.len();
            let tos = inner_tos(buf.as_slice());
            buf.prepend(sa.outer_len() + hdr_len).map_err(|_| DropReason::NoRoom)?;
            let p = buf.as_mut_slice();
            match p.get_mut(..20).filter(|_| sa.v4) {
                Some(h) => h.copy_from_slice(&sa.outer_v4_header()),
                None => p[..sa.outer_len()].copy_from_slice(&sa.outer[..sa.outer_len()]),
            }
            // RFC 4301 §5.1.2.1: copy DSCP and ECN (RFC 6040 normal mode) to the outer header.
            set_tos(p, sa.outer_version(), tos);
            Ok(Insert { at: sa.outer_len(), next_header, payload_len, nh_offset: None })
        }
        Mode::Transport => {
            let l = IpLayout::parse(buf.as_slice()).map_err(|_| DropReason::Malformed)?;
            // A transport-mode SA protects packets of its own hosts, hence of its IP version.
            if l.version != sa.outer_version() {
                return Err(DropReason::FamilyMismatch);
            }
            if l.is_fragment {
                return Err(DropReason::Fragment);
            }
            buf.truncate(l.total_len);
            let payload_len = l.total_len - l.header_len;
            buf.open_gap(l.header_len, hdr_len).map_err(|_| DropReason::NoRoom)?;
            Ok(Insert {
                at: l.header_len,
                next_header: l.next_header,
                payload_len,
                nh_offset: Some(l.next_header_offset),
            })
        }
    }
}

fn inner_tos(p: &[u8]) -> u8 {
    match p.first().map(|b| b >> 4) {
        Some(4) => p.get(1).copied().unwrap_or(0),
        Some(6) if p.len() >= 2 => (p[0] << 4) | (p[1] >> 4),
        _ => 0,
    }
}

fn set_tos(p: &mut [u8], v: IpVersion, tos: u8) {
    match v {
        IpVersion::V4 => p[1] = tos,
        IpVersion::V6 => {
            p[0] = 0x60 | (tos >> 4);
            p[1] = (p[1] & 0x0f) | (tos << 4);
        }
    }
}

/// Finishes the IP header after a transform changed the length: protocol byte (transport mode),
/// length fields and IPv4 checksum. Shared by ESP and AH.
pub(crate) fn finish_ip_header(
    sa: &SecurityAssociation,
    p: &mut [u8],
    ins: &Insert,
    protocol: u8,
    seq: SeqNum,
) -> Result<(), DropReason> {
    let version = match ins.nh_offset {
        Some(off) => {
            p[off] = protocol;
            if p[0] >> 4 == 4 { IpVersion::V4 } else { IpVersion::V6 }
        }
        None => {
            let v = sa.outer_version();
            if v == IpVersion::V4 {
                // IPv4 identification: unique enough per SA for reassembly (RFC 6864).
                p[4..6].copy_from_slice(&(seq.0 as u16).to_be_bytes());
            }
            v
        }
    };
    if p.len() > u16::MAX as usize + if version == IpVersion::V6 { 40 } else { 0 } {
        return Err(DropReason::TooBig);
    }
    wire::ip::set_total_len(p, version).map_err(|_| DropReason::TooBig)
}

/// Inbound counterpart of [`insert_header`], shared by ESP and AH: cuts the packet at `end`
/// (dropping the ESP trailer and ICV), removes the `len`-byte IPsec header at `at`, and leaves the
/// inner packet (tunnel mode: its version must match `next_header`, RFC 4303 §3.4.4.1) or the
/// restored packet with `next_header` in its IP header (transport mode). Returns the length of
/// what was protected.
pub(crate) fn remove_header(
    mode: Mode,
    buf: &mut PacketBuf,
    outer: &IpLayout,
    at: usize,
    len: usize,
    end: usize,
    next_header: u8,
) -> Result<usize, DropReason> {
    buf.truncate(end);
    match mode {
        Mode::Tunnel => {
            let want = match next_header {
                proto::IPV4 => IpVersion::V4,
                proto::IPV6 => IpVersion::V6,
                _ => return Err(DropReason::BadNextHeader),
            };
            buf.trim_front(at + len).map_err(|_| DropReason::Truncated)?;
            let inner = IpLayout::parse(buf.as_slice()).map_err(|_| DropReason::InnerMalformed)?;
            if inner.version != want {
                return Err(DropReason::BadNextHeader);
            }
            buf.truncate(inner.total_len);
            Ok(inner.total_len)
        }
        Mode::Transport => {
            buf.close_gap(at, len).map_err(|_| DropReason::Truncated)?;
            let p = buf.as_mut_slice();
            p[outer.next_header_offset] = next_header;
            wire::ip::set_total_len(p, outer.version).map_err(|_| DropReason::Malformed)?;
            Ok(p.len() - at)
        }
    }
}

/// AAD for AEAD ESP: SPI || seq (8 bytes), or SPI || seq high || seq low with ESN (RFC 4106 §5).
fn aad(spi: u32, seq: SeqNum, esn: bool) -> ([u8; 12], usize) {
    let mut a = [0u8; 12];
    a[..4].copy_from_slice(&spi.to_be_bytes());
    if esn {
        a[4..8].copy_from_slice(&seq.high().to_be_bytes());
        a[8..12].copy_from_slice(&seq.low().to_be_bytes());
        (a, 12)
    } else {
        a[4..8].copy_from_slice(&seq.low().to_be_bytes());
        (a, 8)
    }
}

fn nonce(salt: &[u8; 4], iv: &[u8]) -> [u8; 12] {
    let mut n = [0u8; 12];
    n[..4].copy_from_slice(salt);
    n[4..].copy_from_slice(iv);
    n
}

impl SecurityAssociation {
    /// Protects the IP packet in `buf` with ESP (RFC 4303 §3.3).
    pub fn esp_seal(&mut self, buf: &mut PacketBuf, now: Time) -> Result<(), DropReason> {
        self.check_usable(now)?;
        let hdr_len = HEADER_LEN + self.iv_len();
        let ins = insert_header(self, buf, hdr_len)?;
        let pad = EspTrailer::pad_for(ins.payload_len, self.pad_align());
        let trailer_len = pad as usize + TRAILER_LEN;
        buf.append(trailer_len + self.icv_len()).map_err(|_| DropReason::NoRoom)?;
        let seq = self.next_seq()?;
        let p = buf.as_mut_slice();
        let esp_at = ins.at;
        let ct_at = esp_at + hdr_len;
        let icv_at = p.len() - self.icv_len();
        EspRepr { spi: self.spi.0, seq: seq.low() }
            .emit(&mut p[esp_at..])
            .map_err(|_| DropReason::NoRoom)?;
        EspTrailer { pad_len: pad, next_header: ins.next_header }
            .emit(&mut p[icv_at - trailer_len..icv_at])
            .map_err(|_| DropReason::NoRoom)?;
        match &self.transform {
            Transform::EspAead { aead, salt } => {
                // The IV is the 64-bit sequence number: unique per key, as RFC 4106 §3.1 allows.
                let iv = seq.0.to_be_bytes();
                p[esp_at + HEADER_LEN..ct_at].copy_from_slice(&iv);
                let (a, alen) = aad(self.spi.0, seq, self.esn);
                let (body, tag) = p[ct_at..].split_at_mut(icv_at - ct_at);
                aead.seal_in_place(&nonce(salt, &iv), &a[..alen], body, tag)
                    .map_err(|_| DropReason::CryptoFailure)?;
            }
            Transform::EspCbc(cbc) => {
                let CbcKeys { cipher, mac } = cbc.as_ref();
                // RFC 3602 §2.1: the IV must be unpredictable, hence random per packet.
                self.random(&mut p[esp_at + HEADER_LEN..ct_at])?;
                let (iv, body) = p[esp_at + HEADER_LEN..icv_at].split_at_mut(self.iv_len());
                cipher.encrypt_cbc(iv, body).map_err(|_| DropReason::CryptoFailure)?;
                if let Some(mac) = mac {
                    self.esp_mac(mac.as_ref(), p, esp_at, icv_at, seq)?;
                }
            }
            Transform::EspNull { mac } => self.esp_mac(mac.as_ref(), p, esp_at, icv_at, seq)?,
            Transform::AhHmac { .. } | Transform::AhGmac { .. } => {
                return Err(DropReason::BadNextHeader);
            }
        }
        finish_ip_header(self, p, &ins, proto::ESP, seq)?;
        self.account(ins.payload_len, now);
        Ok(())
    }

    /// ICV over ESP header, IV and ciphertext, with ESN high bits appended (RFC 4303 §3.3.2.1).
    fn esp_mac(
        &self,
        mac: &dyn crypto::Mac,
        p: &mut [u8],
        esp_at: usize,
        icv_at: usize,
        seq: SeqNum,
    ) -> Result<(), DropReason> {
        let hi = seq.high().to_be_bytes();
        let (covered, icv) = p[esp_at..].split_at_mut(icv_at - esp_at);
        let parts: [&[u8]; 2] = [covered, &hi];
        let n = if self.esn { 2 } else { 1 };
        mac.compute(&parts[..n], icv).map_err(|_| DropReason::CryptoFailure)
    }

    /// Removes ESP from the packet in `buf`, whose outer header is described by `outer`
    /// (RFC 4303 §3.4). On success the buffer holds the inner packet (tunnel mode) or the original
    /// packet (transport mode).
    pub fn esp_open(
        &mut self,
        buf: &mut PacketBuf,
        outer: &IpLayout,
        now: Time,
    ) -> Result<Opened, DropReason> {
        self.esp_open_from(buf, outer, None, now)
    }

    /// [`SecurityAssociation::esp_open`] for a packet whose ESP part is still in `src` (from the
    /// SPI to the end, `outer.total_len - outer.header_len` bytes), while `buf` holds its outer
    /// header and, after it, a copy of at least the ESP header and IV: an AEAD decrypts straight
    /// from `src` into `buf` (the copy and the decryption in one pass), other transforms copy
    /// the rest first. With `src` None it is `esp_open`.
    pub fn esp_open_from(
        &mut self,
        buf: &mut PacketBuf,
        outer: &IpLayout,
        src: Option<&[u8]>,
        now: Time,
    ) -> Result<Opened, DropReason> {
        self.check_usable(now)?;
        buf.truncate(outer.total_len);
        let esp_at = outer.header_len;
        let hdr_len = HEADER_LEN + self.iv_len();
        let p = buf.as_mut_slice();
        let end = p.len();
        if end < esp_at + hdr_len + TRAILER_LEN + self.icv_len() {
            return Err(DropReason::Truncated);
        }
        let ct_at = esp_at + hdr_len;
        let icv_at = end - self.icv_len();
        // The SPI is not in the AEAD's AAD input here (the SA's own is), so a caller that did not
        // look the SA up by this SPI must not get a packet through.
        if p[esp_at..esp_at + 4] != self.spi.0.to_be_bytes() {
            return Err(DropReason::NoSa);
        }
        let seq_low =
            u32::from_be_bytes([p[esp_at + 4], p[esp_at + 5], p[esp_at + 6], p[esp_at + 7]]);
        let seq = self.replay.infer(seq_low);
        // RFC 4303 §3.4.3: the replay check comes before the (costly) ICV check...
        self.replay.check(seq)?;
        // The part of the packet still in `src`: the ciphertext and ICV, after header and IV,
        // up to the IP length (bytes after it are cut, as from `buf` above).
        // Only an AEAD reads it there; the other transforms work in place, so it comes in now.
        let rest = match src {
            None => None,
            Some(s) => Some(s.get(hdr_len..end - esp_at).ok_or(DropReason::Malformed)?),
        };
        let rest = match (rest, &self.transform) {
            (Some(r), Transform::EspAead { .. }) => Some(r),
            (Some(r), _) => {
                p[ct_at..end].copy_from_slice(r);
                None
            }
            (None, _) => None,
        };
        match &self.transform {
            Transform::EspAead { aead, salt } => {
                let n = nonce(salt, &p[esp_at + HEADER_LEN..ct_at]);
                let (a, alen) = aad(self.spi.0, seq, self.esn);
                let opened = match rest {
                    Some(r) => match aead.open_to(&n, &a[..alen], r, &mut p[ct_at..icv_at]) {
                        Err(crypto::CryptoError::Unsupported) => {
                            p[ct_at..end].copy_from_slice(r);
                            aead.open_in_place(&n, &a[..alen], &mut p[ct_at..end]).map(|_| ())
                        }
                        other => other,
                    },
                    None => aead.open_in_place(&n, &a[..alen], &mut p[ct_at..end]).map(|_| ()),
                };
                opened.map_err(|_| DropReason::IntegrityFailed)?;
            }
            Transform::EspCbc(cbc) => {
                let CbcKeys { cipher, mac } = cbc.as_ref();
                if let Some(mac) = mac {
                    self.esp_verify(mac.as_ref(), p, esp_at, icv_at, seq)?;
                }
                if (icv_at - ct_at) % self.pad_align() != 0 || icv_at == ct_at {
                    return Err(DropReason::BadCiphertextLen);
                }
                let (iv, body) = p[esp_at + HEADER_LEN..icv_at].split_at_mut(self.iv_len());
                cipher.decrypt_cbc(iv, body).map_err(|_| DropReason::CryptoFailure)?;
            }
            Transform::EspNull { mac } => self.esp_verify(mac.as_ref(), p, esp_at, icv_at, seq)?,
            Transform::AhHmac { .. } | Transform::AhGmac { .. } => {
                return Err(DropReason::BadNextHeader);
            }
        }
        let (trailer, data_len) =
            EspTrailer::parse(&p[ct_at..icv_at]).map_err(|_| DropReason::BadPadding)?;
        // ...and the window moves only once the packet proved authentic.
        self.replay.commit(seq);
        self.account(data_len, now);
        let next_header = trailer.next_header;
        if next_header == proto::NO_NEXT {
            return Err(DropReason::DummyPacket);
        }
        remove_header(self.mode, buf, outer, esp_at, hdr_len, ct_at + data_len, next_header)?;
        Ok(Opened { seq, next_header })
    }

    fn esp_verify(
        &self,
        mac: &dyn crypto::Mac,
        p: &[u8],
        esp_at: usize,
        icv_at: usize,
        seq: SeqNum,
    ) -> Result<(), DropReason> {
        let hi = seq.high().to_be_bytes();
        let parts: [&[u8]; 2] = [&p[esp_at..icv_at], &hi];
        let n = if self.esn { 2 } else { 1 };
        mac.verify(&parts[..n], &p[icv_at..]).map_err(|_| DropReason::IntegrityFailed)
    }
}
