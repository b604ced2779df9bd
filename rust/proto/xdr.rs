// SPDX-License-Identifier: GPL-2.0

//! XDR (RFC 4506) primitives over byte slices.
//!
//! [`Decoder`] reads from a received buffer and hands out borrowed sub-slices (no copies);
//! [`Encoder`] writes into a caller's buffer. Neither allocates, and every failure is an explicit
//! [`Error`]: XDR items are big-endian and 4-byte aligned, and variable-length items are checked
//! against both the remaining input and a caller-supplied maximum before anything is touched.

/// Size of one XDR unit in bytes.
pub const UNIT: usize = 4;

/// Errors of the XDR layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The buffer ended before the item did (decoding), or has no room for it (encoding).
    Short,
    /// A discriminant (enum or union arm, boolean) has a value the protocol does not define.
    BadDiscriminant(u32),
    /// A length is larger than the caller's limit or does not fit in `usize` once padded.
    LengthOverflow,
    /// A position or length that must be a multiple of [`UNIT`] is not.
    Misaligned,
}

/// Result of an XDR operation.
pub type Result<T> = core::result::Result<T, Error>;

/// Rounds `len` up to a multiple of [`UNIT`], or `None` on overflow.
#[inline]
pub const fn pad(len: usize) -> Option<usize> {
    match len.checked_add(UNIT - 1) {
        Some(v) => Some(v & !(UNIT - 1)),
        None => None,
    }
}

/// Returns `Ok(())` if `v` is a multiple of [`UNIT`], [`Error::Misaligned`] otherwise.
#[inline]
pub const fn check_aligned(v: u64) -> Result<()> {
    if v % UNIT as u64 == 0 {
        Ok(())
    } else {
        Err(Error::Misaligned)
    }
}

/// Reads XDR items from a received buffer.
///
/// # Invariants
///
/// `pos <= buf.len()` and `pos` is a multiple of [`UNIT`].
#[derive(Clone, Debug)]
pub struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    /// Creates a decoder at the start of `buf`.
    pub const fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// Offset of the next item from the start of the buffer.
    pub const fn position(&self) -> usize {
        self.pos
    }

    /// Number of bytes not yet decoded.
    pub const fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The bytes not yet decoded.
    pub fn rest(&self) -> &'a [u8] {
        // INVARIANT: `pos <= buf.len()`, so the range is in bounds.
        self.buf.get(self.pos..).unwrap_or(&[])
    }

    /// Takes the next `len` bytes (no padding).
    fn take(&mut self, len: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(len).ok_or(Error::Short)?;
        let s = self.buf.get(self.pos..end).ok_or(Error::Short)?;
        self.pos = end;
        Ok(s)
    }

    /// Decodes an unsigned 32-bit integer.
    pub fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Decodes an unsigned 64-bit integer (unsigned hyper).
    pub fn u64(&mut self) -> Result<u64> {
        let hi = self.u32()?;
        let lo = self.u32()?;
        Ok((u64::from(hi) << 32) | u64::from(lo))
    }

    /// Decodes a boolean; any value other than 0 or 1 is [`Error::BadDiscriminant`].
    pub fn bool(&mut self) -> Result<bool> {
        match self.u32()? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(Error::BadDiscriminant(v)),
        }
    }

    /// Decodes fixed-length opaque data of `len` bytes followed by its padding.
    pub fn opaque_fixed(&mut self, len: usize) -> Result<&'a [u8]> {
        let padded = pad(len).ok_or(Error::LengthOverflow)?;
        if padded > self.remaining() {
            return Err(Error::Short);
        }
        let s = self.take(len)?;
        self.take(padded - len)?;
        Ok(s)
    }

    /// Decodes variable-length opaque data of at most `max` bytes.
    pub fn opaque(&mut self, max: usize) -> Result<&'a [u8]> {
        let len = usize::try_from(self.u32()?).map_err(|_| Error::LengthOverflow)?;
        if len > max {
            return Err(Error::LengthOverflow);
        }
        self.opaque_fixed(len)
    }

    /// Skips `len` bytes, which must be a multiple of [`UNIT`].
    pub fn skip(&mut self, len: usize) -> Result<()> {
        if len % UNIT != 0 {
            return Err(Error::Misaligned);
        }
        self.take(len).map(|_| ())
    }
}

