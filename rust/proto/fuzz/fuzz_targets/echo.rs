// SPDX-License-Identifier: GPL-2.0

//! Fuzzes the requester's check of a reply's echoed chunks against what its call offered.
//!
//! The input is an offer, then a reply: one byte each for the number of Write and Reply chunk
//! segments offered (0 to 4; 5 and above offer no chunk), that many segments of 8 bytes (handle,
//! length; the offset does not matter), then the received message. The message is decoded as
//! the client does (`REPLY_LIMITS`) and checked with `echo::check_msg` or `echo::check_nomsg`.
//! Whatever the input: no panic, a byte count never above what was offered, and a reply length
//! (`msg_reply_len`) that never wraps.

#![no_main]

use libfuzzer_sys::fuzz_target;
use rpcrdma_proto::echo::{
    self,
    Offered, //
};
use rpcrdma_proto::v1::{
    Body,
    Header,
    Limits,
    Segment, //
};

/// The client's limits for a reply (`REPLY_LIMITS` in `rust/client/conn.rs`).
const REPLY_LIMITS: Limits = Limits {
    max_segments: 16,
    max_read_chunks: 0,
    max_write_chunks: 1,
    max_read_bytes: 0,
    max_write_bytes: u32::MAX as u64,
};

/// Takes `n` segments of 8 bytes from `data`; `None` if it is too short.
fn segments<'a>(data: &mut &'a [u8], n: usize) -> Option<Vec<Segment>> {
    let mut out = Vec::new();
    for _ in 0..n {
        let (seg, rest) = data.split_at_checked(8)?;
        *data = rest;
        out.push(Segment {
            handle: u32::from_be_bytes(seg[..4].try_into().ok()?),
            length: u32::from_be_bytes(seg[4..].try_into().ok()?),
            offset: 0,
        });
    }
    Some(out)
}

fuzz_target!(|data: &[u8]| {
    let Some((&[nw, nr], mut rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let write = if nw < 5 {
        segments(&mut rest, usize::from(nw))
    } else {
        None
    };
    let reply = if nr < 5 {
        segments(&mut rest, usize::from(nr))
    } else {
        None
    };
    if (nw < 5 && write.is_none()) || (nr < 5 && reply.is_none()) {
        return;
    }
    let offered = Offered {
        write: write.as_deref(),
        reply: reply.as_deref(),
    };
    let Ok(d) = Header::decode_reply(rest, &REPLY_LIMITS) else {
        return;
    };
    let total =
        |s: Option<&[Segment]>| s.map_or(0u64, |s| s.iter().map(|s| u64::from(s.length)).sum());
    match d.header.body {
        Body::Msg(c) => {
            if let Ok(n) = echo::check_msg(&c, &offered) {
                assert!(u64::from(n) <= total(offered.write));
                if let Some(len) = echo::msg_reply_len(rest.len() - d.payload_offset, n) {
                    assert!(u64::from(len) >= u64::from(n));
                }
            }
        }
        Body::NoMsg(c) => {
            if let Ok(n) = echo::check_nomsg(&c, &offered) {
                assert!(u64::from(n) <= total(offered.reply));
            }
        }
        _ => {}
    }
});
