//! A bounds-checked reader and writer for the IKEv2 codecs: every read names its field, so a short
//! buffer becomes an `IkeError::Truncated` saying which field, never a panic.

use super::IkeError;

/// Reads big-endian fields from a byte slice.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }

    pub(crate) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], IkeError> {
        if self.buf.len() < n {
            return Err(IkeError::Truncated { what, len: self.buf.len(), need: n });
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    pub(crate) fn array<const N: usize>(
        &mut self,
        what: &'static str,
    ) -> Result<[u8; N], IkeError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, IkeError> {
        Ok(u8::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn u16(&mut self, what: &'static str) -> Result<u16, IkeError> {
        Ok(u16::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, IkeError> {
        Ok(u32::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.buf)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.buf.is_empty()
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
    /// Checks that `buf` is exactly `need` bytes.
    pub(crate) fn new(
        buf: &'a mut [u8],
        need: usize,
        what: &'static str,
    ) -> Result<Self, IkeError> {
        if buf.len() != need {
            return Err(IkeError::EmitBuffer { what, len: buf.len(), need });
        }
        Ok(Writer { buf, pos: 0, what })
    }

    pub(crate) fn bytes(&mut self, b: &[u8]) -> Result<(), IkeError> {
        self.sub(b.len())?.copy_from_slice(b);
        Ok(())
    }

    pub(crate) fn u8(&mut self, v: u8) -> Result<(), IkeError> {
        self.bytes(&[v])
    }

    pub(crate) fn u16(&mut self, v: u16) -> Result<(), IkeError> {
        self.bytes(&v.to_be_bytes())
    }

    pub(crate) fn u32(&mut self, v: u32) -> Result<(), IkeError> {
        self.bytes(&v.to_be_bytes())
    }

    /// The next `n` bytes, for a nested `emit`.
    pub(crate) fn sub(&mut self, n: usize) -> Result<&mut [u8], IkeError> {
        let start = self.pos;
        let len = self.buf.len();
        let dst = start
            .checked_add(n)
            .and_then(|end| self.buf.get_mut(start..end))
            .ok_or(IkeError::EmitBuffer { what: self.what, len, need: start + n })?;
        self.pos += n;
        Ok(dst)
    }

    /// Checks that every byte was written.
    pub(crate) fn finish(self) -> Result<(), IkeError> {
        if self.pos != self.buf.len() {
            return Err(IkeError::EmitBuffer {
                what: self.what,
                len: self.buf.len(),
                need: self.pos,
            });
        }
        Ok(())
    }
}

/// A length as a 16-bit field, or `BadLength` naming it.
pub(crate) fn len16(n: usize, what: &'static str) -> Result<u16, IkeError> {
    u16::try_from(n).map_err(|_| IkeError::BadLength { what, value: n })
}
