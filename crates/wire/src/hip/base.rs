//! The parameters of the base exchange (RFC 7401 §5.2.3–§5.2.11, §5.2.18): R1_COUNTER, PUZZLE,
//! SOLUTION, DH_GROUP_LIST, DIFFIE_HELLMAN, HIP_CIPHER, HOST_ID, HIT_SUITE_LIST,
//! TRANSPORT_FORMAT_LIST and ENCRYPTED.

use super::consts::{CipherId, DhGroupId, DiType, HiAlgorithm, HitSuiteId, ParamType};
use super::param::ParamRepr;
use crate::cursor::{Reader, Writer, len16};
use crate::error::WireError;

/// A parameter whose Contents are a list of fixed-size numbers (§5.2.6, §5.2.8, §5.2.11).
macro_rules! list_param {
    ($(#[$m:meta])* $name:ident, $ty:ident, $field:ident: $item:ident($repr:ty), $what:literal) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        pub struct $name {
            /// The list, in the sender's order of preference.
            pub $field: Vec<$item>,
        }

        impl ParamRepr for $name {
            const TYPE: ParamType = ParamType::$ty;

            fn parse(contents: &[u8]) -> Result<Self, WireError> {
                const N: usize = std::mem::size_of::<$repr>();
                if !contents.chunks_exact(N).remainder().is_empty() {
                    return Err(WireError::BadLength { what: $what, value: contents.len() });
                }
                let $field = contents
                    .chunks_exact(N)
                    .map(|c| {
                        let mut a = [0u8; N];
                        a.copy_from_slice(c);
                        $item(<$repr>::from_be_bytes(a))
                    })
                    .collect();
                Ok($name { $field })
            }

            fn contents_len(&self) -> usize {
                self.$field.len() * std::mem::size_of::<$repr>()
            }

            fn emit_contents(&self, out: &mut [u8]) -> Result<(), WireError> {
                let mut w = Writer::new(out, self.contents_len(), $what)?;
                for v in &self.$field {
                    w.bytes(&v.0.to_be_bytes())?;
                }
                w.finish()
            }
        }
    };
}

list_param! {
    /// DH_GROUP_LIST (§5.2.6): one-octet DH Group IDs the sender supports.
    DhGroupList, DH_GROUP_LIST, groups: DhGroupId(u8), "DH_GROUP_LIST"
}

list_param! {
    /// HIP_CIPHER (§5.2.8): 16-bit Cipher IDs for the ENCRYPTED parameter.
    HipCipher, HIP_CIPHER, ciphers: CipherId(u16), "HIP_CIPHER"
}

list_param! {
    /// TRANSPORT_FORMAT_LIST (§5.2.11): the parameter types of the transport formats the sender
    /// supports (ESP_TRANSFORM, 4095, for RFC 7402).
    TransportFormatList, TRANSPORT_FORMAT_LIST, formats: ParamType(u16), "TRANSPORT_FORMAT_LIST"
}

/// R1_COUNTER (§5.2.3): Reserved (32 bits), then the R1 generation counter (64 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct R1Counter {
    /// The current generation of valid puzzles.
    pub counter: u64,
}

impl ParamRepr for R1Counter {
    const TYPE: ParamType = ParamType::R1_COUNTER;

    fn parse(contents: &[u8]) -> Result<Self, WireError> {
        let mut r = Reader::new(contents);
        r.take(4, "R1_COUNTER reserved")?;
        let counter = r.u64("R1_COUNTER counter")?;
        r.end("R1_COUNTER length")?;
        Ok(R1Counter { counter })
    }

    fn contents_len(&self) -> usize {
        12
    }

    fn emit_contents(&self, out: &mut [u8]) -> Result<(), WireError> {
        let mut w = Writer::new(out, 12, "R1_COUNTER")?;
        w.zeros(4)?;
        w.u64(self.counter)?;
        w.finish()
    }
}

