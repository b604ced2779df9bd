// SPDX-License-Identifier: GPL-2.0

//! The backward direction of RPC-over-RDMA (RFC 8167), on both ends of a connection.
//!
//! A server may send RPC Calls to its client on the client's own connection (NFSv4.1
//! callbacks), and the client answers them there. Both kinds of backward message travel inline:
//! an `RDMA_MSG` of version 1 with three empty chunk lists, the RPC message right after it, at
//! [`RPC_OFFSET`] (RFC 8167, section 5.3.2, as Linux does). Their transport header is the same
//! bytes either way ([`encode_header`]: `rpcrdma_bc_marshal_reply()` on the client,
//! `rpcrdma_bc_send_request()` on the server).
//!
//! They arrive on the Receives of the forward direction, so each end must tell them apart
//! before it handles a message as a forward one. The test is the same on both ends: that
//! inline shape, then the RPC message type, the word after the RPC XID. Only the type each
//! end expects differs:
//!
//! - the requester (client) takes a `CALL` for a backward Call, anything else for a reply of
//!   its own ([`classify`], `rpcrdma_is_bcall()` in net/sunrpc/xprtrdma/rpc_rdma.c), and drops
//!   a backward Call whose RPC XID is not its transport XID ([`BadCall`]);
//! - the responder (server) takes a `REPLY` for the Reply to one of its backward Calls,
//!   anything else for a forward Call ([`direction`], svcrdma's
//!   `svc_rdma_is_reverse_direction_reply()`, which takes every non-`CALL` for a Reply: here
//!   other values go the forward way, where the RPC server drops what it cannot parse).
//!
//! Either way the message found is a [`Message`]. [`max_payload`] is the largest backward
//! message a connection carries (`xprt_rdma_bc_maxpayload()`).
//!
//! # Version 2
//!
//! On a connection settled on RPC-over-RDMA version 2 (rpcrdma-v2 draft) backward messages are
//! framed in version 2: an `RDMA2_MSG` prefix, `rdma_inv_handle` zero and three empty chunk
//! lists, the RPC message at [`RPC_OFFSET_V2`] ([`encode_header_v2`]). The draft's
//! `RDMA2_F_RESPONSE` flag says whose XID a message carries: clear on a backward Call (the
//! server's XID), set on its Reply (the XID of the Call's sender). So [`classify`] takes a
//! version 2 message for a backward Call only with the flag clear, and [`direction`] for a
//! backward Reply only with it set, on top of the inline shape and the RPC message type; the
//! credit field is the low half of the version 2 credit word.

use core::ops::Range;

use super::{
    credits,
    v1::{
        self,
        Lists,
        Proc, //
    },
    v2::{
        self,
        Flags,
        Prefix, //
    },
    xdr::{
        self,
        Decoder,
        Encoder, //
    },
};

/// `msg_type` of an RPC Call (RFC 5531, `CALL`).
pub const RPC_CALL: u32 = 0;
/// `msg_type` of an RPC Reply (RFC 5531, `REPLY`).
pub const RPC_REPLY: u32 = 1;

/// Offset of the RPC message in a backward Call or Reply: the fixed transport header fields and
/// three empty chunk lists (`RPCRDMA_HDRLEN_MIN`), the length of [`encode_header`]'s header.
pub const RPC_OFFSET: usize = v1::HDRLEN_MIN;

/// The smallest backward message [`classify`] and [`direction`] recognise: the transport
/// header, then the RPC XID and message type.
pub const MIN_LEN: usize = RPC_OFFSET + 8;

/// Offset of the RPC message in a version 2 backward Call or Reply: the prefix,
/// `rdma_inv_handle` and three empty chunk lists, the length of [`encode_header_v2`]'s header.
pub const RPC_OFFSET_V2: usize = v2::PREFIX_LEN + 16;

/// The smallest version 2 backward message [`classify`] and [`direction`] recognise.
pub const MIN_LEN_V2: usize = RPC_OFFSET_V2 + 8;

/// A backward-direction message found in a received buffer: a Call on the requester
/// ([`classify`]), a Reply to one of its Calls on the responder ([`direction`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message {
    /// The transport header's XID (`rdma_xid`); for a Call, also its RPC XID.
    pub xid: u32,
    /// The `rdma_credit` field, unchecked: a server's backward credits in a Call (ignored, as
    /// by C), a client's grant to the backward Calls in a Reply (see [`Message::grant`]).
    pub credits: u32,
    /// Where the RPC message starts in the received bytes ([`RPC_OFFSET`]).
    pub rpc_offset: usize,
    /// The length of the RPC message: everything after the transport header.
    pub rpc_len: usize,
}

