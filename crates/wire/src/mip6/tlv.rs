//! The type-length-value options shared by the Mobility Header (RFC 6275 §6.2.1) and the
//! Destination Options header (RFC 8200 §4.2): Pad1 is a lone zero octet, PadN (type 1) is
//! padding with a Length, every other option is Type, Length (octets of data) and data. An
//! option with alignment requirement `xn+y` starts at an offset that is `y` modulo `x` from the
//! start of its header, and padding makes the header a multiple of 8 octets.

use crate::error::WireError;

/// Pad1's type (§6.2.2; RFC 8200 §4.2).
pub(crate) const PAD1: u8 = 0;
/// PadN's type (§6.2.3; RFC 8200 §4.2).
pub(crate) const PADN: u8 = 1;

/// An alignment requirement `xn+y` (§6.2; RFC 8200 §4.2), `x` a power of two up to 8.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Align {
    pub(crate) x: usize,
    pub(crate) y: usize,
}

impl Align {
    /// No requirement.
    pub(crate) const NONE: Align = Align { x: 1, y: 0 };

    /// Octets of padding to put at `offset` so the option that follows starts at `xn+y`.
    pub(crate) fn pad_before(self, offset: usize) -> usize {
        (self.y + self.x - offset % self.x) % self.x
    }
}

/// Octets of padding to put at `offset` to reach the next multiple of 8.
pub(crate) fn pad_to_8(offset: usize) -> usize {
    (8 - offset % 8) % 8
}

/// Writes `out.len()` octets of padding: one Pad1, or a PadN whose data is zero.
pub(crate) fn write_pad(out: &mut [u8]) {
    match out.len() {
        0 => {}
        1 => out[0] = PAD1,
        n => {
            out.fill(0);
            out[0] = PADN;
            out[1] = u8::try_from(n - 2).unwrap_or(u8::MAX);
        }
    }
}

/// One option found by [`walk`]: its type, data and offset within the walked area.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawOption<'a> {
    pub(crate) option_type: u8,
    pub(crate) data: &'a [u8],
}

/// Walks the options in `area`, skipping Pad1 and PadN; `what` names the option area in
/// errors (a Length running past the end is `Truncated`).
pub(crate) fn walk<'a>(
    area: &'a [u8],
    what: &'static str,
) -> Result<Vec<RawOption<'a>>, WireError> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(&option_type) = area.get(at) {
        if option_type == PAD1 {
            at += 1;
            continue;
        }
        let Some(&len) = area.get(at + 1) else {
            return Err(WireError::Truncated { what, len: area.len() - at, need: 2 });
        };
        let end = at + 2 + usize::from(len);
        let Some(data) = area.get(at + 2..end) else {
            return Err(WireError::Truncated { what, len: area.len() - at, need: end - at });
        };
        if option_type != PADN {
            out.push(RawOption { option_type, data });
        }
        at = end;
    }
    Ok(out)
}

/// Lays out options of the given (alignment, data length) starting at `start` (offset from the
/// header's first octet): returns each option's offset and the padded end (a multiple of 8).
pub(crate) fn layout(
    start: usize,
    options: impl Iterator<Item = (Align, usize)>,
) -> (Vec<usize>, usize) {
    let mut at = start;
    let mut offsets = Vec::new();
    for (align, data_len) in options {
        at += align.pad_before(at);
        offsets.push(at);
        at += 2 + data_len;
    }
    (offsets, at + pad_to_8(at))
}

/// Writes options laid out by [`layout`] into `area` (which starts at header offset `start`
/// and ends at the padded end): padding between them, each option's Type, Length and data.
pub(crate) fn emit<'a>(
    start: usize,
    area: &mut [u8],
    options: impl Iterator<Item = (Align, u8, &'a [u8])>,
    what: &'static str,
) -> Result<(), WireError> {
    let mut at = 0;
    for (align, option_type, data) in options {
        let pad = align.pad_before(start + at);
        let len = u8::try_from(data.len())
            .map_err(|_| WireError::BadLength { what, value: data.len() })?;
        let total = area.len();
        let dst = area.get_mut(at..at + pad + 2 + data.len()).ok_or(WireError::Truncated {
            what,
            len: total,
            need: at + pad + 2 + data.len(),
        })?;
        let (padding, option) = dst.split_at_mut(pad);
        write_pad(padding);
        option[0] = option_type;
        option[1] = len;
        option[2..].copy_from_slice(data);
        at += pad + 2 + data.len();
    }
    if let Some(rest) = area.get_mut(at..) {
        write_pad(rest);
    }
    Ok(())
}
