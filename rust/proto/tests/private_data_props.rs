// SPDX-License-Identifier: GPL-2.0

//! Property tests for RFC 8797 private data and credit accounting.

use proptest::prelude::*;
use rpcrdma_proto::credits;
use rpcrdma_proto::private_data::{
    self,
    Inline,
    PrivateData, //
};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5000))]

    /// Any byte string decodes without panicking; a decoded message re-encodes to its first
    /// eight bytes.
    #[test]
    fn decode_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        if let Some(p) = PrivateData::decode(&bytes) {
            prop_assert_eq!(&p.encode()[..], &bytes[..private_data::SIZE]);
        }
    }

    /// Messages with the right magic and version always decode; sizes are 1..=256 KiB.
    #[test]
    fn valid_messages_decode(flags in any::<u8>(), s in any::<u8>(), r in any::<u8>()) {
        let b = [0xf6, 0xab, 0x0e, 0x18, 1, flags, s, r];
        let p = PrivateData::decode(&b).unwrap();
        prop_assert!((1024..=262_144).contains(&p.send_size));
        prop_assert!((1024..=262_144).contains(&p.recv_size));
        prop_assert_eq!(p.remote_invalidate(), flags & 1 != 0);
        prop_assert_eq!(p.encode(), b);
    }

    /// Encoding never advertises more than asked for (above the 1 KiB floor) and rounds down
    /// to a whole KiB.
    #[test]
    fn encode_rounds_down(size in any::<u32>()) {
        let d = private_data::decode_buffer_size(private_data::encode_buffer_size(size));
        prop_assert!((1024..=262_144).contains(&d));
        if size >= 1024 {
            prop_assert!(d <= size);
            prop_assert!(size.min(262_144) - d < 1024);
        }
    }

    /// Negotiated thresholds never exceed ours or the peer's, and are the defaults without
    /// private data.
    #[test]
    fn negotiation_takes_minimum(
        send in any::<u32>(),
        recv in any::<u32>(),
        peer in prop::option::of((any::<u8>(), any::<u8>(), any::<u8>())),
    ) {
        let ours = Inline { send, recv };
        let peer = peer.map(|(f, s, r)| {
            PrivateData::decode(&[0xf6, 0xab, 0x0e, 0x18, 1, f, s, r]).unwrap()
        });
        let n = private_data::negotiate(ours, peer.as_ref());
        prop_assert!(n.inline.send <= send && n.inline.recv <= recv);
        match peer {
            Some(p) => {
                prop_assert_eq!(n.inline.send, send.min(p.recv_size));
                prop_assert_eq!(n.inline.recv, recv.min(p.send_size));
                prop_assert_eq!(n.remote_invalidate, p.remote_invalidate());
            }
            None => {
                prop_assert_eq!(n.inline.send, send.min(1024));
                prop_assert_eq!(n.inline.recv, recv.min(1024));
                prop_assert!(!n.remote_invalidate);
            }
        }
    }

    /// Whatever the peer grants, the requester's credits stay in 1..=max_requests.
    #[test]
    fn credits_stay_in_range(max in any::<u32>(), grants in prop::collection::vec(any::<u32>(), 0..32)) {
        let mut r = credits::Requester::new(max);
        for g in grants {
            r.update(g);
            prop_assert!(r.credits() >= 1 && r.credits() <= max.max(1));
            prop_assert_eq!(r.cwnd(), r.credits().saturating_mul(credits::CWNDSCALE));
        }
    }

    /// A responder grant is never zero and never above the configured maximum or the posted
    /// Receives (when there are any).
    #[test]
    fn grants_in_range(posted in any::<u32>(), max in any::<u32>()) {
        let g = credits::grant(posted, max);
        prop_assert!(g >= 1);
        prop_assert!(g <= max.max(1) && g <= posted.max(1));
    }
}
