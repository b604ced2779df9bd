// SPDX-License-Identifier: GPL-2.0

//! Where a responder's RDMA Writes go: a byte stream mapped onto the segments of a chunk.
//!
//! A result payload goes to its Write chunk, and a reply body too large to send inline to the
//! Reply chunk (RFC 8166, sections 3.4.6 and 3.5.4). Either is a stream of regions of the reply
//! (offset and length in it) that fills the chunk's segments in order. [`Pieces`] cuts the
//! stream where segments end: each [`Piece`] is one RDMA Write, of bytes within one region to
//! one segment. Empty segments are skipped. The caller checks beforehand that the segments
//! hold the stream (a payload no longer than its Write chunk, a body no longer than the Reply
//! chunk); should they not, the iterator says so once, with [`SegmentsShort`], and ends.

use super::v1::Segment;

/// One RDMA Write: `len` bytes of the reply at `res_off` to `remote` in the region `rkey`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    /// Offset of the bytes in the reply.
    pub res_off: u32,
    /// Length in bytes, never zero.
    pub len: u32,
    /// Remote address (the segment's offset plus what earlier pieces filled of it).
    pub remote: u64,
    /// The segment's handle.
    pub rkey: u32,
}

/// The segments ran out before the stream did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentsShort;

/// The [`Piece`]s that carry the byte stream made of `regions` into `segments`, in order.
#[derive(Clone, Debug)]
pub struct Pieces<'r, S> {
    regions: core::slice::Iter<'r, (u32, u32)>,
    /// What is left of the region being mapped: offset and length.
    region: (u32, u32),
    segments: S,
    /// The segment being filled, and how much of it is.
    cur: Option<(Segment, u32)>,
    failed: bool,
}

impl<'r, S: Iterator<Item = Segment>> Pieces<'r, S> {
    /// The pieces of the stream `regions` (offset, length in the reply) in `segments`.
    pub fn new(regions: &'r [(u32, u32)], segments: S) -> Self {
        Self {
            regions: regions.iter(),
            region: (0, 0),
            segments,
            cur: None,
            failed: false,
        }
    }
}

impl<S: Iterator<Item = Segment>> Iterator for Pieces<'_, S> {
    type Item = Result<Piece, SegmentsShort>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        while self.region.1 == 0 {
            self.region = *self.regions.next()?;
        }
        let (s, used) = match self.cur.take() {
            Some(c) => c,
            None => match self.segments.find(|s| s.length > 0) {
                Some(s) => (s, 0),
                None => {
                    self.failed = true;
                    return Some(Err(SegmentsShort));
                }
            },
        };
        let (off, len) = self.region;
        // `used < s.length`: a segment is kept only while it has room left.
        let n = len.min(s.length - used);
        self.region = (off.wrapping_add(n), len - n);
        self.cur = (used + n < s.length).then_some((s, used + n));
        Some(Ok(Piece {
            res_off: off,
            len: n,
            remote: s.offset.wrapping_add(u64::from(used)),
            rkey: s.handle,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(handle: u32, length: u32, offset: u64) -> Segment {
        Segment {
            handle,
            length,
            offset,
        }
    }

    fn piece(res_off: u32, len: u32, remote: u64, rkey: u32) -> Result<Piece, SegmentsShort> {
        Ok(Piece {
            res_off,
            len,
            remote,
            rkey,
        })
    }

    #[test]
    fn one_region_into_one_segment() {
        let segs = [seg(7, 4096, 0x1000)];
        let mut p = Pieces::new(&[(100, 4096)], segs.into_iter());
        assert_eq!(p.next(), Some(piece(100, 4096, 0x1000, 7)));
        assert_eq!(p.next(), None);
    }

    #[test]
    fn regions_span_segments_and_empty_ones_are_skipped() {
        let segs = [seg(1, 10, 100), seg(2, 0, 0), seg(3, 20, 500)];
        let regions = [(0, 4), (50, 0), (60, 16)];
        let got: [_; 4] = {
            let mut p = Pieces::new(&regions, segs.into_iter());
            core::array::from_fn(|_| p.next())
        };
        assert_eq!(
            got,
            [
                Some(piece(0, 4, 100, 1)),
                Some(piece(60, 6, 104, 1)),
                Some(piece(66, 10, 500, 3)),
                None,
            ]
        );
    }

    #[test]
    fn short_segments_fail_once() {
        let segs = [seg(1, 8, 0)];
        let mut p = Pieces::new(&[(0, 12)], segs.into_iter());
        assert_eq!(p.next(), Some(piece(0, 8, 0, 1)));
        assert_eq!(p.next(), Some(Err(SegmentsShort)));
        assert_eq!(p.next(), None);
    }

    #[test]
    fn nothing_to_place() {
        let mut p = Pieces::new(&[], core::iter::empty());
        assert_eq!(p.next(), None);
        let mut p = Pieces::new(&[(5, 0)], core::iter::empty());
        assert_eq!(p.next(), None);
    }
}