/// PUZZLE (§5.2.4): #K (8 bits), Lifetime (8 bits, 2^(value − 32) seconds), Opaque (16 bits),
/// Random #I (RHASH_len / 8 octets, so its length follows the HIT suite's hash).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Puzzle {
    /// #K: the number of low-order bits of the hash that must be zero.
    pub k: u8,
    /// Lifetime exponent.
    pub lifetime: u8,
    /// Opaque, set by the Responder and echoed in SOLUTION.
    pub opaque: u16,
    /// Random #I.
    pub i: Vec<u8>,
}

impl ParamRepr for Puzzle {
    const TYPE: ParamType = ParamType::PUZZLE;

    fn parse(contents: &[u8]) -> Result<Self, WireError> {
        let mut r = Reader::new(contents);
        let k = r.u8("PUZZLE #K")?;
        let lifetime = r.u8("PUZZLE lifetime")?;
        let opaque = r.u16("PUZZLE opaque")?;
        Ok(Puzzle { k, lifetime, opaque, i: r.rest().to_vec() })
    }

    fn contents_len(&self) -> usize {
        4 + self.i.len()
    }

    fn emit_contents(&self, out: &mut [u8]) -> Result<(), WireError> {
        let mut w = Writer::new(out, self.contents_len(), "PUZZLE")?;
        w.u8(self.k)?;
        w.u8(self.lifetime)?;
        w.u16(self.opaque)?;
        w.bytes(&self.i)?;
        w.finish()
    }
}

/// SOLUTION (§5.2.5): #K, Reserved, Opaque, Random #I and the solution #J, both RHASH_len / 8
/// octets — so the Length is 4 + 2 × that and the two halves split evenly.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Solution {
    /// #K copied from the PUZZLE.
    pub k: u8,
    /// Opaque copied from the PUZZLE.
    pub opaque: u16,
    /// Random #I copied from the PUZZLE.
    pub i: Vec<u8>,
    /// The solution #J (same length as #I).
    pub j: Vec<u8>,
}

impl ParamRepr for Solution {
    const TYPE: ParamType = ParamType::SOLUTION;

    fn parse(contents: &[u8]) -> Result<Self, WireError> {
        let mut r = Reader::new(contents);
        let k = r.u8("SOLUTION #K")?;
        r.u8("SOLUTION reserved")?;
        let opaque = r.u16("SOLUTION opaque")?;
        if r.len() % 2 != 0 {
            return Err(WireError::BadLength { what: "SOLUTION #I/#J", value: r.len() });
        }
        let half = r.len() / 2;
        let i = r.take(half, "SOLUTION #I")?.to_vec();
        let j = r.rest().to_vec();
        Ok(Solution { k, opaque, i, j })
    }

    fn contents_len(&self) -> usize {
        4 + self.i.len() + self.j.len()
    }

    fn emit_contents(&self, out: &mut [u8]) -> Result<(), WireError> {
        if self.i.len() != self.j.len() {
            return Err(WireError::BadLength { what: "SOLUTION #J", value: self.j.len() });
        }
        let mut w = Writer::new(out, self.contents_len(), "SOLUTION")?;
        w.u8(self.k)?;
        w.u8(0)?;
        w.u16(self.opaque)?;
        w.bytes(&self.i)?;
        w.bytes(&self.j)?;
        w.finish()
    }
}

/// One Group ID and public value of DIFFIE_HELLMAN (§5.2.7).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DhPublicValue {
    /// The group.
    pub group: DhGroupId,
    /// The sender's public value (for ECDH groups the uncompressed point, §5.2.7).
    pub public_value: Vec<u8>,
}

/// DIFFIE_HELLMAN (§5.2.7): one or two (Group ID (8), Public Value Length (16), Public Value).
/// §5.2.7 allows a second value so an Initiator can offer two groups at once.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DiffieHellman {
    /// One or two public values.
    pub values: Vec<DhPublicValue>,
}

impl DiffieHellman {
    /// A parameter with one public value.
    pub fn new(group: DhGroupId, public_value: Vec<u8>) -> DiffieHellman {
        DiffieHellman { values: vec![DhPublicValue { group, public_value }] }
    }
}

impl ParamRepr for DiffieHellman {
    const TYPE: ParamType = ParamType::DIFFIE_HELLMAN;

