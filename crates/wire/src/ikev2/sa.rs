//! The Security Association payload (RFC 7296 §3.3): proposals (§3.3.1), transforms (§3.3.2) and
//! transform attributes (§3.3.5, of which only Key Length is defined).

use super::consts::{ProtocolId, TransformType};
use super::error::IkeError;
use crate::cursor::{Reader, Writer, len16};

/// Attribute type of Key Length (§3.3.5), always in TV format.
pub const ATTR_KEY_LENGTH: u16 = 14;

const LAST: u8 = 0;
const MORE_PROPOSALS: u8 = 2;
const MORE_TRANSFORMS: u8 = 3;
const AF_TV: u16 = 0x8000;

/// A transform attribute's value: TV (2 bytes, AF bit set) or TLV.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttributeValue {
    /// Type/Value format.
    Tv(u16),
    /// Type/Length/Value format.
    Tlv(Vec<u8>),
}

/// A transform attribute (§3.3.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attribute {
    /// Attribute type (15 bits).
    pub attr_type: u16,
    /// Its value.
    pub value: AttributeValue,
}

impl Attribute {
    /// The Key Length attribute, in bits.
    pub fn key_length(bits: u16) -> Attribute {
        Attribute { attr_type: ATTR_KEY_LENGTH, value: AttributeValue::Tv(bits) }
    }

    fn buffer_len(&self) -> usize {
        match &self.value {
            AttributeValue::Tv(_) => 4,
            AttributeValue::Tlv(v) => 4 + v.len(),
        }
    }

    fn emit(&self, w: &mut Writer<'_>) -> Result<(), IkeError> {
        if self.attr_type & AF_TV != 0 {
            return Err(IkeError::BadValue {
                what: "attribute type",
                value: self.attr_type.into(),
            });
        }
        match &self.value {
            AttributeValue::Tv(v) => {
                w.u16(AF_TV | self.attr_type)?;
                Ok(w.u16(*v)?)
            }
            AttributeValue::Tlv(v) => {
                w.u16(self.attr_type)?;
                w.u16(len16(v.len(), "attribute length")?)?;
                Ok(w.bytes(v)?)
            }
        }
    }
}

/// A transform substructure (§3.3.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transform {
    /// Transform type.
    pub transform_type: TransformType,
    /// Transform ID (see the `encr`, `prf`, `integ`, `dh`, `esn` modules).
    pub transform_id: u16,
    /// Attributes, in order.
    pub attributes: Vec<Attribute>,
}

impl Transform {
    /// A transform without attributes.
    pub fn new(transform_type: TransformType, transform_id: u16) -> Transform {
        Transform { transform_type, transform_id, attributes: Vec::new() }
    }

    /// A transform with a Key Length attribute (bits).
    pub fn with_key_length(transform_type: TransformType, transform_id: u16, bits: u16) -> Self {
        Transform { transform_type, transform_id, attributes: vec![Attribute::key_length(bits)] }
    }

    /// The Key Length attribute in bits, if present.
    pub fn key_length(&self) -> Option<u16> {
        self.attributes.iter().find_map(|a| match (a.attr_type, &a.value) {
            (ATTR_KEY_LENGTH, AttributeValue::Tv(v)) => Some(*v),
            _ => None,
        })
    }

    /// Whether some attribute is not Key Length (§3.3.6: such a transform is not acceptable).
    pub fn has_unknown_attributes(&self) -> bool {
        self.attributes.iter().any(|a| a.attr_type != ATTR_KEY_LENGTH)
    }

    fn buffer_len(&self) -> usize {
        8 + self.attributes.iter().map(Attribute::buffer_len).sum::<usize>()
    }

    fn parse(r: &mut Reader<'_>, last_expected: bool) -> Result<Transform, IkeError> {
        let last = r.u8("transform last substruc")?;
        match (last, last_expected) {
            (LAST, true) | (MORE_TRANSFORMS, false) => {}
            _ => {
                return Err(IkeError::BadValue {
                    what: "transform last substruc",
                    value: last.into(),
                });
            }
        }
        r.u8("transform reserved")?;
        let len = r.u16("transform length")? as usize;
        let body_len = len.checked_sub(4).filter(|&n| n >= 4);
        let body_len =
            body_len.ok_or(IkeError::BadLength { what: "transform length", value: len })?;
        let mut b = Reader::new(r.take(body_len, "transform")?);
        let transform_type = TransformType(b.u8("transform type")?);
        b.u8("transform reserved")?;
        let transform_id = b.u16("transform id")?;
        let mut attributes = Vec::new();
        while !b.is_empty() {
            let t = b.u16("attribute type")?;
            let v = b.u16("attribute value")?;
            let value = if t & AF_TV != 0 {
                AttributeValue::Tv(v)
            } else {
                AttributeValue::Tlv(b.take(v as usize, "attribute value")?.to_vec())
            };
            attributes.push(Attribute { attr_type: t & !AF_TV, value });
        }
        Ok(Transform { transform_type, transform_id, attributes })
    }