/// Writes XDR items into a caller's buffer.
///
/// # Invariants
///
/// `pos <= buf.len()` and `pos` is a multiple of [`UNIT`] unless the caller wrote raw bytes.
#[derive(Debug)]
pub struct Encoder<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> Encoder<'a> {
    /// Creates an encoder at the start of `buf`.
    pub fn new(buf: &'a mut [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// Number of bytes written so far.
    pub const fn position(&self) -> usize {
        self.pos
    }

    /// Room left in the buffer.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Reserves the next `len` bytes and returns them for writing.
    fn reserve(&mut self, len: usize) -> Result<&mut [u8]> {
        let end = self.pos.checked_add(len).ok_or(Error::Short)?;
        let start = self.pos;
        let s = self.buf.get_mut(start..end).ok_or(Error::Short)?;
        self.pos = end;
        Ok(s)
    }

    /// Encodes an unsigned 32-bit integer.
    pub fn u32(&mut self, v: u32) -> Result<()> {
        self.reserve(4)?.copy_from_slice(&v.to_be_bytes());
        Ok(())
    }

    /// Encodes an unsigned 64-bit integer (unsigned hyper).
    pub fn u64(&mut self, v: u64) -> Result<()> {
        self.reserve(8)?.copy_from_slice(&v.to_be_bytes());
        Ok(())
    }

    /// Encodes a boolean.
    pub fn bool(&mut self, v: bool) -> Result<()> {
        self.u32(u32::from(v))
    }

    /// Encodes fixed-length opaque data followed by zero padding.
    pub fn opaque_fixed(&mut self, data: &[u8]) -> Result<()> {
        let padded = pad(data.len()).ok_or(Error::LengthOverflow)?;
        if padded > self.remaining() {
            return Err(Error::Short);
        }
        let s = self.reserve(padded)?;
        let (d, p) = s.split_at_mut(data.len());
        d.copy_from_slice(data);
        p.fill(0);
        Ok(())
    }

    /// Encodes variable-length opaque data (length, bytes, padding).
    pub fn opaque(&mut self, data: &[u8]) -> Result<()> {
        let len = u32::try_from(data.len()).map_err(|_| Error::LengthOverflow)?;
        let padded = pad(data.len()).ok_or(Error::LengthOverflow)?;
        if padded.checked_add(4).ok_or(Error::LengthOverflow)? > self.remaining() {
            return Err(Error::Short);
        }
        self.u32(len)?;
        self.opaque_fixed(data)
    }

    /// Overwrites the 32-bit word at byte offset `at`, which must already have been written.
    ///
    /// Used to patch a count or length once it is known.
    pub fn patch_u32(&mut self, at: usize, v: u32) -> Result<()> {
        let end = at.checked_add(4).ok_or(Error::Short)?;
        if end > self.pos {
            return Err(Error::Short);
        }
        self.buf[at..end].copy_from_slice(&v.to_be_bytes());
        Ok(())
    }

    /// Returns the number of bytes written, ending the encoding.
    pub fn finish(self) -> usize {
        self.pos
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_round_trip_big_endian() {
        let mut b = [0u8; 16];
        let mut e = Encoder::new(&mut b);
        e.u32(0x0102_0304).unwrap();
        e.u64(0x1122_3344_5566_7788).unwrap();
        e.bool(true).unwrap();
        assert_eq!(e.finish(), 16);
        assert_eq!(b[..4], [1, 2, 3, 4]);
        assert_eq!(b[4..12], [0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]);
        let mut d = Decoder::new(&b);
        assert_eq!(d.u32(), Ok(0x0102_0304));
        assert_eq!(d.u64(), Ok(0x1122_3344_5566_7788));
        assert_eq!(d.bool(), Ok(true));
        assert_eq!(d.u32(), Err(Error::Short));
    }

    #[test]
    fn opaque_is_padded_and_bounded() {
        let mut b = [0xffu8; 12];
        let mut e = Encoder::new(&mut b);
        e.opaque(b"abcde").unwrap();
        assert_eq!(e.finish(), 12);
        assert_eq!(b, [0, 0, 0, 5, b'a', b'b', b'c', b'd', b'e', 0, 0, 0]);
        assert_eq!(Decoder::new(&b).opaque(5), Ok(&b"abcde"[..]));
        assert_eq!(Decoder::new(&b).opaque(4), Err(Error::LengthOverflow));
        assert_eq!(Decoder::new(&b[..11]).opaque(16), Err(Error::Short));
        let huge = [0xff, 0xff, 0xff, 0xff];
        assert_eq!(Decoder::new(&huge).opaque(usize::MAX), Err(Error::Short));
    }

    #[test]
    fn bad_bool_and_alignment() {
        assert_eq!(
            Decoder::new(&[0, 0, 0, 2]).bool(),
            Err(Error::BadDiscriminant(2))
        );
        assert_eq!(check_aligned(6), Err(Error::Misaligned));
        assert_eq!(check_aligned(8), Ok(()));
        assert_eq!(Decoder::new(&[0; 8]).skip(3), Err(Error::Misaligned));
        let mut small = [0u8; 3];
        assert_eq!(Encoder::new(&mut small).u32(1), Err(Error::Short));
    }
}
