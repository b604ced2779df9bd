// SPDX-License-Identifier: GPL-2.0

//! Fuzzes the version 2 header decoder, property-set decoder and negotiation classifier.
//!
//! The first input byte picks the decoding limits and whether the message continues a sequence;
//! the rest is a received message. Every view of a decoded header is walked, and a decoded
//! `RDMA2_MSG`, `RDMA2_NOMSG` or `RDMA2_ERROR` must re-encode to exactly the bytes it came from.

#![no_main]

use libfuzzer_sys::fuzz_target;
use rpcrdma_proto::negotiate;
use rpcrdma_proto::v2::{
    self,
    Body,
    Chunks,
    Header,
    Limits,
    Outgoing,
    ReadSegment,
    Segment, //
};

fn limits(sel: u8) -> Limits {
    if sel & 0x80 != 0 {
        Limits::UNLIMITED
    } else {
        Limits {
            max_read_chunks: u32::from(sel & 0x3),
            max_write_chunks: u32::from((sel >> 2) & 0x3),
            max_segments: u32::from((sel >> 4) & 0x7),
        }
    }
}

fn check(buf: &[u8], h: &Header<'_>, off: usize) {
    assert!(off <= buf.len());
    let mut out = vec![0u8; off];
    let re = match h.body {
        Body::Msg(l) | Body::NoMsg(l) => {
            let reads: Vec<ReadSegment> = l.reads.iter().collect();
            assert_eq!(reads.len(), l.reads.len());
            let n: usize = l.reads.chunks().map(|c| c.iter().count()).sum();
            assert_eq!(n, reads.len());
            let wv: Vec<Vec<Segment>> = l.writes.iter().map(|c| c.iter().collect()).collect();
            assert_eq!(wv.len(), l.writes.len());
            let ws: Vec<&[Segment]> = wv.iter().map(Vec::as_slice).collect();
            let rv: Option<Vec<Segment>> = l.reply.map(|c| c.iter().collect());
            let ch = Chunks {
                inv_handle: l.inv_handle,
                reads: &reads,
                writes: &ws,
                reply: rv.as_deref(),
            };
            let o = if matches!(h.body, Body::Msg(_)) {
                Outgoing::Msg(ch)
            } else {
                Outgoing::NoMsg(ch)
            };
            v2::encode(&mut out, &h.prefix, &o)
        }
        Body::Error(e) => v2::encode(&mut out, &h.prefix, &Outgoing::Error(e)),
        Body::ConnProp(s) => {
            assert!(s.iter().count() <= s.raw().count());
            let _ = s.resolve();
            return;
        }
        Body::ConnPropFragment => return,
    };
    let m = re.expect("a decoded header must re-encode");
    assert_eq!(&out[..m], &buf[..off]);
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, buf)) = data.split_first() else {
        return;
    };
    let l = limits(sel);
    let r = if sel & 0x40 != 0 {
        Header::decode_continued(buf, &l)
    } else {
        Header::decode(buf, &l)
    };
    match r {
        Ok((h, off)) => check(buf, &h, off),
        Err(e) => {
            let _ = (e.code(), e.reply());
        }
    }
    let _ = v2::PropSet::decode(buf).map(|(s, _)| s.resolve());
    let _ = negotiate::classify(buf);
});