    fn emit(&self, w: &mut Writer<'_>, last: bool) -> Result<(), IkeError> {
        w.u8(if last { LAST } else { MORE_TRANSFORMS })?;
        w.u8(0)?;
        w.u16(len16(self.buffer_len(), "transform length")?)?;
        w.u8(self.transform_type.0)?;
        w.u8(0)?;
        w.u16(self.transform_id)?;
        self.attributes.iter().try_for_each(|a| a.emit(w))
    }
}

/// A proposal substructure (§3.3.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposal {
    /// Proposal number: 1 for the first, then one more each (§3.3.1); the answer echoes it.
    pub num: u8,
    /// IKE, AH or ESP.
    pub protocol_id: ProtocolId,
    /// The sender's SPI: empty in IKE_SA_INIT, 8 bytes for an IKE rekey, 4 for AH/ESP.
    pub spi: Vec<u8>,
    /// Transforms.
    pub transforms: Vec<Transform>,
}

impl Proposal {
    /// The first transform of `ty`, if any.
    pub fn transform(&self, ty: TransformType) -> Option<&Transform> {
        self.transforms.iter().find(|t| t.transform_type == ty)
    }

    fn buffer_len(&self) -> usize {
        8 + self.spi.len() + self.transforms.iter().map(Transform::buffer_len).sum::<usize>()
    }

    fn parse(r: &mut Reader<'_>) -> Result<(Proposal, bool), IkeError> {
        let last = r.u8("proposal last substruc")?;
        if last != LAST && last != MORE_PROPOSALS {
            return Err(IkeError::BadValue { what: "proposal last substruc", value: last.into() });
        }
        r.u8("proposal reserved")?;
        let len = r.u16("proposal length")? as usize;
        let body_len = len.checked_sub(4).filter(|&n| n >= 4);
        let body_len =
            body_len.ok_or(IkeError::BadLength { what: "proposal length", value: len })?;
        let mut b = Reader::new(r.take(body_len, "proposal")?);
        let num = b.u8("proposal num")?;
        let protocol_id = ProtocolId(b.u8("proposal protocol id")?);
        let spi_size = b.u8("proposal spi size")?;
        if !matches!(spi_size, 0 | 4 | 8) {
            return Err(IkeError::BadLength { what: "proposal spi size", value: spi_size.into() });
        }
        let n = b.u8("proposal num transforms")? as usize;
        let spi = b.take(spi_size.into(), "proposal spi")?.to_vec();
        let mut transforms = Vec::with_capacity(n);
        for i in 0..n {
            transforms.push(Transform::parse(&mut b, i + 1 == n)?);
        }
        if n == 0 || !b.is_empty() {
            return Err(IkeError::BadLength { what: "proposal num transforms", value: n });
        }
        Ok((Proposal { num, protocol_id, spi, transforms }, last == LAST))
    }

    fn emit(&self, w: &mut Writer<'_>, last: bool) -> Result<(), IkeError> {
        w.u8(if last { LAST } else { MORE_PROPOSALS })?;
        w.u8(0)?;
        w.u16(len16(self.buffer_len(), "proposal length")?)?;
        w.u8(self.num)?;
        w.u8(self.protocol_id.0)?;
        w.u8(u8::try_from(self.spi.len()).map_err(|_| IkeError::BadLength {
            what: "proposal spi size",
            value: self.spi.len(),
        })?)?;
        let n = u8::try_from(self.transforms.len()).map_err(|_| IkeError::BadLength {
            what: "proposal num transforms",
            value: self.transforms.len(),
        })?;
        w.u8(n)?;
        w.bytes(&self.spi)?;
        let count = self.transforms.len();
        for (i, t) in self.transforms.iter().enumerate() {
            t.emit(w, i + 1 == count)?;
        }
        Ok(())
    }
}

/// The Security Association payload body (§3.3): one or more proposals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sa {
    /// Proposals, in preference order.
    pub proposals: Vec<Proposal>,
}

impl Sa {
    /// Parses the payload body (after the generic header).
    pub fn parse(body: &[u8]) -> Result<Sa, IkeError> {
        let mut r = Reader::new(body);
        let mut proposals = Vec::new();
        loop {
            let (p, last) = Proposal::parse(&mut r)?;
            proposals.push(p);
            if last {
                break;
            }
        }
        if !r.is_empty() {
            return Err(IkeError::BadLength { what: "sa proposals", value: body.len() });
        }
        Ok(Sa { proposals })
    }

    /// Bytes of the body `emit` writes.
    pub fn buffer_len(&self) -> usize {
        self.proposals.iter().map(Proposal::buffer_len).sum()
    }

    /// Writes the body into exactly `buffer_len()` bytes.
    pub fn emit(&self, out: &mut [u8]) -> Result<(), IkeError> {
        if self.proposals.is_empty() {
            return Err(IkeError::BadLength { what: "sa proposals", value: 0 });
        }
        let mut w = Writer::new(out, self.buffer_len(), "sa")?;
        let count = self.proposals.len();
        for (i, p) in self.proposals.iter().enumerate() {
            p.emit(&mut w, i + 1 == count)?;
        }
        Ok(w.finish()?)
    }
}