impl Message {
    /// Where the RPC message is in the received bytes.
    pub fn rpc_range(&self) -> Range<usize> {
        self.rpc_offset..self.rpc_offset.saturating_add(self.rpc_len)
    }

    /// The RPC message in `buf`, the bytes it was found in (empty for another buffer too
    /// short to hold it).
    pub fn rpc<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        buf.get(self.rpc_range()).unwrap_or(&[])
    }

    /// A Reply's credit grant as the responder's backchannel may use it: `1..=max_requests`
    /// (svcrdma's `svc_rdma_handle_bc_reply()`: zero is raised to one, "don't deadlock").
    pub fn grant(&self, max_requests: u32) -> u32 {
        credits::sanitize_grant(self.credits, max_requests)
    }
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

/// What a requester received.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inbound {
    /// Not a backward Call: a reply (or garbage) for the forward channel's checks.
    Reply,
    /// A backward Call, for the callback service.
    Call(Message),
    /// A backward Call that must be dropped.
    BadCall(BadCall),
}

/// What a responder received.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// A forward-direction message, for the RPC server: a Call (or bytes it will reject).
    Forward,
    /// A Reply to one of our backward Calls.
    Reply(Message),
}

/// A received message of the backward shape: its [`Message`], RPC XID and RPC message type.
struct Inline {
    /// Where its RPC message is, and its transport header's XID and credits.
    msg: Message,
    /// The RPC message's XID.
    rpc_xid: u32,
    /// The RPC message's type, not yet checked.
    msg_type: u32,
    /// Version 2's `RDMA2_F_RESPONSE`; `None` for version 1, which has no flags.
    response: Option<bool>,
}

/// The one test of both ends: whether `buf` is an `RDMA_MSG` of version 1 with three empty
/// chunk lists followed by at least an RPC XID and message type. Reads at most the first
/// [`MIN_LEN`] bytes and never fails.
fn inline(buf: &[u8]) -> Option<Inline> {
    if buf.get(4..8) == Some(&v2::VERSION.to_be_bytes()[..]) {
        return inline_v2(buf);
    }
    let mut d = Decoder::new(buf);
    let mut words = [0u32; MIN_LEN / 4];
    for w in &mut words {
        *w = d.u32().ok()?;
    }
    let [xid, vers, credits, proc, read, write, reply, rpc_xid, msg_type] = words;
    // Any chunk list present: not inline (C's `xdr_item_is_present()`, svcrdma's
    // `pcl_is_empty()`).
    if vers != v1::VERSION || proc != v1::RDMA_MSG || read != 0 || write != 0 || reply != 0 {
        return None;
    }
    Some(Inline {
        msg: Message {
            xid,
            credits,
            rpc_offset: RPC_OFFSET,
            rpc_len: buf.len() - RPC_OFFSET,
        },
        rpc_xid,
        msg_type,
        response: None,
    })
}

/// [`inline`] for a version 2 message: an `RDMA2_MSG` without `RDMA2_F_MORE` (or unknown
/// flags), `rdma_inv_handle` zero and three empty chunk lists, then an RPC XID and message type.
fn inline_v2(buf: &[u8]) -> Option<Inline> {
    let mut d = Decoder::new(buf);
    let mut words = [0u32; MIN_LEN_V2 / 4];
    for w in &mut words {
        *w = d.u32().ok()?;
    }
    let [xid, vers, credit, htype, flags, inv, read, write, reply, rpc_xid, msg_type] = words;
    let flags = Flags::from_wire(flags).ok()?;
    if vers != v2::VERSION
        || htype != v2::MSG
        || flags.more
        || inv != 0
        || read != 0
        || write != 0
        || reply != 0
    {
        return None;
    }
    Some(Inline {
        msg: Message {
            xid,
            credits: credit & 0xffff,
            rpc_offset: RPC_OFFSET_V2,
            rpc_len: buf.len() - RPC_OFFSET_V2,
        },
        rpc_xid,
        msg_type,
        response: Some(flags.response),
    })
}