    fn parse(contents: &[u8]) -> Result<Self, WireError> {
        let mut r = Reader::new(contents);
        let mut values = Vec::with_capacity(2);
        while !r.is_empty() {
            if values.len() == 2 {
                return Err(WireError::BadLength { what: "DIFFIE_HELLMAN length", value: r.len() });
            }
            let group = DhGroupId(r.u8("DIFFIE_HELLMAN group ID")?);
            let n = usize::from(r.u16("DIFFIE_HELLMAN public value length")?);
            let public_value = r.take(n, "DIFFIE_HELLMAN public value")?.to_vec();
            values.push(DhPublicValue { group, public_value });
        }
        if values.is_empty() {
            return Err(WireError::Truncated { what: "DIFFIE_HELLMAN group ID", len: 0, need: 1 });
        }
        Ok(DiffieHellman { values })
    }

    fn contents_len(&self) -> usize {
        self.values.iter().map(|v| 3 + v.public_value.len()).sum()
    }

    fn emit_contents(&self, out: &mut [u8]) -> Result<(), WireError> {
        if self.values.is_empty() || self.values.len() > 2 {
            return Err(WireError::BadValue {
                what: "DIFFIE_HELLMAN value count",
                value: self.values.len() as u64,
            });
        }
        let mut w = Writer::new(out, self.contents_len(), "DIFFIE_HELLMAN")?;
        for v in &self.values {
            w.u8(v.group.0)?;
            w.u16(len16(v.public_value.len(), "DIFFIE_HELLMAN public value length")?)?;
            w.bytes(&v.public_value)?;
        }
        w.finish()
    }
}

/// HOST_ID (§5.2.9): HI Length (16), DI-type (4) | DI Length (12), Algorithm (16), Host
/// Identity (HI Length octets), Domain Identifier (DI Length octets). HI Length covers the Host
/// Identity field only — not the Algorithm before it (§5.2.9: "length of the Host Identity in
/// octets"; HIPv1's RFC 5201 HI carried an RFC 2535 KEY RDATA header inside it instead, which is
/// why old dissectors mis-read v2 HOST_IDs). For ECDSA/ECDSA_LOW/EdDSA the Host Identity starts
/// with a 16-bit curve label ([`HostId::curve`]); for RSA it is the RFC 3110 key.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HostId {
    /// Algorithm.
    pub algorithm: HiAlgorithm,
    /// The Host Identity (public key in the algorithm's format).
    pub host_identity: Vec<u8>,
    /// Type of the Domain Identifier.
    pub di_type: DiType,
    /// The Domain Identifier (empty when `di_type` is NONE).
    pub domain_identifier: Vec<u8>,
}

impl HostId {
    /// The curve label at the start of an ECDSA, ECDSA_LOW or EdDSA Host Identity.
    pub fn curve(&self) -> Option<u16> {
        match self.algorithm {
            HiAlgorithm::ECDSA | HiAlgorithm::ECDSA_LOW | HiAlgorithm::EDDSA => {
                let c = self.host_identity.get(..2)?;
                Some(u16::from_be_bytes([c[0], c[1]]))
            }
            _ => None,
        }
    }
    /// The public key after the curve label of an ECC Host Identity.
    pub fn ecc_public_key(&self) -> Option<&[u8]> {
        self.curve()?;
        self.host_identity.get(2..)
    }
}

impl ParamRepr for HostId {
    const TYPE: ParamType = ParamType::HOST_ID;

    fn parse(contents: &[u8]) -> Result<Self, WireError> {
        let mut r = Reader::new(contents);
        let hi_len = usize::from(r.u16("HOST_ID HI length")?);
        let di = r.u16("HOST_ID DI length")?;
        let algorithm = HiAlgorithm(r.u16("HOST_ID algorithm")?);
        let host_identity = r.take(hi_len, "HOST_ID host identity")?.to_vec();
        let domain_identifier =
            r.take(usize::from(di & 0x0fff), "HOST_ID domain identifier")?.to_vec();
        r.end("HOST_ID length")?;
        Ok(HostId {
            algorithm,
            host_identity,
            di_type: DiType((di >> 12) as u8),
            domain_identifier,
        })
    }

