// SPDX-License-Identifier: GPL-2.0

//! Fuzzes the continuation reassembly state machine against a reference model.
//!
//! Input: one byte for `max_fragments`, two for `max_len`, then either (first byte even)
//! 4-byte synthetic fragment records, or (odd) length-prefixed received messages that go
//! through the version 2 decoder first, as the receive path does; each such message also goes
//! through `v2msg::fragment` and `v2msg::call_fragment`, whose payload offsets must stay within it.

#![no_main]

use libfuzzer_sys::fuzz_target;
use rpcrdma_proto::continuation::{
    Error,
    Fragment,
    Limits,
    Reassembly, //
};
use rpcrdma_proto::{
    v1,
    v2,
    v2msg, //
};

struct Model {
    limits: Limits,
    /// (xid, htype, response, fragments, len) of the sequence in progress.
    seq: Option<(u32, u32, bool, u32, usize)>,
}

impl Model {
    fn check(
        &mut self,
        r: &Reassembly,
        f: Fragment,
        res: Result<rpcrdma_proto::continuation::Placement, Error>,
    ) {
        let more = f.flags & v2::F_MORE != 0;
        let response = f.flags & v2::F_RESPONSE != 0;
        match res {
            Ok(p) => {
                let (count, offset) = match self.seq {
                    Some((x, h, rsp, c, l)) => {
                        assert!(x == f.xid && h == f.htype && rsp == response);
                        (c + 1, l)
                    }
                    None => (1, 0),
                };
                assert_eq!(p.offset, offset);
                assert_eq!(p.len, f.len);
                assert_eq!(p.index + 1, count);
                assert!(count <= self.limits.max_fragments);
                assert!(!more || count < self.limits.max_fragments);
                assert!(p.end() <= self.limits.max_len);
                assert_eq!(p.complete, !more);
                assert_eq!(f.flags & !v2::F_KNOWN, 0);
                self.seq = more.then_some((f.xid, f.htype, response, count, p.end()));
            }
            Err(e) => {
                assert!(e.code() == v2::ERR_INVAL_FLAG || e.code() == v2::ERR_SYSTEM);
                if let Error::Mismatch { xid, htype, .. } = e {
                    let (x, h, ..) = self.seq.expect("mismatch without a sequence");
                    assert_eq!((xid, htype), (x, h));
                }
                self.seq = None;
            }
        }
        assert_eq!(r.in_progress(), self.seq.is_some());
        assert_eq!(r.received(), self.seq.map_or(0, |s| s.4));
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let (head, mut rest) = data.split_at(3);
    let limits = Limits {
        max_fragments: u32::from(head[0] & 0x0f),
        max_len: usize::from(u16::from_be_bytes([head[1], head[2]])),
    };
    let mut r = Reassembly::new(limits);
    let mut m = Model { limits, seq: None };
    if head[0] & 0x10 == 0 {
        for rec in rest.chunks_exact(4) {
            let f = Fragment {
                xid: u32::from(rec[0] & 1),
                htype: u32::from(rec[1] % 7),
                flags: u32::from(rec[2] & 7),
                len: usize::from(rec[3]) * 16,
            };
            let res = r.feed(f);
            m.check(&r, f, res);
        }
        return;
    }
    while let Some((&len, tail)) = rest.split_first() {
        let n = usize::from(len).min(tail.len());
        let (msg, next) = tail.split_at(n);
        rest = next;
        let decoded = if r.in_progress() {
            v2::Header::decode_continued(msg, &v2::Limits::UNLIMITED)
        } else {
            v2::Header::decode(msg, &v2::Limits::UNLIMITED)
        };
        let Ok((h, off)) = decoded else {
            continue;
        };
        let f = Fragment {
            xid: h.prefix.xid,
            htype: u32::from(h.htype()),
            flags: h.prefix.flags.to_wire(),
            len: msg.len() - off,
        };
        let res = r.feed(f);
        m.check(&r, f, res);
        // The requester's and the responder's view of the same message: a fragment's payload
        // is what follows its offset, never beyond the message.
        let lim = v1::Limits {
            max_segments: 16,
            max_read_chunks: 16,
            max_write_chunks: 4,
            max_read_bytes: u64::MAX,
            max_write_bytes: u64::MAX,
        };
        if let Ok((f, at)) = v2msg::fragment(msg, &lim) {
            assert!(at <= msg.len() && at + f.len == msg.len());
        }
        if let Ok((f, at)) = v2msg::call_fragment(msg, &lim) {
            assert!(at <= msg.len() && at + f.len <= msg.len());
        }
    }
});
