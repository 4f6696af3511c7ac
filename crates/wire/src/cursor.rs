//! A bounds-checked reader and writer for the IKEv2 and HIP codecs: every read names its field,
//! so a short buffer becomes a `WireError::Truncated` saying which field, never a panic (the
//! IKEv2 codecs turn it into the `IkeError` of the same name).

use crate::error::WireError;

/// Reads big-endian fields from a byte slice.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }

    pub(crate) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], WireError> {
        if self.buf.len() < n {
            return Err(WireError::Truncated { what, len: self.buf.len(), need: n });
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    pub(crate) fn array<const N: usize>(
        &mut self,
        what: &'static str,
    ) -> Result<[u8; N], WireError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, WireError> {
        Ok(u8::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn u16(&mut self, what: &'static str) -> Result<u16, WireError> {
        Ok(u16::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, WireError> {
        Ok(u32::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn u64(&mut self, what: &'static str) -> Result<u64, WireError> {
        Ok(u64::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.buf)
    }

    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Fails with `BadLength` naming `what` if bytes are left over.
    pub(crate) fn end(&self, what: &'static str) -> Result<(), WireError> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(WireError::BadLength { what, value: self.buf.len() })
        }
    }
}

/// Writes big-endian fields into a slice of exactly the right length.
#[derive(Debug)]
pub(crate) struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Writer<'a> {
    /// Checks that `buf` is exactly `need` bytes; a wrong size is `Truncated` naming `what`
    /// (with `len` the buffer given and `need` the bytes required).
    pub(crate) fn new(
        buf: &'a mut [u8],
        need: usize,
        what: &'static str,
    ) -> Result<Self, WireError> {
        if buf.len() != need {
            return Err(WireError::Truncated { what, len: buf.len(), need });
        }
        Ok(Writer { buf, pos: 0, what })
    }

    pub(crate) fn bytes(&mut self, b: &[u8]) -> Result<(), WireError> {
        self.sub(b.len())?.copy_from_slice(b);
        Ok(())
    }

    pub(crate) fn u8(&mut self, v: u8) -> Result<(), WireError> {
        self.bytes(&[v])
    }

    pub(crate) fn u16(&mut self, v: u16) -> Result<(), WireError> {
        self.bytes(&v.to_be_bytes())
    }

    pub(crate) fn u32(&mut self, v: u32) -> Result<(), WireError> {
        self.bytes(&v.to_be_bytes())
    }

    pub(crate) fn u64(&mut self, v: u64) -> Result<(), WireError> {
        self.bytes(&v.to_be_bytes())
    }

    /// Writes `n` zero bytes (reserved fields, padding).
    pub(crate) fn zeros(&mut self, n: usize) -> Result<(), WireError> {
        self.sub(n)?.fill(0);
        Ok(())
    }

    /// The next `n` bytes, for a nested `emit`.
    pub(crate) fn sub(&mut self, n: usize) -> Result<&mut [u8], WireError> {
        let start = self.pos;
        let len = self.buf.len();
        let dst = start
            .checked_add(n)
            .and_then(|end| self.buf.get_mut(start..end))
            .ok_or(WireError::Truncated { what: self.what, len, need: start.saturating_add(n) })?;
        self.pos += n;
        Ok(dst)
    }

    /// Checks that every byte was written.
    pub(crate) fn finish(self) -> Result<(), WireError> {
        if self.pos != self.buf.len() {
            return Err(WireError::Truncated {
                what: self.what,
                len: self.buf.len(),
                need: self.pos,
            });
        }
        Ok(())
    }
}

/// A length as a 16-bit field, or `BadLength` naming it.
pub(crate) fn len16(n: usize, what: &'static str) -> Result<u16, WireError> {
    u16::try_from(n).map_err(|_| WireError::BadLength { what, value: n })
}
