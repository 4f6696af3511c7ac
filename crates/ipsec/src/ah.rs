//! AH outbound and inbound processing (RFC 4302 §3.3 and §3.4): the ICV covers the IP header with
//! mutable fields zeroed (§3.3.3.1), the AH header with a zeroed ICV, the payload, and with ESN the
//! high sequence bits appended (§3.3.3.2.1). HMAC (RFC 4868) or AES-GMAC (RFC 4543 §4).

use crate::buf::PacketBuf;
use crate::drop::DropReason;
use crate::esp::{Opened, finish_ip_header, insert_header, remove_header};
use crate::sa::{Mode, SecurityAssociation, Transform};
use crate::types::{SeqNum, Time};
use wire::ah::FIXED_LEN;
use wire::ip::{AH_MAX_HEADER, ah_zero_mutable};
use wire::{AhPacket, AhRepr, IpLayout, IpVersion, proto};

/// Largest ICV (HMAC-SHA-512-256: 32 bytes).
const MAX_ICV: usize = 32;

impl SecurityAssociation {
    fn ah_field_len(&self, ipv6: bool) -> usize {
        AhRepr::padded_icv_len(self.iv_len() + self.icv_len(), ipv6)
    }

    /// Protects the IP packet in `buf` with AH (RFC 4302 §3.3).
    pub fn ah_seal(&mut self, buf: &mut PacketBuf, now: Time) -> Result<(), DropReason> {
        self.check_usable(now)?;
        let ipv6 = match self.mode {
            Mode::Tunnel => self.outer_version() == IpVersion::V6,
            Mode::Transport => buf.as_slice().first().map(|b| b >> 4) == Some(6),
        };
        let field_len = self.ah_field_len(ipv6);
        let ins = insert_header(self, buf, FIXED_LEN + field_len)?;
        let seq = self.next_seq()?;
        let p = buf.as_mut_slice();
        AhRepr {
            next_header: ins.next_header,
            spi: self.spi.0,
            seq: seq.low(),
            icv_len: field_len,
        }
        .emit(&mut p[ins.at..])
        .map_err(|_| DropReason::NoRoom)?;
        finish_ip_header(self, p, &ins, proto::AH, seq)?;
        let iv_at = ins.at + FIXED_LEN;
        if self.iv_len() > 0 {
            p[iv_at..iv_at + 8].copy_from_slice(&seq.0.to_be_bytes());
        }
        let layout = IpLayout::parse(p).map_err(|_| DropReason::Malformed)?;
        let mut icv = [0u8; MAX_ICV];
        self.ah_icv(p, &layout, seq, &mut icv[..self.icv_len()])?;
        let tag_at = iv_at + self.iv_len();
        p[tag_at..tag_at + self.icv_len()].copy_from_slice(&icv[..self.icv_len()]);
        self.account(ins.payload_len, now);
        Ok(())
    }

    /// Computes the ICV of packet `p`, whose AH header (at `layout.header_len`) has a zeroed tag.
    fn ah_icv(
        &mut self,
        p: &[u8],
        layout: &IpLayout,
        seq: SeqNum,
        out: &mut [u8],
    ) -> Result<(), DropReason> {
        let mut hdr = [0u8; AH_MAX_HEADER];
        let zeroed = ah_zero_mutable(p, layout, &mut hdr).map_err(|_| DropReason::BadAhHeader)?;
        let rest = &p[layout.header_len..];
        let hi = seq.high().to_be_bytes();
        let n = if self.esn { 3 } else { 2 };
        let scratch = &mut self.cold.scratch;
        match &self.transform {
            Transform::AhHmac { mac } => {
                let parts: [&[u8]; 3] = [zeroed, rest, &hi];
                mac.compute(&parts[..n], out).map_err(|_| DropReason::CryptoFailure)
            }
            Transform::AhGmac { aead, salt } => {
                // GMAC takes the whole packet as AAD in one piece (RFC 4543 §4), so it is copied
                // into the SA's scratch buffer, which keeps its capacity between packets.
                let aad = scratch;
                aad.clear();
                aad.extend_from_slice(zeroed);
                aad.extend_from_slice(rest);
                if self.esn {
                    aad.extend_from_slice(&hi);
                }
                let iv_at = layout.header_len + FIXED_LEN;
                let mut nonce = [0u8; 12];
                nonce[..4].copy_from_slice(salt);
                nonce[4..].copy_from_slice(&p[iv_at..iv_at + 8]);
                aead.seal_in_place(&nonce, aad, &mut [], out).map_err(|_| DropReason::CryptoFailure)
            }
            _ => Err(DropReason::BadNextHeader),
        }
    }

    /// Verifies and removes AH from the packet in `buf` (RFC 4302 §3.4).
    pub fn ah_open(
        &mut self,
        buf: &mut PacketBuf,
        outer: &IpLayout,
        now: Time,
    ) -> Result<Opened, DropReason> {
        self.check_usable(now)?;
        buf.truncate(outer.total_len);
        let ah_at = outer.header_len;
        let p = buf.as_mut_slice();
        let view = AhPacket::new_checked(&p[ah_at..]).map_err(|_| DropReason::Truncated)?;
        let repr = AhRepr::parse(&view);
        let ah_len = view.header_len();
        if repr.spi != self.spi.0 {
            return Err(DropReason::NoSa);
        }
        if repr.icv_len != self.ah_field_len(outer.version == IpVersion::V6) {
            return Err(DropReason::BadAhHeader);
        }
        let seq = self.replay.infer(repr.seq);
        self.replay.check(seq)?;
        let tag_at = ah_at + FIXED_LEN + self.iv_len();
        let mut received = [0u8; MAX_ICV];
        received[..self.icv_len()].copy_from_slice(&p[tag_at..tag_at + self.icv_len()]);
        p[tag_at..ah_at + ah_len].fill(0);
        let mut computed = [0u8; MAX_ICV];
        self.ah_icv(p, outer, seq, &mut computed[..self.icv_len()])?;
        if !crypto::provider::constant_time_eq(
            &computed[..self.icv_len()],
            &received[..self.icv_len()],
        ) {
            return Err(DropReason::IntegrityFailed);
        }
        self.replay.commit(seq);
        let next_header = repr.next_header;
        let end = buf.len();
        let protected = remove_header(self.mode, buf, outer, ah_at, ah_len, end, next_header)?;
        self.account(protected, now);
        Ok(Opened { seq, next_header })
    }
}
