// SPDX-License-Identifier: GPL-2.0

//! The backward direction of RPC-over-RDMA version 1 (RFC 8167), as the requester sees it.
//!
//! A server (e.g. nfsd's NFSv4.1 callbacks) may send RPC Calls to the client on the client's own
//! connection. They arrive on the client's Receives like replies, so the receive path must tell
//! them apart before it looks the XID up among its pending calls: a backward Call is an
//! `RDMA_MSG` with three empty chunk lists whose RPC message type, the word after the RPC XID,
//! is `CALL` (`rpcrdma_is_bcall()` in net/sunrpc/xprtrdma/rpc_rdma.c). Backward Calls and
//! their Replies always travel inline: no chunk is offered in either direction (RFC 8167,
//! section 5.3.2, as Linux does).
//!
//! [`classify`] sorts a received message; [`reply_header`] encodes the transport header of a
//! backward Reply (`rpcrdma_bc_marshal_reply()`); [`max_payload`] is the largest backward
//! message a connection carries (`xprt_rdma_bc_maxpayload()`).

use super::{
    v1::{
        self,
        Lists,
        Proc, //
    },
    xdr::{
        self,
        Decoder,
        Encoder, //
    },
};

/// `msg_type` of an RPC Call (RFC 5531).
pub const RPC_CALL: u32 = 0;
/// `msg_type` of an RPC Reply (RFC 5531).
pub const RPC_REPLY: u32 = 1;

/// Offset of the RPC message in a backward Call or Reply: the fixed transport header fields and
/// three empty chunk lists (`RPCRDMA_HDRLEN_MIN`).
pub const RPC_OFFSET: usize = v1::HDRLEN_MIN;

/// The smallest backward Call [`classify`] recognises: the transport header, then the RPC XID
/// and message type.
pub const MIN_CALL_LEN: usize = RPC_OFFSET + 8;

/// A backward-direction RPC Call found by [`classify`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Call {
    /// The transaction id, the same in the transport header and in the RPC message.
    pub xid: u32,
    /// The `rdma_credit` field (the server's backward credits; ignored, as by C).
    pub credits: u32,
    /// Where the RPC message starts in the received bytes ([`RPC_OFFSET`]).
    pub rpc_offset: usize,
    /// The length of the RPC message: everything after the transport header.
    pub rpc_len: usize,
}

/// Why a message that is a backward Call cannot be one we answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadCall {
    /// The RPC XID differs from the transport header's `rdma_xid` (RFC 8166, section 4.1:
    /// they must be equal). C's `rpcrdma_is_bcall()` then takes it for a reply and looks its
    /// XID up; a Call is never a reply, so it is dropped instead.
    XidMismatch {
        /// The transport header's XID.
        rdma_xid: u32,
        /// The RPC message's XID.
        rpc_xid: u32,
    },
}

/// What a received version 1 message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inbound {
    /// Not a backward Call: a reply (or garbage) for the forward channel's checks.
    Reply,
    /// A backward Call, for the callback service.
    Call(Call),
    /// A backward Call that must be dropped.
    BadCall(BadCall),
}

/// Sorts the received message `msg` (`rpcrdma_is_bcall()`): a backward Call is an `RDMA_MSG`
/// of version 1 with three empty chunk lists followed by an RPC message of type `CALL`.
///
/// Anything else, including a message too short to hold the RPC XID and message type, is a
/// [`Inbound::Reply`], for the forward channel (which checks, matches and drops it). Reads at
/// most the first [`MIN_CALL_LEN`] bytes and never fails.
pub fn classify(msg: &[u8]) -> Inbound {
    let mut d = Decoder::new(msg);
    let mut words = [0u32; MIN_CALL_LEN / 4];
    for w in &mut words {
        match d.u32() {
            Ok(v) => *w = v,
            Err(_) => return Inbound::Reply,
        }
    }
    let [xid, vers, credits, proc, read, write, reply, rpc_xid, mtype] = words;
    if vers != v1::VERSION || proc != v1::RDMA_MSG {
        return Inbound::Reply;
    }
    // Any chunk list present: not a backward Call of ours (C's `xdr_item_is_present()`).
    if read != 0 || write != 0 || reply != 0 {
        return Inbound::Reply;
    }
    if mtype != RPC_CALL {
        return Inbound::Reply;
    }
    if rpc_xid != xid {
        return Inbound::BadCall(BadCall::XidMismatch {
            rdma_xid: xid,
            rpc_xid,
        });
    }
    Inbound::Call(Call {
        xid,
        credits,
        rpc_offset: RPC_OFFSET,
        rpc_len: msg.len() - RPC_OFFSET,
    })
}

