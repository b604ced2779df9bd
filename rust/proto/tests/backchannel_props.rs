// SPDX-License-Identifier: GPL-2.0

//! Property tests for the RFC 8167 backchannel: what one end sends, the other end sorts as
//! the message it is.

use proptest::prelude::*;
use rpcrdma_proto::backchannel::{
    self,
    Direction,
    Inbound,
    Message, //
};
use rpcrdma_proto::xdr::Encoder;

/// A backward message as its sender builds it: [`backchannel::encode_header`], then an RPC
/// message of type `msg_type` whose XID is `xid`, then `body`.
fn send(xid: u32, credits: u32, msg_type: u32, body: &[u8]) -> Vec<u8> {
    let mut buf = vec![0u8; backchannel::RPC_OFFSET];
    let n = backchannel::encode_header(&mut Encoder::new(&mut buf), xid, credits)
        .expect("the header fits");
    assert_eq!(n, backchannel::RPC_OFFSET);
    buf.extend_from_slice(&xid.to_be_bytes());
    buf.extend_from_slice(&msg_type.to_be_bytes());
    buf.extend_from_slice(body);
    buf
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5000))]

    /// A Call the responder sends is a backward Call for the requester, and the RPC message it
    /// finds is the one sent; the responder itself would take it for a forward Call.
    #[test]
    fn responder_call_is_a_call_for_the_requester(
        xid in any::<u32>(),
        credits in any::<u32>(),
        body in prop::collection::vec(any::<u8>(), 0..256),
    ) {
        let buf = send(xid, credits, backchannel::RPC_CALL, &body);
        let want = Message {
            xid,
            credits,
            rpc_offset: backchannel::RPC_OFFSET,
            rpc_len: 8 + body.len(),
        };
        prop_assert_eq!(backchannel::classify(&buf), Inbound::Call(want));
        prop_assert_eq!(&want.rpc(&buf)[8..], &body[..]);
        prop_assert_eq!(backchannel::direction(&buf), Direction::Forward);
    }

    /// A Reply the requester sends is a backward Reply for the responder, with the RPC message
    /// sent; the requester itself would take it for a reply of its own.
    #[test]
    fn requester_reply_is_a_reply_for_the_responder(
        xid in any::<u32>(),
        credits in any::<u32>(),
        body in prop::collection::vec(any::<u8>(), 0..256),
    ) {
        let buf = send(xid, credits, backchannel::RPC_REPLY, &body);
        let want = Message {
            xid,
            credits,
            rpc_offset: backchannel::RPC_OFFSET,
            rpc_len: 8 + body.len(),
        };
        prop_assert_eq!(backchannel::direction(&buf), Direction::Reply(want));
        prop_assert_eq!(&want.rpc(&buf)[8..], &body[..]);
        prop_assert_eq!(backchannel::classify(&buf), Inbound::Reply);
    }

    /// Any bytes: neither end panics, no message is both a backward Call for the requester and
    /// a backward Reply for the responder, and what is found lies within the bytes.
    #[test]
    fn any_bytes(
        buf in prop::collection::vec(any::<u8>(), 0..64),
        shaped in any::<bool>(),
        same_xid in any::<bool>(),
        msg_type in 0u32..3,
    ) {
        let mut buf = buf;
        if shaped && buf.len() >= backchannel::MIN_LEN {
            // Often of the backward shape, so that the rest is exercised too: version 1,
            // RDMA_MSG, empty lists, an RPC message of type CALL, REPLY or neither.
            buf[4..8].copy_from_slice(&1u32.to_be_bytes());
            buf[12..28].fill(0);
            if same_xid {
                let xid = [buf[0], buf[1], buf[2], buf[3]];
                buf[28..32].copy_from_slice(&xid);
            }
            buf[32..36].copy_from_slice(&msg_type.to_be_bytes());
        }
        let c = backchannel::classify(&buf);
        let d = backchannel::direction(&buf);
        let found = match (c, d) {
            (Inbound::Call(_), Direction::Reply(_)) => {
                return Err(TestCaseError::fail("both a Call and a Reply"));
            }
            (Inbound::Call(m), _) | (_, Direction::Reply(m)) => Some(m),
            _ => None,
        };
        if let Some(m) = found {
            prop_assert_eq!(m.rpc(&buf).len(), m.rpc_len);
            prop_assert_eq!(m.rpc_range().end, buf.len());
        }
    }
}