/// Sorts the message `msg` a requester received (`rpcrdma_is_bcall()`): a backward Call is
/// an inline message (see the module's documentation) of type [`RPC_CALL`].
///
/// Anything else, including a message too short to hold the RPC XID and message type, is a
/// [`Inbound::Reply`], for the forward channel (which checks, matches and drops it).
pub fn classify(msg: &[u8]) -> Inbound {
    let Some(m) = inline(msg).filter(|m| m.msg_type == RPC_CALL && m.response != Some(true)) else {
        return Inbound::Reply;
    };
    if m.rpc_xid != m.msg.xid {
        return Inbound::BadCall(BadCall::XidMismatch {
            rdma_xid: m.msg.xid,
            rpc_xid: m.rpc_xid,
        });
    }
    Inbound::Call(m.msg)
}

/// The direction of the message `msg` a responder received
/// (`svc_rdma_is_reverse_direction_reply()`): a backward Reply is an inline message (see the
/// module's documentation) of type [`RPC_REPLY`]. Anything else is forward.
pub fn direction(msg: &[u8]) -> Direction {
    match inline(msg) {
        Some(m) if m.msg_type == RPC_REPLY && m.response != Some(false) => Direction::Reply(m.msg),
        _ => Direction::Forward,
    }
}

/// Encodes the transport header of a backward Call or Reply `xid`: version 1, `credits`,
/// `RDMA_MSG` and three empty chunk lists. Returns its length, [`RPC_OFFSET`]; the RPC
/// message follows inline. Nothing is written if the header does not fit.
///
/// `credits` is the backward requests the sender takes at once: the server's backchannel
/// slots in a Call (svcrdma's `rpcrdma_bc_send_request()`), the client's in a Reply
/// (`rpcrdma_bc_marshal_reply()`).
pub fn encode_header(e: &mut Encoder<'_>, xid: u32, credits: u32) -> xdr::Result<usize> {
    v1::encode(e, xid, credits, Proc::Msg, &Lists::default())
}

/// Encodes the version 2 transport header of a backward Call or Reply `xid` (see the module's
/// documentation): `RDMA2_MSG` with `credits` in both halves of the credit word,
/// `RDMA2_F_RESPONSE` set on a Reply (`response`), `rdma_inv_handle` zero and three empty chunk
/// lists. Returns its length, [`RPC_OFFSET_V2`]; nothing is written if it does not fit.
pub fn encode_header_v2(
    e: &mut Encoder<'_>,
    xid: u32,
    credits: u32,
    response: bool,
) -> xdr::Result<usize> {
    if e.remaining() < RPC_OFFSET_V2 {
        return Err(xdr::Error::Short);
    }
    let c = u16::try_from(credits).unwrap_or(u16::MAX);
    let prefix = Prefix {
        xid,
        credit: v2::credit_word(c, c),
        flags: Flags {
            response,
            more: false,
        },
    };
    prefix
        .encode(e, v2::HeaderType::Msg)
        .map_err(|_| xdr::Error::Short)?;
    for _ in 0..4 {
        e.u32(0)?;
    }
    Ok(RPC_OFFSET_V2)
}

/// The length of the transport header of a backward message of version `vers`.
pub const fn header_len(vers: u32) -> usize {
    if vers == v2::VERSION {
        RPC_OFFSET_V2
    } else {
        RPC_OFFSET
    }
}

/// The largest backward RPC message a connection carries, Call or Reply
/// (`xprt_rdma_bc_maxpayload()`): the smaller inline threshold, at most a page (the callback
/// service encodes its Reply into one page), less the version 1 transport header.
pub fn max_payload(inline_send: u32, inline_recv: u32, page_size: u32) -> u32 {
    max_payload_in(v1::VERSION, inline_send, inline_recv, page_size)
}

/// [`max_payload`] on a connection of version `vers`, whose header is [`header_len`] long.
pub fn max_payload_in(vers: u32, inline_send: u32, inline_recv: u32, page_size: u32) -> u32 {
    inline_send
        .min(inline_recv)
        .min(page_size)
        .saturating_sub(header_len(vers) as u32)
}

#[cfg(test)]
mod tests {
    use super::super::v1::{
        Call,
        Limits, //
    };
    use super::*;
    use std::vec::Vec;

    fn words(w: &[u32]) -> Vec<u8> {
        w.iter().flat_map(|v| v.to_be_bytes()).collect()
    }

