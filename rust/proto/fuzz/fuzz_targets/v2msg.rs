// SPDX-License-Identifier: GPL-2.0

//! Fuzzes the version 2 entry points of both ends (`v2msg`): what a responder makes of a
//! received message (`decode_call`, `call_fragment`) and what a requester makes of one
//! (`decode_reply`, `fragment`), on messages of any length.
//!
//! The first input byte picks the version 1 limits the responder decodes with (as `v1_decode`);
//! the rest is one received message. Offsets must stay within it. A refused Call's answer must
//! encode and be read back by a requester as that same error; a valid Call's reply header, as
//! a responder builds it, must be accepted by a requester, its payload starting right after.

#![no_main]

#[path = "../common/answer.rs"]
mod answer;

use libfuzzer_sys::fuzz_target;
use rpcrdma_proto::v1::{
    Chunks,
    Limits, //
};
use rpcrdma_proto::v2msg::{
    self,
    Inbound,
    Refusal,
    Reply, //
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

/// Answers a valid Call as our responder does and checks a requester accepts the answer.
fn answer(c: &Chunks<'_>, xid: u32, seed: u32) {
    let (payloads, reply_len) = answer::sizes(c, seed);
    let len = v2msg::reply_header_len(c, reply_len.is_some());
    let mut out = vec![0u8; len];
    let n = v2msg::encode_reply(
        &mut Encoder::new(&mut out),
        xid,
        v2msg::credit_word(32),
        c,
        &payloads,
        reply_len,
    )
    .expect("reply fits");
    assert_eq!(n, len);
    let l = Limits {
        max_write_chunks: c.writes.len(),
        ..Limits::UNLIMITED
    };
    match v2msg::decode_reply(&out, &l) {
        Ok(Reply::Rpc(d)) => {
            assert_eq!(d.payload_offset, len);
            assert_eq!(d.header.xid, xid);
        }
        r => panic!("requester refuses our reply: {r:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, msg)) = data.split_first() else {
        return;
    };
    let l = limits(sel);

    // The responder's view.
    match v2msg::decode_call(msg, &l) {
        Ok(Inbound::Call(call)) => {
            let c = call.chunks(msg);
            answer(&c, call.xid, u32::from(sel) << 8);
        }
        Ok(Inbound::ConnProp(p)) => {
            let _ = p.send_threshold(4096);
            let _ = p.segment_caps(30, 11, 4096);
        }
        Ok(Inbound::CreditRefresh) | Err(Refusal::Drop) => {}
        Err(Refusal::Answer { xid, body }) => {
            // The error our responder sends, as a requester reads it.
            let mut out = [0u8; v2msg::ERROR_MAX];
            let n = v2msg::encode_error(&mut out, xid, v2msg::credit_word(1), body)
                .expect("the error encodes");
            assert_eq!(
                v2msg::decode_reply(&out[..n], &Limits::UNLIMITED),
                Ok(Reply::Error(body))
            );
        }
    }
    if let Ok((_, at)) = v2msg::call_fragment(msg, &l) {
        assert!(at <= msg.len());
    }

    // The requester's view.
    if let Ok(Reply::Rpc(d)) = v2msg::decode_reply(msg, &l) {
        assert!(d.payload_offset <= msg.len());
    }
    if let Ok((_, at)) = v2msg::fragment(msg, &l) {
        assert!(at <= msg.len());
    }
});
