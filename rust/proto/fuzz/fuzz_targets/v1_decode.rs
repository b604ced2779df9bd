// SPDX-License-Identifier: GPL-2.0

//! Fuzzes the version 1 header decoders, their views and the reply encoder.
//!
//! The first input byte picks the decoding limits; the rest is a received message. It is
//! decoded as a call (responder), as a reply (requester) and generically; every view is walked
//! and every error mapped to a verdict. A decoded `RDMA_MSG`/`RDMA_NOMSG` header must re-encode
//! to exactly the bytes it came from, and a responder's reply to a valid call must be accepted
//! by a requester.

#![no_main]

#[path = "../common/answer.rs"]
mod answer;

use libfuzzer_sys::fuzz_target;
use rpcrdma_proto::v1::{
    self,
    Body,
    Chunks,
    Header,
    Limits,
    Lists,
    ReadSegment,
    Role,
    Segment, //
};
use rpcrdma_proto::xdr::Encoder;

fn limits(sel: u8) -> Limits {
    match sel >> 6 {
        0 => Limits::UNLIMITED,
        1 => Limits::svcrdma(260, 4096),
        _ => Limits {
            max_segments: u32::from(sel & 0x7),
            max_read_chunks: u32::from((sel >> 3) & 0x3),
            max_write_chunks: u32::from((sel >> 5) & 0x1) + 1,
            max_read_bytes: 1 << 16,
            max_write_bytes: 1 << 20,
        },
    }
}

fn walk(c: &Chunks<'_>) -> u64 {
    let mut n = c.reads.total_length();
    if let Some(pz) = c.reads.position_zero() {
        n = n.wrapping_add(pz.length() + u64::from(pz.segment_count()));
    }
    for chunk in c.reads.chunks() {
        n = n.wrapping_add(u64::from(chunk.position()) + chunk.length());
        n = n.wrapping_add(u64::from(chunk.segment_count()));
    }
    for w in c.writes.chunks() {
        n = n.wrapping_add(w.length() + u64::from(w.segment_count()));
    }
    n.wrapping_add(c.reply.map_or(0, |r| r.length()))
}

/// Re-encodes decoded lists and checks they reproduce the header bytes.
fn reencode(data: &[u8], h: &Header<'_>, c: &Chunks<'_>, hdr_len: usize) {
    let reads: Vec<ReadSegment> = c.reads.segments().collect();
    let owned: Vec<Vec<Segment>> = c.writes.chunks().map(|w| w.segments().collect()).collect();
    let writes: Vec<&[Segment]> = owned.iter().map(Vec::as_slice).collect();
    let reply: Option<Vec<Segment>> = c.reply.map(|r| r.segments().collect());
    let lists = Lists {
        reads: &reads,
        writes: &writes,
        reply: reply.as_deref(),
    };
    let mut out = vec![0u8; hdr_len];
    let n = v1::encode(
        &mut Encoder::new(&mut out),
        h.xid,
        h.credits,
        h.body.proc(),
        &lists,
    )
    .expect("decoded header re-encodes");
    assert_eq!(n, hdr_len);
    assert_eq!(&out[..], &data[..hdr_len]);
}

/// Answers a valid call and checks a requester accepts the answer.
fn answer(c: &Chunks<'_>, seed: u32) {
    let (payloads, reply_len) = answer::sizes(c, seed);
    let len = v1::reply_header_len(c, reply_len.is_some());
    let mut out = vec![0u8; len];
    let n = v1::encode_reply(&mut Encoder::new(&mut out), 1, 1, c, &payloads, reply_len)
        .expect("reply fits");
    assert_eq!(n, len);
    let l = Limits {
        max_write_chunks: c.writes.len(),
        ..Limits::UNLIMITED
    };
    let r = Header::decode_reply(&out, &l).expect("requester accepts our reply");
    assert_eq!(r.payload_offset, len);
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, msg)) = data.split_first() else {
        return;
    };
    let l = limits(sel);
    let _ = v1::peek(msg);

    match Header::decode(msg, &l) {
        Ok(d) => {
            assert!(d.payload_offset <= msg.len());
            if let Some(c) = d.header.body.chunks() {
                walk(c);
                reencode(msg, &d.header, c, d.payload_offset);
            }
        }
        Err(e) => {
            e.verdict(Role::Responder);
        }
    }
    match Header::decode_call(msg, &l) {
        Ok(d) => {
            let c = d.header.body.chunks().expect("calls have chunk lists");
            walk(c);
            answer(c, u32::from(sel) << 8);
            // The server's decode-once form holds the same lists (within its chunk bound).
            if let Ok(call) = v1::Call::decode(msg, &l) {
                assert_eq!(&call.chunks(msg), c);
            }
        }
        Err(e) => {
            assert_ne!(e.verdict(Role::Responder), v1::Verdict::Fail);
            if l.max_read_chunks <= Limits::MAX_CHUNKS && l.max_write_chunks <= Limits::MAX_CHUNKS {
                assert_eq!(v1::Call::decode(msg, &l), Err(e));
            }
        }
    }
    match Header::decode_reply(msg, &l) {
        Ok(d) => {
            if let Body::Msg(c) | Body::NoMsg(c) = d.header.body {
                assert!(c.reads.is_empty());
                walk(&c);
            }
        }
        Err(e) => assert!(matches!(
            e.verdict(Role::Requester),
            v1::Verdict::Drop | v1::Verdict::Fail
        )),
    }
});