    fn contents_len(&self) -> usize {
        6 + self.host_identity.len() + self.domain_identifier.len()
    }

    fn emit_contents(&self, out: &mut [u8]) -> Result<(), WireError> {
        if self.domain_identifier.len() > 0x0fff {
            return Err(WireError::BadLength {
                what: "HOST_ID DI length",
                value: self.domain_identifier.len(),
            });
        }
        if self.di_type.0 > 0x0f {
            return Err(WireError::BadValue {
                what: "HOST_ID DI-type",
                value: u64::from(self.di_type.0),
            });
        }
        let mut w = Writer::new(out, self.contents_len(), "HOST_ID")?;
        w.u16(len16(self.host_identity.len(), "HOST_ID HI length")?)?;
        w.u16(u16::from(self.di_type.0) << 12 | self.domain_identifier.len() as u16)?;
        w.u16(self.algorithm.0)?;
        w.bytes(&self.host_identity)?;
        w.bytes(&self.domain_identifier)?;
        w.finish()
    }
}

/// HIT_SUITE_LIST (§5.2.10): one octet per HIT Suite, the 4-bit ID in the high four bits and
/// the low four bits zero. A set low bit is refused ("SHOULD be considered as an error",
/// answered with UNSUPPORTED_HIT_SUITE).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HitSuiteList {
    /// 4-bit HIT Suite IDs, in the sender's order of preference.
    pub suites: Vec<HitSuiteId>,
}

impl ParamRepr for HitSuiteList {
    const TYPE: ParamType = ParamType::HIT_SUITE_LIST;

    fn parse(contents: &[u8]) -> Result<Self, WireError> {
        let suites = contents
            .iter()
            .map(|&b| {
                if b & 0x0f != 0 {
                    Err(WireError::BadValue { what: "HIT_SUITE_LIST ID", value: u64::from(b) })
                } else {
                    Ok(HitSuiteId(b >> 4))
                }
            })
            .collect::<Result<_, _>>()?;
        Ok(HitSuiteList { suites })
    }

    fn contents_len(&self) -> usize {
        self.suites.len()
    }

    fn emit_contents(&self, out: &mut [u8]) -> Result<(), WireError> {
        let mut w = Writer::new(out, self.contents_len(), "HIT_SUITE_LIST")?;
        for s in &self.suites {
            if s.0 > 0x0f {
                return Err(WireError::BadValue {
                    what: "HIT_SUITE_LIST ID",
                    value: u64::from(s.0),
                });
            }
            w.u8(s.0 << 4)?;
        }
        w.finish()
    }
}

/// ENCRYPTED (§5.2.18): Reserved (32 bits), then IV and encrypted data. The IV's length depends
/// on the cipher chosen in HIP_CIPHER (16 octets for AES-CBC, none for NULL), so both stay one
/// opaque field here and the caller splits them. The plaintext is itself a parameter sequence
/// (read it with [`super::Params::new`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Encrypted {
    /// IV followed by the ciphertext.
    pub iv_and_data: Vec<u8>,
}

impl Encrypted {
    /// Splits the IV (`iv_len` octets) from the ciphertext.
    pub fn split(&self, iv_len: usize) -> Result<(&[u8], &[u8]), WireError> {
        let mut r = Reader::new(&self.iv_and_data);
        let iv = r.take(iv_len, "ENCRYPTED IV")?;
        Ok((iv, r.rest()))
    }
}

impl ParamRepr for Encrypted {
    const TYPE: ParamType = ParamType::ENCRYPTED;

    fn parse(contents: &[u8]) -> Result<Self, WireError> {
        let mut r = Reader::new(contents);
        r.take(4, "ENCRYPTED reserved")?;
        Ok(Encrypted { iv_and_data: r.rest().to_vec() })
    }

    fn contents_len(&self) -> usize {
        4 + self.iv_and_data.len()
    }

    fn emit_contents(&self, out: &mut [u8]) -> Result<(), WireError> {
        let mut w = Writer::new(out, self.contents_len(), "ENCRYPTED")?;
        w.zeros(4)?;
        w.bytes(&self.iv_and_data)?;
        w.finish()
    }
}
