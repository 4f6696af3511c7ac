//! A packet buffer with headroom and tailroom, so that ESP/AH headers are prepended and trailers
//! appended in place (no allocation per packet; buffers are made once and reused).

/// Default headroom: outer IPv6 (40) + AH with a 32-byte ICV (44) + ESP (8) + IV (16) + UDP (8),
/// rounded up.
pub const DEFAULT_HEADROOM: usize = 128;

/// Why a buffer operation could not be done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BufError {
    /// Not enough headroom or tailroom, or the data does not fit.
    #[error("packet buffer has no room for {0} more bytes")]
    NoRoom(usize),
}

/// A byte buffer holding one packet at `data[head..head + len]`.
#[derive(Clone)]
pub struct PacketBuf {
    data: Box<[u8]>,
    head: usize,
    len: usize,
}

impl std::fmt::Debug for PacketBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PacketBuf")
            .field("capacity", &self.data.len())
            .field("head", &self.head)
            .field("len", &self.len)
            .finish()
    }
}

impl PacketBuf {
    /// A buffer of `capacity` bytes whose packets start `headroom` bytes in.
    pub fn new(capacity: usize, headroom: usize) -> PacketBuf {
        PacketBuf {
            data: vec![0; capacity].into_boxed_slice(),
            head: headroom.min(capacity),
            len: 0,
        }
    }

    /// A buffer big enough for any IP packet (65535 bytes) plus IPsec overhead.
    pub fn with_max_packet() -> PacketBuf {
        PacketBuf::new(DEFAULT_HEADROOM + 65535 + 256, DEFAULT_HEADROOM)
    }

    /// Replaces the contents with `packet`, placed after `headroom` bytes.
    pub fn load(&mut self, packet: &[u8], headroom: usize) -> Result<(), BufError> {
        let end = headroom.checked_add(packet.len()).ok_or(BufError::NoRoom(packet.len()))?;
        let dst = self.data.get_mut(headroom..end).ok_or(BufError::NoRoom(packet.len()))?;
        dst.copy_from_slice(packet);
        self.head = headroom;
        self.len = packet.len();
        Ok(())
    }

    /// Sets the packet window without touching bytes (for drivers that read straight into
    /// [`PacketBuf::raw_mut`]).
    pub fn set_window(&mut self, head: usize, len: usize) -> Result<(), BufError> {
        if head.checked_add(len).is_none_or(|e| e > self.data.len()) {
            return Err(BufError::NoRoom(len));
        }
        self.head = head;
        self.len = len;
        Ok(())
    }

    /// The whole underlying storage.
    pub fn raw_mut(&mut self) -> &mut [u8] {
        &mut self.data
    }

    /// The packet.
    pub fn as_slice(&self) -> &[u8] {
        &self.data[self.head..self.head + self.len]
    }

    /// The packet, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.data[self.head..self.head + self.len]
    }

    /// Packet length.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if there is no packet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Free bytes before the packet.
    pub fn headroom(&self) -> usize {
        self.head
    }

    /// Free bytes after the packet.
    pub fn tailroom(&self) -> usize {
        self.data.len() - self.head - self.len
    }

    /// Grows the packet by `n` bytes at the front (contents unspecified).
    pub fn prepend(&mut self, n: usize) -> Result<(), BufError> {
        if n > self.head {
            return Err(BufError::NoRoom(n));
        }
        self.head -= n;
        self.len += n;
        Ok(())
    }

    /// Grows the packet by `n` bytes at the back (contents unspecified).
    pub fn append(&mut self, n: usize) -> Result<(), BufError> {
        if n > self.tailroom() {
            return Err(BufError::NoRoom(n));
        }
        self.len += n;
        Ok(())
    }

    /// Removes `n` bytes from the front.
    pub fn trim_front(&mut self, n: usize) -> Result<(), BufError> {
        if n > self.len {
            return Err(BufError::NoRoom(n));
        }
        self.head += n;
        self.len -= n;
        Ok(())
    }

    /// Shortens the packet to `len` bytes.
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Moves the first `n` bytes of the packet `by` bytes towards the front and grows the packet
    /// by `by` at the front... i.e. opens a gap of `by` bytes after the first `n` bytes (used to
    /// insert ESP/AH after the IP header in transport mode).
    pub fn open_gap(&mut self, n: usize, by: usize) -> Result<(), BufError> {
        if n > self.len {
            return Err(BufError::NoRoom(n));
        }
        self.prepend(by)?;
        let h = self.head;
        self.data.copy_within(h + by..h + by + n, h);
        Ok(())
    }

    /// Removes `by` bytes that follow the first `n` bytes of the packet (the inverse of
    /// [`PacketBuf::open_gap`]).
    pub fn close_gap(&mut self, n: usize, by: usize) -> Result<(), BufError> {
        if n.checked_add(by).is_none_or(|e| e > self.len) {
            return Err(BufError::NoRoom(by));
        }
        let h = self.head;
        self.data.copy_within(h..h + n, h + by);
        self.head += by;
        self.len -= by;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gap_round_trip() {
        let mut b = PacketBuf::new(64, 16);
        b.load(&[1, 2, 3, 4, 5, 6], 16).unwrap();
        b.open_gap(2, 3).unwrap();
        b.as_mut_slice()[2..5].copy_from_slice(&[9, 9, 9]);
        assert_eq!(b.as_slice(), &[1, 2, 9, 9, 9, 3, 4, 5, 6]);
        b.close_gap(2, 3).unwrap();
        assert_eq!(b.as_slice(), &[1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn bounds() {
        let mut b = PacketBuf::new(16, 4);
        assert!(b.load(&[0; 13], 4).is_err());
        b.load(&[0; 12], 4).unwrap();
        assert!(b.prepend(5).is_err());
        assert!(b.append(1).is_err());
        assert!(b.trim_front(13).is_err());
        assert!(b.close_gap(10, 3).is_err());
        assert!(b.set_window(10, 7).is_err());
    }
}
