// SPDX-License-Identifier: GPL-2.0

//! Fuzzes the RFC 8797 private data decoder and the inline threshold negotiation.
//!
//! The input is the peer's private data. A decoded message must re-encode to its first eight
//! bytes, and negotiation must never raise our thresholds.

#![no_main]

use libfuzzer_sys::fuzz_target;
use rpcrdma_proto::private_data::{
    self,
    Inline,
    PrivateData, //
};

fuzz_target!(|data: &[u8]| {
    let peer = PrivateData::decode(data);
    if let Some(p) = &peer {
        assert_eq!(&p.encode()[..], &data[..private_data::SIZE]);
        assert!((1024..=262_144).contains(&p.send_size));
        assert!((1024..=262_144).contains(&p.recv_size));
    }
    // Our thresholds from the bytes past the message, if any.
    let word = |i: usize| {
        data.get(i..i + 4)
            .map_or(4096, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let ours = Inline {
        send: word(8),
        recv: word(12),
    };
    let n = private_data::negotiate(ours, peer.as_ref());
    assert!(n.inline.send <= ours.send && n.inline.recv <= ours.recv);
    if peer.is_none() {
        assert!(n.inline.send <= 1024 && n.inline.recv <= 1024 && !n.remote_invalidate);
    }
});
