// SPDX-License-Identifier: GPL-2.0

//! Backward-direction messages as a responder handles them (RFC 8167): the Calls it sends
//! and the Replies it receives.
//!
//! A server that sends Calls to its client on the client's connection (an NFSv4.1 callback)
//! gets their Replies on the same Receive Queue as the client's forward Calls. By convention
//! (RFC 8167, section 4; svcrdma's `svc_rdma_is_reverse_direction_reply`) a backward Reply is
//! an `RDMA_MSG` with empty chunk lists whose RPC message is a Reply: the transport header is
//! small and fixed, so the RPC header's direction word (`msg_type`, after the XID) is at a
//! known place. [`direction`] tells the two apart, on a header [`Call::decode`] accepted.
//!
//! Unlike svcrdma, which takes anything that is not a Call for a Reply, a Reply here is a
//! message whose `msg_type` is exactly `REPLY`; other values go the forward way, where the
//! RPC server drops a message it cannot parse.
//!
//! A backward Call goes inline in an `RDMA_MSG` with empty chunk lists ([`encode_call`], as
//! svcrdma's `rpcrdma_bc_send_request`).

use super::{
    credits,
    v1::{
        self,
        Call,
        Proc, //
    },
    xdr::{
        self,
        Decoder,
        Encoder, //
    },
};

/// RPC `msg_type` of a Call (RFC 5531, `CALL`).
pub const RPC_CALL: u32 = 0;
/// RPC `msg_type` of a Reply (RFC 5531, `REPLY`).
pub const RPC_REPLY: u32 = 1;

/// A backward-direction Reply found in a received message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackwardReply {
    /// The transport header's XID (`rdma_xid`): the Call it answers, as svcrdma looks it up.
    pub xid: u32,
    /// The credits the requester granted to our backward Calls (`rdma_credit`), unchecked.
    pub credits: u32,
    /// Where the RPC Reply starts in the received message (past the transport header).
    pub offset: usize,
    /// Its length: everything received after the transport header.
    pub len: usize,
}

impl BackwardReply {
    /// The RPC Reply in `buf`, the message it was found in (empty for another buffer too
    /// short to hold it).
    pub fn msg<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        buf.get(self.offset..self.offset.saturating_add(self.len))
            .unwrap_or(&[])
    }

    /// The credit grant as the backchannel may use it: `1..=max_requests` (svcrdma's
    /// `svc_rdma_handle_bc_reply`: zero is raised to one, "don't deadlock").
    pub fn credits(&self, max_requests: u32) -> u32 {
        credits::sanitize_grant(self.credits, max_requests)
    }
}

/// Which way a received message goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// A forward-direction message, for the RPC server: a Call (or bytes it will reject).
    Forward,
    /// A Reply to one of our backward-direction Calls.
    BackwardReply(BackwardReply),
}

/// The direction of the message `buf`, whose header `call` is ([`Call::decode`] of `buf`).
///
/// A backward Reply is an `RDMA_MSG` without Read, Write or Reply chunks whose RPC message
/// holds at least an XID and a `msg_type`, the latter [`RPC_REPLY`]. Anything else is
/// forward.
pub fn direction(call: &Call, buf: &[u8]) -> Direction {
    if call.proc != Proc::Msg
        || call.has_reads()
        || call.write_count() != 0
        || call.reply_len().is_some()
    {
        return Direction::Forward;
    }
    let Some(msg) = buf.get(call.payload_offset..) else {
        return Direction::Forward;
    };
    let mut d = Decoder::new(msg);
    let msg_type = d.u32().and_then(|_xid| d.u32());
    if !matches!(msg_type, Ok(RPC_REPLY)) {
        return Direction::Forward;
    }
    Direction::BackwardReply(BackwardReply {
        xid: call.xid,
        credits: call.credits,
        offset: call.payload_offset,
        len: msg.len(),
    })
}

/// Encodes the transport header of a backward Call `xid` asking for `credits` (our
/// backchannel's slots): `RDMA_MSG`, version 1, empty chunk lists. Returns its length,
/// [`v1::HDRLEN_MIN`]; the RPC Call follows it.
pub fn encode_call(e: &mut Encoder<'_>, xid: u32, credits: u32) -> xdr::Result<usize> {
    if e.remaining() < v1::HDRLEN_MIN {
        return Err(xdr::Error::Short);
    }
    v1::encode_fixed(e, xid, v1::VERSION, credits, Proc::Msg)?;
    v1::encode_read_list(e, &[])?;
    v1::encode_write_list(e, &[])?;
    v1::encode_reply_chunk(e, None)?;
    Ok(v1::HDRLEN_MIN)
}