    /// A backward message: transport header, then an RPC header with `body` after it.
    fn bmsg(xid: u32, rpc_xid: u32, lists: [u32; 3], mtype: u32, body: &[u8]) -> Vec<u8> {
        let mut v = words(&[
            xid,
            1,
            16,
            v1::RDMA_MSG,
            lists[0],
            lists[1],
            lists[2],
            rpc_xid,
            mtype,
        ]);
        v.extend_from_slice(body);
        v
    }

    /// An RDMA_MSG header (xid 7, 2 credits) with empty chunk lists, then `rpc`.
    fn msg(rpc: &[u32]) -> Vec<u8> {
        let mut m = words(&[7, 1, 2, 0, 0, 0, 0]);
        m.extend(words(rpc));
        m
    }

    /// The responder's direction of `buf`, a header it accepted first (as the server does).
    fn dir(buf: &[u8]) -> Direction {
        Call::decode(buf, &Limits::svcrdma(256, 4096)).expect("a valid header");
        direction(buf)
    }

    /// A version 2 backward message from [`encode_header_v2`], then an RPC header of type
    /// `mtype` and `body`.
    fn bmsg2(xid: u32, response: bool, mtype: u32, body: &[u8]) -> Vec<u8> {
        let mut v = std::vec![0u8; RPC_OFFSET_V2];
        let n = encode_header_v2(&mut Encoder::new(&mut v), xid, 16, response).unwrap();
        assert_eq!(n, RPC_OFFSET_V2);
        v.extend(words(&[xid, mtype]));
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn version_2_backward_messages() {
        let call = bmsg2(0x55, false, RPC_CALL, &[0u8; 40]);
        // xid, version 2, credits 16 both halves, RDMA2_MSG, no flag, then zeros.
        assert_eq!(
            &call[..24],
            &words(&[0x55, 2, 16 << 16 | 16, v2::MSG, 0, 0])[..]
        );
        let want = Message {
            xid: 0x55,
            credits: 16,
            rpc_offset: RPC_OFFSET_V2,
            rpc_len: 48,
        };
        assert_eq!(classify(&call), Inbound::Call(want));
        assert_eq!(direction(&call), Direction::Forward);
        let reply = bmsg2(0x56, true, RPC_REPLY, &[0u8; 16]);
        assert_eq!(
            direction(&reply),
            Direction::Reply(Message {
                xid: 0x56,
                credits: 16,
                rpc_offset: RPC_OFFSET_V2,
                rpc_len: 24,
            })
        );
        assert_eq!(classify(&reply), Inbound::Reply);
        // RDMA2_F_RESPONSE must match the direction: a Call with it set is the reply of a
        // forward call, a Reply without it a forward message.
        assert_eq!(classify(&bmsg2(0x57, true, RPC_CALL, &[])), Inbound::Reply);
        assert_eq!(
            direction(&bmsg2(0x58, false, RPC_REPLY, &[])),
            Direction::Forward
        );
        // F_MORE, a handle to invalidate, a chunk list, or another header type: not inline.
        for (at, v) in [(16, v2::F_MORE), (20, 7), (24, 1), (12, v2::NOMSG)] {
            let mut m = call.clone();
            m[at..at + 4].copy_from_slice(&u32::to_be_bytes(v));
            assert_eq!(classify(&m), Inbound::Reply, "word at {at} = {v}");
        }
        // Too short to hold the RPC message type.
        assert_eq!(classify(&call[..MIN_LEN_V2 - 1]), Inbound::Reply);
        assert_eq!(header_len(2), 36);
        assert_eq!(header_len(1), 28);
        assert_eq!(max_payload_in(2, 4096, 4096, 4096), 4060);
        assert_eq!(max_payload(4096, 4096, 4096), 4068);
    }

    #[test]
    fn recognises_a_backward_call() {
        let m = bmsg(0x1234, 0x1234, [0; 3], RPC_CALL, &[0u8; 100]);
        assert_eq!(
            classify(&m),
            Inbound::Call(Message {
                xid: 0x1234,
                credits: 16,
                rpc_offset: 28,
                rpc_len: 108,
            })
        );
        // The shortest one: XID and message type only.
        let m = bmsg(7, 7, [0; 3], RPC_CALL, &[]);
        assert_eq!(m.len(), MIN_LEN);
        assert!(matches!(classify(&m), Inbound::Call(c) if c.rpc_len == 8));
    }

    #[test]
    fn replies_are_not_calls() {
        // An inline reply.
        assert_eq!(
            classify(&bmsg(9, 9, [0; 3], RPC_REPLY, &[0u8; 20])),
            Inbound::Reply
        );
        // Any chunk list present.
        for lists in [[1, 0, 0], [0, 1, 0], [0, 0, 1]] {
            assert_eq!(
                classify(&bmsg(9, 9, lists, RPC_CALL, &[0u8; 40])),
                Inbound::Reply
            );
        }
        // Other procedures and versions.
        let mut m = bmsg(9, 9, [0; 3], RPC_CALL, &[]);
        m[12..16].copy_from_slice(&v1::RDMA_NOMSG.to_be_bytes());
        assert_eq!(classify(&m), Inbound::Reply);
        m[12..16].copy_from_slice(&v1::RDMA_ERROR.to_be_bytes());
        assert_eq!(classify(&m), Inbound::Reply);
        let mut m = bmsg(9, 9, [0; 3], RPC_CALL, &[]);
        m[4..8].copy_from_slice(&2u32.to_be_bytes());
        assert_eq!(classify(&m), Inbound::Reply);
    }

    #[test]
    fn short_messages_go_to_the_reply_path() {
        let m = bmsg(3, 3, [0; 3], RPC_CALL, &[]);
        for n in 0..m.len() {
            assert_eq!(classify(&m[..n]), Inbound::Reply, "{n} bytes");
        }
    }

    #[test]
    fn a_call_with_another_rpc_xid_is_dropped() {
        assert_eq!(
            classify(&bmsg(1, 2, [0; 3], RPC_CALL, &[0u8; 8])),
            Inbound::BadCall(BadCall::XidMismatch {
                rdma_xid: 1,
                rpc_xid: 2
            })
        );
    }

    #[test]
    fn header_is_rpcrdma_bc_marshal_reply() {
        let mut b = [0xffu8; 64];
        let mut e = Encoder::new(&mut b);
        assert_eq!(encode_header(&mut e, 0xabcd, 16), Ok(RPC_OFFSET));
        assert_eq!(
            &b[..RPC_OFFSET],
            &words(&[0xabcd, 1, 16, v1::RDMA_MSG, 0, 0, 0])[..]
        );
        // Too small a buffer.
        let mut b = [0u8; 20];
        assert!(encode_header(&mut Encoder::new(&mut b), 1, 1).is_err());
    }

    #[test]
    fn max_payload_as_xprt_rdma_bc_maxpayload() {
        assert_eq!(max_payload(4096, 4096, 4096), 4068);
        assert_eq!(max_payload(1024, 4096, 4096), 996);
        assert_eq!(max_payload(4096, 2048, 4096), 2020);
        assert_eq!(max_payload(65536, 65536, 4096), 4068);
        assert_eq!(max_payload(16, 4096, 4096), 0);
    }

    #[test]
    fn reply_is_backward() {
        // xid, REPLY, MSG_ACCEPTED, AUTH_NONE verifier, SUCCESS.
        let buf = msg(&[7, RPC_REPLY, 0, 0, 0, 0]);
        let Direction::Reply(r) = dir(&buf) else {
            panic!("not a backward reply");
        };
        assert_eq!(r.xid, 7);
        assert_eq!(r.credits, 2);
        assert_eq!(r.rpc_offset, 28);
        assert_eq!(r.rpc_len, 24);
        assert_eq!(r.rpc(&buf), &buf[28..]);
        // Another, shorter buffer gives nothing rather than panicking.
        assert_eq!(r.rpc(&buf[..30]), &[] as &[u8]);
    }

    #[test]
    fn call_is_forward() {
        assert_eq!(
            dir(&msg(&[7, RPC_CALL, 2, 100003, 3, 0, 0, 0, 0, 0])),
            Direction::Forward
        );
    }

    #[test]
    fn other_msg_type_is_forward() {
        // svcrdma would take these for Replies; nfsd drops them as bad directions.
        assert_eq!(dir(&msg(&[7, 2, 0, 0])), Direction::Forward);
        assert_eq!(dir(&msg(&[7, 0xffff_ffff])), Direction::Forward);
    }

    #[test]
    fn too_short_for_a_direction_is_forward() {
        assert_eq!(dir(&msg(&[])), Direction::Forward);
        assert_eq!(dir(&msg(&[7])), Direction::Forward);
        let mut buf = msg(&[7]);
        buf.extend([0, 0, 0]);
        assert_eq!(dir(&buf), Direction::Forward);
        // Exactly an XID and REPLY: a (malformed) Reply, the RPC client rejects it.
        assert!(matches!(
            dir(&msg(&[7, RPC_REPLY])),
            Direction::Reply(Message { rpc_len: 8, .. })
        ));
    }

    #[test]
    fn chunks_make_it_forward() {
        // A Reply chunk offered.
        let mut buf = words(&[7, 1, 2, 0, 0, 0, 1, 1, 0x1111, 64, 0, 0x1000]);
        buf.extend(words(&[7, RPC_REPLY, 0, 0, 0, 0]));
        assert_eq!(dir(&buf), Direction::Forward);
        // A Write chunk.
        let mut buf = words(&[7, 1, 2, 0, 0, 1, 1, 0x2222, 64, 0, 0x2000, 0, 0]);
        buf.extend(words(&[7, RPC_REPLY, 0, 0, 0, 0]));
        assert_eq!(dir(&buf), Direction::Forward);
        // A Read chunk at position 8.
        let mut buf = words(&[7, 1, 2, 0, 1, 8, 0x3333, 4, 0, 0x3000, 0, 0, 0]);
        buf.extend(words(&[7, RPC_REPLY, 0, 0]));
        assert_eq!(dir(&buf), Direction::Forward);
    }

    #[test]
    fn nomsg_is_forward() {
        // RDMA_NOMSG with a Position-Zero Read chunk: the message is not inline.
        let buf = words(&[7, 1, 2, 1, 1, 0, 0x3333, 24, 0, 0x3000, 0, 0, 0]);
        assert_eq!(dir(&buf), Direction::Forward);
    }

    #[test]
    fn header_of_a_backward_call() {
        let mut buf = [0xaau8; 32];
        let n = encode_header(&mut Encoder::new(&mut buf), 0x0102_0304, 2).expect("room");
        assert_eq!(n, 28);
        assert_eq!(&buf[..28], &words(&[0x0102_0304, 1, 2, 0, 0, 0, 0])[..]);
        assert_eq!(&buf[28..], &[0xaa; 4]);
        // The header a peer decodes from it, with an RPC Call after it: forward for it.
        let mut m = buf[..28].to_vec();
        m.extend(words(&[0x0102_0304, RPC_CALL, 2, 0x4000_0000, 1, 4]));
        let c = Call::decode(&m, &Limits::svcrdma(256, 4096)).expect("a valid header");
        assert_eq!((c.xid, c.credits, c.proc), (0x0102_0304, 2, Proc::Msg));
        assert_eq!(direction(&m), Direction::Forward);
        // Too small a buffer: nothing written past it, an error.
        let mut small = [0u8; 27];
        assert!(encode_header(&mut Encoder::new(&mut small), 1, 2).is_err());
    }

    #[test]
    fn grant_clamped() {
        let r = Message {
            xid: 1,
            credits: 0,
            rpc_offset: 28,
            rpc_len: 8,
        };
        assert_eq!(r.grant(2), 1);
        assert_eq!(Message { credits: 1, ..r }.grant(2), 1);
        assert_eq!(Message { credits: 2, ..r }.grant(2), 2);
        assert_eq!(
            Message {
                credits: u32::MAX,
                ..r
            }
            .grant(2),
            2
        );
    }

    #[test]
    fn any_input_is_safe() {
        // Every prefix of a valid message, and every single-byte corruption of it, gets a
        // direction and a classification without panicking; whatever the responder decodes
        // and takes for a Reply holds its RPC message.
        let buf = msg(&[7, RPC_REPLY, 0, 0, 0, 0]);
        for n in 0..=buf.len() {
            let _ = classify(&buf[..n]);
            if Call::decode(&buf[..n], &Limits::svcrdma(256, 4096)).is_ok() {
                let _ = direction(&buf[..n]);
            }
        }
        for i in 0..buf.len() {
            for v in [0u8, 1, 0x80, 0xff] {
                let mut b = buf.clone();
                b[i] = v;
                let _ = classify(&b);
                if let Direction::Reply(r) = direction(&b) {
                    assert_eq!(r.rpc(&b).len(), r.rpc_len);
                    // The server decodes a header before its direction: a Reply's always
                    // decodes.
                    assert!(Call::decode(&b, &Limits::svcrdma(256, 4096)).is_ok());
                }
            }
        }
    }
}
