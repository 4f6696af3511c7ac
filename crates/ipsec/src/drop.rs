//! Every reason a packet is dropped, each with a counter (nothing is dropped
//! silently). Names are stable: they appear in `hipsec status` and the pcap tools' summaries.

use std::fmt;

macro_rules! drop_reasons {
    ($($variant:ident => $name:literal, $doc:literal;)*) => {
        /// Why a packet was not passed on.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum DropReason {
            $(#[doc = $doc] $variant,)*
        }

        impl DropReason {
            /// Every reason, in counter order.
            pub const ALL: &'static [DropReason] = &[$(DropReason::$variant,)*];

            /// Stable snake_case name.
            pub fn name(self) -> &'static str {
                match self {
                    $(DropReason::$variant => $name,)*
                }
            }
        }
    };
}

drop_reasons! {
    Malformed => "malformed", "The IP packet did not parse (lengths, version, extension headers).";
    Truncated => "truncated", "The ESP/AH packet is shorter than its header, IV and ICV.";
    NotIpsec => "not_ipsec", "Inbound packet carries neither ESP nor AH.";
    Fragment => "fragment", "IP fragment: IPsec processes whole packets only (RFC 4303 §3.4.1).";
    NoSa => "no_sa", "No SA for the SPI (inbound) or for the policy (outbound): fail closed.";
    PolicyDiscard => "policy_discard", "The SPD says discard.";
    NoPolicy => "no_policy", "No SPD entry matched: default discard (RFC 4301 §4.4.1).";
    Replayed => "replayed", "Sequence number already seen (RFC 4303 §3.4.3).";
    TooOld => "too_old", "Sequence number left of the replay window.";
    BadSeq => "bad_seq", "Sequence number zero, which is never sent.";
    IntegrityFailed => "integrity_failed", "ICV did not verify.";
    BadCiphertextLen => "bad_ciphertext_len", "Ciphertext is not a whole number of cipher blocks.";
    BadPadding => "bad_padding", "Padding bytes or pad length are wrong (RFC 4303 §2.4).";
    BadNextHeader => "bad_next_header", "Next header does not fit the SA's mode or the inner packet.";
    InnerMalformed => "inner_malformed", "The decapsulated inner packet did not parse.";
    DummyPacket => "dummy_packet", "Next header 59: traffic-flow-confidentiality dummy (RFC 4303 §2.6).";
    SaExpired => "sa_expired", "The SA reached a hard lifetime.";
    SeqExhausted => "seq_exhausted", "The outbound sequence number would wrap (RFC 4303 §3.3.3).";
    NoRoom => "no_room", "The buffer lacks headroom or tailroom for the transform.";
    TooBig => "too_big", "The protected packet would exceed the maximum IP length.";
    BadAhHeader => "bad_ah_header", "AH ICV length does not match the SA, or mutable fields could not be handled.";
    CryptoFailure => "crypto_failure", "The crypto library failed (not an ICV mismatch).";
    NestedTooDeep => "nested_too_deep", "More nested ESP/AH headers than the engine unwraps.";
    FamilyMismatch => "family_mismatch", "Transport-mode SA of the other IP version than the packet.";
    InboundPolicyMismatch => "inbound_policy_mismatch", "Decapsulated traffic its SA may not carry, or cleartext where policy wants protection (RFC 4301 §5.2).";
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One counter per [`DropReason`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DropCounters([u64; 32]);

impl DropCounters {
    /// Counts one drop.
    pub fn count(&mut self, r: DropReason) {
        self.0[r as usize] += 1;
    }
    /// The count for one reason.
    pub fn get(&self, r: DropReason) -> u64 {
        self.0[r as usize]
    }
    /// All drops.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }
    /// `(name, count)` for every reason, zeros included.
    pub fn iter(&self) -> impl Iterator<Item = (DropReason, u64)> + '_ {
        DropReason::ALL.iter().map(|&r| (r, self.get(r)))
    }
    /// Adds another set of counters (e.g. from another worker).
    pub fn merge(&mut self, other: &DropCounters) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a += b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_fit_and_names_unique() {
        assert!(DropReason::ALL.len() <= 32);
        let mut names: Vec<_> = DropReason::ALL.iter().map(|r| r.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), DropReason::ALL.len());
        let mut c = DropCounters::default();
        c.count(DropReason::Replayed);
        c.count(DropReason::Replayed);
        assert_eq!(c.get(DropReason::Replayed), 2);
        assert_eq!(c.total(), 2);
    }
}