/// Encodes the transport header of a backward Reply (`rpcrdma_bc_marshal_reply()`): `xid`,
/// version 1, `credits` (the backward requests the client can take at once), `RDMA_MSG` and
/// three empty chunk lists. Returns its length, [`RPC_OFFSET`]; the RPC Reply follows inline.
pub fn reply_header(e: &mut Encoder<'_>, xid: u32, credits: u32) -> xdr::Result<usize> {
    v1::encode(e, xid, credits, Proc::Msg, &Lists::default())
}

/// The largest backward RPC message a connection carries, Call or Reply
/// (`xprt_rdma_bc_maxpayload()`): the smaller inline threshold, at most a page (the callback
/// service encodes its Reply into one page), less the transport header.
pub fn max_payload(inline_send: u32, inline_recv: u32, page_size: u32) -> u32 {
    inline_send
        .min(inline_recv)
        .min(page_size)
        .saturating_sub(RPC_OFFSET as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A backward Call: transport header, then an RPC Call header with `body` after it.
    fn call(xid: u32, rpc_xid: u32, lists: [u32; 3], mtype: u32, body: &[u8]) -> std::vec::Vec<u8> {
        let mut v = std::vec::Vec::new();
        for w in [
            xid,
            1,
            16,
            v1::RDMA_MSG,
            lists[0],
            lists[1],
            lists[2],
            rpc_xid,
            mtype,
        ] {
            v.extend_from_slice(&w.to_be_bytes());
        }
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn recognises_a_backward_call() {
        let m = call(0x1234, 0x1234, [0; 3], RPC_CALL, &[0u8; 100]);
        assert_eq!(
            classify(&m),
            Inbound::Call(Call {
                xid: 0x1234,
                credits: 16,
                rpc_offset: 28,
                rpc_len: 108,
            })
        );
        // The shortest one: XID and message type only.
        let m = call(7, 7, [0; 3], RPC_CALL, &[]);
        assert_eq!(m.len(), MIN_CALL_LEN);
        assert!(matches!(classify(&m), Inbound::Call(c) if c.rpc_len == 8));
    }

    #[test]
    fn replies_are_not_calls() {
        // An inline reply.
        assert_eq!(
            classify(&call(9, 9, [0; 3], RPC_REPLY, &[0u8; 20])),
            Inbound::Reply
        );
        // Any chunk list present.
        for lists in [[1, 0, 0], [0, 1, 0], [0, 0, 1]] {
            assert_eq!(
                classify(&call(9, 9, lists, RPC_CALL, &[0u8; 40])),
                Inbound::Reply
            );
        }
        // Other procedures and versions.
        let mut m = call(9, 9, [0; 3], RPC_CALL, &[]);
        m[12..16].copy_from_slice(&v1::RDMA_NOMSG.to_be_bytes());
        assert_eq!(classify(&m), Inbound::Reply);
        m[12..16].copy_from_slice(&v1::RDMA_ERROR.to_be_bytes());
        assert_eq!(classify(&m), Inbound::Reply);
        let mut m = call(9, 9, [0; 3], RPC_CALL, &[]);
        m[4..8].copy_from_slice(&2u32.to_be_bytes());
        assert_eq!(classify(&m), Inbound::Reply);
    }

    #[test]
    fn short_messages_go_to_the_reply_path() {
        let m = call(3, 3, [0; 3], RPC_CALL, &[]);
        for n in 0..m.len() {
            assert_eq!(classify(&m[..n]), Inbound::Reply, "{n} bytes");
        }
    }

    #[test]
    fn a_call_with_another_rpc_xid_is_dropped() {
        assert_eq!(
            classify(&call(1, 2, [0; 3], RPC_CALL, &[0u8; 8])),
            Inbound::BadCall(BadCall::XidMismatch {
                rdma_xid: 1,
                rpc_xid: 2
            })
        );
    }

    #[test]
    fn reply_header_is_rpcrdma_bc_marshal_reply() {
        let mut b = [0xffu8; 64];
        let mut e = Encoder::new(&mut b);
        assert_eq!(reply_header(&mut e, 0xabcd, 16), Ok(RPC_OFFSET));
        let mut want = std::vec::Vec::new();
        for w in [0xabcd, 1, 16, v1::RDMA_MSG, 0, 0, 0] {
            want.extend_from_slice(&w.to_be_bytes());
        }
        assert_eq!(&b[..RPC_OFFSET], &want[..]);
        // Too small a buffer.
        let mut b = [0u8; 20];
        assert!(reply_header(&mut Encoder::new(&mut b), 1, 1).is_err());
    }

    #[test]
    fn max_payload_as_xprt_rdma_bc_maxpayload() {
        assert_eq!(max_payload(4096, 4096, 4096), 4068);
        assert_eq!(max_payload(1024, 4096, 4096), 996);
        assert_eq!(max_payload(4096, 2048, 4096), 2020);
        assert_eq!(max_payload(65536, 65536, 4096), 4068);
        assert_eq!(max_payload(16, 4096, 4096), 0);
    }
}
