// SPDX-License-Identifier: GPL-2.0

//! Property tests for the placement of a byte stream onto a chunk's segments.

use proptest::prelude::*;
use rpcrdma_proto::placement::{
    Pieces,
    SegmentsShort, //
};
use rpcrdma_proto::v1::Segment;

/// Regions of a reply (offset, length), in order and apart, as a reply's body around its
/// payloads is.
fn regions() -> impl Strategy<Value = Vec<(u32, u32)>> {
    prop::collection::vec((0u32..64, 0u32..300), 0..6).prop_map(|v| {
        let mut at = 0u32;
        v.into_iter()
            .map(|(gap, len)| {
                let r = (at + gap, len);
                at += gap + len;
                r
            })
            .collect()
    })
}

fn segments() -> impl Strategy<Value = Vec<Segment>> {
    prop::collection::vec((any::<u32>(), 0u32..200, 0u64..1 << 40), 0..8).prop_map(|v| {
        v.into_iter()
            .map(|(handle, length, offset)| Segment {
                handle,
                length,
                offset,
            })
            .collect()
    })
}

proptest! {
    /// The pieces carry the stream's bytes in order, each into the segment that comes next
    /// with room, filling every segment from its start; or, when the segments hold less than
    /// the stream, as much as they hold and then one `SegmentsShort`.
    #[test]
    fn pieces_fill_segments_in_order(regions in regions(), segs in segments()) {
        let stream: Vec<u32> = regions.iter().flat_map(|&(o, l)| o..o + l).collect();
        let room: Vec<(u32, u64)> = segs
            .iter()
            .filter(|s| s.length > 0)
            .flat_map(|s| (0..u64::from(s.length)).map(move |i| (s.handle, s.offset + i)))
            .collect();
        let mut placed = Vec::new();
        let mut short = 0;
        for p in Pieces::new(&regions, segs.iter().copied()) {
            match p {
                Ok(p) => {
                    prop_assert!(p.len > 0);
                    for i in 0..p.len {
                        placed.push((p.res_off + i, p.rkey, p.remote + u64::from(i)));
                    }
                }
                Err(SegmentsShort) => short += 1,
            }
        }
        let n = stream.len().min(room.len());
        prop_assert_eq!(placed.len(), n);
        for (k, &(byte, rkey, remote)) in placed.iter().enumerate() {
            prop_assert_eq!(byte, stream[k]);
            prop_assert_eq!((rkey, remote), room[k]);
        }
        prop_assert_eq!(short, usize::from(stream.len() > room.len()));
    }
}
