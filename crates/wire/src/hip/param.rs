//! The parameter TLV (RFC 7401 §5.2.1) and the walk over a sequence of them.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! |             Type            |C|             Length            |
//! /                          Contents                             /
//! /                                               +-+-+-+-+-+-+-+-+
//! |                                               |    Padding    |
//! ```
//!
//! Length counts the Contents only; Padding (0–7 octets) makes the whole TLV a multiple of 8.

use super::consts::{PARAM_HEADER_LEN, ParamType};
use crate::cursor::{Reader, Writer, len16};
use crate::error::WireError;

/// Octets a parameter with `contents_len` octets of contents takes: header, contents, padding.
pub const fn param_len(contents_len: usize) -> usize {
    (PARAM_HEADER_LEN + contents_len).div_ceil(8) * 8
}

/// One parameter before its contents are parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawParam<'a> {
    /// Type, critical bit included.
    pub param_type: ParamType,
    /// Offset of the TLV from the start of the packet (or of the bytes given to
    /// [`Params::new`]).
    pub offset: usize,
    /// The Contents (Length octets, padding excluded).
    pub contents: &'a [u8],
}

impl RawParam<'_> {
    /// The critical bit (§5.2.1).
    pub fn is_critical(&self) -> bool {
        self.param_type.is_critical()
    }
    /// Octets the TLV takes, padding included.
    pub fn padded_len(&self) -> usize {
        param_len(self.contents.len())
    }
}

/// Iterates over a sequence of parameters (a packet's, or the plaintext of an ENCRYPTED
/// parameter). Yields one error and stops on truncation, a bad length or a parameter whose type
/// is lower than the previous one (§5.2.1, paraphrased, text not reachable: parameters in
/// ascending order of type; equal types may repeat, e.g. several ESP_INFO in an UPDATE, RFC
/// 7402 §5.1.1).
#[derive(Debug, Clone)]
pub struct Params<'a> {
    bytes: &'a [u8],
    pos: usize,
    base: usize,
    last: u16,
    done: bool,
}

impl<'a> Params<'a> {
    /// The parameters in `bytes`; offsets are from the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self::with_base(bytes, 0)
    }

    pub(crate) fn with_base(bytes: &'a [u8], base: usize) -> Self {
        Params { bytes, pos: 0, base, last: 0, done: false }
    }

    fn step(&mut self) -> Result<Option<RawParam<'a>>, WireError> {
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        if rest.is_empty() {
            return Ok(None);
        }
        let mut r = Reader::new(rest);
        let ty = r.u16("parameter header")?;
        let len = usize::from(r.u16("parameter header")?);
        let padded = param_len(len);
        if padded > rest.len() {
            return Err(WireError::BadLength { what: "parameter length", value: len });
        }
        if ty < self.last {
            return Err(WireError::BadValue { what: "parameter order", value: u64::from(ty) });
        }
        let contents = r.take(len, "parameter contents")?;
        let p = RawParam { param_type: ParamType(ty), offset: self.base + self.pos, contents };
        self.last = ty;
        self.pos += padded;
        Ok(Some(p))
    }
}

impl<'a> Iterator for Params<'a> {
    type Item = Result<RawParam<'a>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = self.step().transpose();
        if !matches!(r, Some(Ok(_))) {
            self.done = true;
        }
        r
    }
}

/// Writes one TLV of type `ty` with `contents` and zero padding into exactly
/// `param_len(contents.len())` octets.
pub fn emit_param(ty: ParamType, contents: &[u8], out: &mut [u8]) -> Result<(), WireError> {
    let mut w = Writer::new(out, param_len(contents.len()), "parameter")?;
    w.u16(ty.0)?;
    w.u16(len16(contents.len(), "parameter length")?)?;
    w.bytes(contents)?;
    w.zeros(param_len(contents.len()) - PARAM_HEADER_LEN - contents.len())?;
    w.finish()
}

/// A typed parameter: its type number, how to read its Contents and how to write them.
/// `parse` sees only the Contents (no TLV header, no padding); `emit` writes the whole TLV.
pub trait ParamRepr: Sized {
    /// The parameter type this repr reads and writes.
    const TYPE: ParamType;

    /// Reads the Contents. Errors name the field.
    fn parse(contents: &[u8]) -> Result<Self, WireError>;

    /// Octets of Contents (the Length field).
    fn contents_len(&self) -> usize;

    /// Writes the Contents into exactly `contents_len()` octets.
    fn emit_contents(&self, out: &mut [u8]) -> Result<(), WireError>;

    /// Reads a raw parameter, checking its type.
    fn from_raw(raw: &RawParam<'_>) -> Result<Self, WireError> {
        if raw.param_type != Self::TYPE {
            return Err(WireError::BadValue {
                what: "parameter type",
                value: u64::from(raw.param_type.0),
            });
        }
        Self::parse(raw.contents)
    }

    /// Octets the TLV takes, padding included.
    fn buffer_len(&self) -> usize {
        param_len(self.contents_len())
    }

    /// Writes the TLV (Type, Length, Contents, zero padding) into exactly `buffer_len()` octets.
    fn emit(&self, out: &mut [u8]) -> Result<(), WireError> {
        let n = self.contents_len();
        let mut w = Writer::new(out, param_len(n), "parameter")?;
        w.u16(Self::TYPE.0)?;
        w.u16(len16(n, "parameter length")?)?;
        self.emit_contents(w.sub(n)?)?;
        w.zeros(param_len(n) - PARAM_HEADER_LEN - n)?;
        w.finish()
    }

    /// The TLV as a new vector.
    fn to_vec(&self) -> Result<Vec<u8>, WireError> {
        let mut v = vec![0; self.buffer_len()];
        self.emit(&mut v)?;
        Ok(v)
    }
}