#[cfg(test)]
mod tests {
    use super::super::v1::Limits;
    use super::*;
    extern crate std;
    use std::vec::Vec;

    fn words(w: &[u32]) -> Vec<u8> {
        w.iter().flat_map(|v| v.to_be_bytes()).collect()
    }

    /// An RDMA_MSG header (xid 7, 2 credits) with empty chunk lists, then `rpc`.
    fn msg(rpc: &[u32]) -> Vec<u8> {
        let mut m = words(&[7, 1, 2, 0, 0, 0, 0]);
        m.extend(words(rpc));
        m
    }

    fn dir(buf: &[u8]) -> Direction {
        let call = Call::decode(buf, &Limits::svcrdma(256, 4096)).expect("a valid header");
        direction(&call, buf)
    }

    #[test]
    fn reply_is_backward() {
        // xid, REPLY, MSG_ACCEPTED, AUTH_NONE verifier, SUCCESS.
        let buf = msg(&[7, RPC_REPLY, 0, 0, 0, 0]);
        let Direction::BackwardReply(r) = dir(&buf) else {
            panic!("not a backward reply");
        };
        assert_eq!(r.xid, 7);
        assert_eq!(r.credits, 2);
        assert_eq!(r.offset, 28);
        assert_eq!(r.len, 24);
        assert_eq!(r.msg(&buf), &buf[28..]);
        // Another, shorter buffer gives nothing rather than panicking.
        assert_eq!(r.msg(&buf[..30]), &[] as &[u8]);
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
            Direction::BackwardReply(BackwardReply { len: 8, .. })
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
    fn call_header() {
        let mut buf = [0xaau8; 32];
        let n = encode_call(&mut Encoder::new(&mut buf), 0x0102_0304, 2).expect("room");
        assert_eq!(n, 28);
        assert_eq!(&buf[..28], &words(&[0x0102_0304, 1, 2, 0, 0, 0, 0])[..]);
        assert_eq!(&buf[28..], &[0xaa; 4]);
        // The header a peer decodes from it, with an RPC Call after it: forward for it.
        let mut m = buf[..28].to_vec();
        m.extend(words(&[0x0102_0304, RPC_CALL, 2, 0x4000_0000, 1, 4]));
        let c = Call::decode(&m, &Limits::svcrdma(256, 4096)).expect("a valid header");
        assert_eq!((c.xid, c.credits, c.proc), (0x0102_0304, 2, Proc::Msg));
        assert_eq!(direction(&c, &m), Direction::Forward);
        // Too small a buffer: nothing written past it, an error.
        let mut small = [0u8; 27];
        assert!(encode_call(&mut Encoder::new(&mut small), 1, 2).is_err());
    }

    #[test]
    fn credits_clamped() {
        let r = BackwardReply {
            xid: 1,
            credits: 0,
            offset: 28,
            len: 8,
        };
        assert_eq!(r.credits(2), 1);
        assert_eq!(BackwardReply { credits: 1, ..r }.credits(2), 1);
        assert_eq!(BackwardReply { credits: 2, ..r }.credits(2), 2);
        assert_eq!(
            BackwardReply {
                credits: u32::MAX,
                ..r
            }
            .credits(2),
            2
        );
    }

    #[test]
    fn any_input_is_safe() {
        // Every prefix of a valid message, and every single-byte corruption of it, either
        // fails to decode or gets a direction without panicking.
        let buf = msg(&[7, RPC_REPLY, 0, 0, 0, 0]);
        for n in 0..=buf.len() {
            if let Ok(c) = Call::decode(&buf[..n], &Limits::svcrdma(256, 4096)) {
                let _ = direction(&c, &buf[..n]);
            }
        }
        for i in 0..buf.len() {
            for v in [0u8, 1, 0x80, 0xff] {
                let mut b = buf.clone();
                b[i] = v;
                if let Ok(c) = Call::decode(&b, &Limits::svcrdma(256, 4096)) {
                    if let Direction::BackwardReply(r) = direction(&c, &b) {
                        assert_eq!(r.msg(&b).len(), r.len);
                    }
                }
            }
        }
    }
}
