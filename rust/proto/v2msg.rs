// SPDX-License-Identifier: GPL-2.0

//! Version 2 messages that carry RPC Calls and replies, read and written with the version 1
//! views.
//!
//! After the version 2 [`v2::Prefix`] and `rdma_inv_handle`, the chunk lists of `RDMA2_MSG` and
//! `RDMA2_NOMSG` have exactly the encoding of version 1's (Section 6.3.3: `rpcrdma2_segment`,
//! `rpcrdma2_read_segment` and the optional-data lists are those of RFC 8166). So a version 2
//! Call is validated by [`v2::Header::decode`] (prefix, flags, limits), the rule for a Call's
//! `rdma_inv_handle` ([`v2::ChunkLists::check_call_inv_handle`]) and then by the version 1 Call
//! checks on its lists ([`v1::Call`], kept by the responder exactly as for a version 1 Call); a
//! version 2 reply becomes a [`v1::Decoded`] with the version 1 reply checks (its
//! `rdma_inv_handle`, defined for Calls only, is not looked at). Every version 2 header is
//! [`EXTRA`] bytes longer than the version 1 header with the same lists.
//!
//! One difference: version 2 has empty Write chunks (draft Section 4.4.6: "a Write chunk with
//! a zero segment count. By definition, the length of an empty Write chunk is zero"), which
//! version 1 refuses (`xdr_check_write_chunk()`). A version 2 Call or reply may carry them: a
//! responder treats one as a Write chunk of length zero (a result that does not fit it is as
//! for any too short Write chunk) and echoes it with its segment count, zero. A Reply chunk
//! still needs a segment: the draft defines no empty one.
//!
//! What this milestone does not do, and how such messages are treated:
//!
//! - Message continuation ([`v2::F_MORE`]) on `RDMA2_MSG` is answered
//!   `RDMA2_ERR_INVAL_FLAG` (the flag combination is not supported).
//! - A continued `RDMA2_CONNPROP` is answered `RDMA2_ERR_INVAL_FLAG` by a responder and dropped
//!   by a requester; a complete one is reported with its properties ([`ConnProps`]).
//! - A credit refresh (`RDMA2_NOMSG` with three empty lists) is reported, not answered.
//!
//! Transport properties ([`ConnProps`]): each end sends its own once the connection's version
//! is 2, with `rdma_xid` zero and [`v2::F_RESPONSE`] clear (the XID is nobody's), and lowers its
//! send threshold to the Receive Buffer Size its peer advertised
//! ([`ConnProps::send_threshold`]).

use super::{
    continuation,
    marshal::{
        self,
        CallChunk,
        Force,
        ReplyChunk, //
    },
    private_data,
    v1::{
        self,
        Chunks,
        Decoded,
        Fixed,
        Lists,
        Proc, //
    },
    v2::{
        self,
        Body,
        ErrorBody,
        Flags,
        HeaderType,
        Outgoing,
        Prefix,
        Properties,
        Property,
        ReverseSupport, //
    },
    xdr::{
        self,
        Encoder, //
    },
};

/// Offset of the chunk lists in a version 2 `RDMA2_MSG` or `RDMA2_NOMSG` header: the prefix and
/// `rdma_inv_handle`.
pub const LISTS_AT: usize = v2::PREFIX_LEN + 4;

/// How much longer a version 2 header is than the version 1 header with the same lists
/// (`rdma_flags` and `rdma_inv_handle`).
pub const EXTRA: usize = LISTS_AT - v1::FIXED_SIZE;

/// A version 2 credit word (Section 4.3.1) for a grant of `credits`: the low half is the grant,
/// the high half the most that may be outstanding, both `credits` (saturated to 16 bits).
pub fn credit_word(credits: u32) -> u32 {
    let c = u16::try_from(credits).unwrap_or(u16::MAX);
    v2::credit_word(c, c)
}

/// The grant a version 2 credit word carries: its low half.
pub fn credit_grant(word: u32) -> u32 {
    word & 0xffff
}

/// A version 2 message a responder received, once accepted.
///
/// The Call is returned by value, like [`v1::Call::decode`]'s: the responder keeps it with the
/// Receive buffer, and this crate does not allocate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[expect(clippy::large_enum_variant)]
pub enum Inbound {
    /// An RPC Call, checked as a version 1 Call would be.
    Call(v1::Call),
    /// A credit refresh (`RDMA2_NOMSG` with empty lists): nothing to answer.
    CreditRefresh,
    /// A complete `RDMA2_CONNPROP`: the requester's properties, defaults applied.
    ConnProp(ConnProps),
}

/// Why a responder does not process a version 2 message, and what it answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Answer `RDMA2_ERROR` with this body to the message with this XID.
    Answer {
        /// `rdma_xid` of the refused message.
        xid: u32,
        /// The error.
        body: ErrorBody,
    },
    /// Drop the message: too short to answer, or an `RDMA2_ERROR` (never answered).
    Drop,
}

/// The version 2 limits matching the version 1 responder limits `limits`, with at most
/// [`v1::Limits::MAX_CHUNKS`] chunks per list, as [`v1::Call::decode`] applies.
fn v2_limits(limits: &v1::Limits) -> v2::Limits {
    v2::Limits {
        max_read_chunks: limits.max_read_chunks.min(v1::Limits::MAX_CHUNKS),
        max_write_chunks: limits.max_write_chunks.min(v1::Limits::MAX_CHUNKS),
        max_segments: limits.max_segments,
    }
}

/// The version 1 procedure of a version 2 header type with chunk lists.
fn proc_of(h: HeaderType) -> Option<Proc> {
    match h {
        HeaderType::Msg => Some(Proc::Msg),
        HeaderType::NoMsg => Some(Proc::NoMsg),
        HeaderType::Error | HeaderType::ConnProp => None,
    }
}

/// Decodes a message received by a responder whose `rdma_vers` is 2 (`buf` is exactly the
/// received bytes).
///
/// First the version 2 header is validated as a whole ([`v2::Header::decode`]: its errors are
/// answered with the `RDMA2_ERROR` the draft prescribes, [`v2::Error::reply`]) with the rule for
/// a Call's `rdma_inv_handle` ([`v2::ChunkLists::check_call_inv_handle`]), then the chunk lists
/// of a Call get the checks of [`v1::Call::decode`], whose failures (a Position-Zero Read
/// chunk in `RDMA2_MSG`, none in a non-empty `RDMA2_NOMSG`, Read chunks beyond the payload or
/// overlapping, lengths beyond `limits`) are `RDMA2_ERR_BAD_XDR`, the version 2 name of
/// `ERR_CHUNK`.
pub fn decode_call(buf: &[u8], limits: &v1::Limits) -> Result<Inbound, Refusal> {
    let common = v2::Common::peek(buf).ok_or(Refusal::Drop)?;
    let refuse = |body: ErrorBody| Refusal::Answer {
        xid: common.xid,
        body,
    };
    if common.htype == v2::ERROR {
        // Requesters never send errors; an error is never answered (RFC 8166, Section 5.5).
        return Err(Refusal::Drop);
    }
    let (h, _) = v2::Header::decode(buf, &v2_limits(limits)).map_err(|e| refuse(e.reply()))?;
    let lists = match h.body {
        Body::Msg(l) | Body::NoMsg(l) => l,
        Body::ConnProp(set) => return Ok(Inbound::ConnProp(ConnProps::from(&set.resolve()))),
        // Continuation is not implemented: the flag combination is not supported.
        Body::ConnPropFragment => return Err(refuse(ErrorBody::InvalFlag)),
        Body::Error(_) => return Err(Refusal::Drop),
    };
    lists
        .check_call_inv_handle()
        .map_err(|e| refuse(e.reply()))?;
    if h.prefix.flags.more {
        return Err(refuse(ErrorBody::InvalFlag));
    }
    if h.is_credit_refresh() {
        return Ok(Inbound::CreditRefresh);
    }
    let proc = proc_of(h.htype()).ok_or(Refusal::Drop)?;
    let fixed = Fixed {
        xid: common.xid,
        vers: v2::VERSION,
        credits: common.credit,
        proc: proc.into(),
    };
    let mut call = v1::Call::decode_at(buf, fixed, proc, LISTS_AT, limits).map_err(|e| {
        refuse(match e {
            v1::Error::Chunk(v1::ChunkError::TooManySegments) => ErrorBody::Segments {
                max_segments: limits.max_segments,
            },
            _ => ErrorBody::BadXdr,
        })
    })?;
    call.inv_handle = lists.inv_handle;
    Ok(Inbound::Call(call))
}

/// A version 2 message a requester received, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply<'a> {
    /// An RPC reply (`RDMA2_MSG` or `RDMA2_NOMSG`), with the version 1 reply checks applied;
    /// `header.vers` is 2 and `header.credits` the raw credit word.
    Rpc(Decoded<'a>),
    /// `RDMA2_ERROR`.
    Error(ErrorBody),
    /// A credit refresh (`RDMA2_NOMSG` with empty lists).
    CreditRefresh,
    /// A complete `RDMA2_CONNPROP`: the responder's properties, defaults applied.
    ConnProp(ConnProps),
}

/// Why a received version 2 reply is unusable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyError {
    /// The version 2 header is invalid.
    V2(v2::Error),
    /// The chunk lists fail the version 1 reply checks.
    V1(v1::Error),
    /// A continued reply ([`v2::F_MORE`]), which this implementation does not reassemble.
    Continued,
}

/// Decodes a message received by a requester whose `rdma_vers` is 2, with the checks of
/// [`v1::Header::decode_reply`] on its chunk lists (`limits` as there).
pub fn decode_reply<'a>(buf: &'a [u8], limits: &v1::Limits) -> Result<Reply<'a>, ReplyError> {
    let v2l = v2::Limits {
        max_read_chunks: limits.max_read_chunks,
        max_write_chunks: limits.max_write_chunks,
        max_segments: limits.max_segments,
    };
    let (h, _) = v2::Header::decode(buf, &v2l).map_err(ReplyError::V2)?;
    match h.body {
        Body::Error(e) => return Ok(Reply::Error(e)),
        Body::ConnProp(set) => return Ok(Reply::ConnProp(ConnProps::from(&set.resolve()))),
        Body::ConnPropFragment => return Err(ReplyError::Continued),
        Body::Msg(_) | Body::NoMsg(_) => {}
    }
    if h.prefix.flags.more {
        return Err(ReplyError::Continued);
    }
    if h.is_credit_refresh() {
        return Ok(Reply::CreditRefresh);
    }
    let proc = proc_of(h.htype()).ok_or(ReplyError::V2(v2::Error::HeaderType(v2::ERROR)))?;
    let fixed = Fixed {
        xid: h.prefix.xid,
        vers: v2::VERSION,
        credits: h.prefix.credit,
        proc: proc.into(),
    };
    let (decoded, _) =
        v1::Header::decode_body_at(buf, fixed, proc, LISTS_AT, limits).map_err(ReplyError::V1)?;
    v1::Header::check_reply(decoded)
        .map(Reply::Rpc)
        .map_err(ReplyError::V1)
}

/// A received version 2 reply's place in message continuation (Section 6.3.2), for a requester
/// that reassembles continued replies with [`continuation::Reassembly`]: its
/// [`continuation::Fragment`] and the offset of its payload in `buf`.
///
/// A message with [`v2::F_MORE`] must be an `RDMA2_MSG` with empty chunk lists (Section 6.3.2:
/// the chunks go in the final message); its payload follows them. A message without it (the
/// final one) is decoded as any reply ([`decode_reply`]), whose payload offset it gives. Any
/// other message, a continued `RDMA2_CONNPROP` included, is [`ReplyError::Continued`].
pub fn fragment(
    buf: &[u8],
    limits: &v1::Limits,
) -> Result<(continuation::Fragment, usize), ReplyError> {
    let v2l = v2::Limits {
        max_read_chunks: limits.max_read_chunks,
        max_write_chunks: limits.max_write_chunks,
        max_segments: limits.max_segments,
    };
    let (h, after) = v2::Header::decode(buf, &v2l).map_err(ReplyError::V2)?;
    let offset = if h.prefix.flags.more {
        match h.body {
            Body::Msg(l) if l.lists_empty() => after,
            _ => return Err(ReplyError::Continued),
        }
    } else {
        match decode_reply(buf, limits)? {
            Reply::Rpc(d) => d.payload_offset,
            _ => return Err(ReplyError::Continued),
        }
    };
    let len = buf
        .len()
        .checked_sub(offset)
        .ok_or(ReplyError::V1(v1::Error::Xdr(xdr::Error::Short)))?;
    Ok((
        continuation::Fragment {
            xid: h.prefix.xid,
            htype: h.htype().into(),
            flags: h.prefix.flags.to_wire(),
            len,
        },
        offset,
    ))
}

/// The responder's [`fragment`]: a received version 2 message's place in message continuation,
/// for a responder that reassembles continued Calls.
///
/// A message with [`v2::F_MORE`] must be an `RDMA2_MSG` with empty chunk lists (its payload
/// follows them); with chunks it is refused with `RDMA2_ERR_INVAL_FLAG`, and `F_MORE` on another
/// type with what [`v2::Header::decode`] prescribes. A message without it is decoded as
/// [`decode_call`] does: a Call gives the offset of its payload; a credit refresh or
/// `RDMA2_CONNPROP` a zero-length fragment (in the middle of a sequence, it breaks it); a
/// refused one, the refusal, which is always [`decode_call`]'s.
///
/// An `RDMA2_ERROR`, well-formed or not, is [`Refusal::Drop`], as in [`decode_call`]: it is
/// never answered. In the middle of a sequence it breaks it all the same (Section 6.3.2:
/// another header type), and the responder answers the sequence's XID with
/// `RDMA2_ERR_INVAL_FLAG`, which a `Drop` never does for it.
pub fn call_fragment(
    buf: &[u8],
    limits: &v1::Limits,
) -> Result<(continuation::Fragment, usize), Refusal> {
    let common = v2::Common::peek(buf).ok_or(Refusal::Drop)?;
    if common.htype == v2::ERROR {
        // Before any check that would answer it (`F_MORE` on an error, a truncated body).
        return Err(Refusal::Drop);
    }
    let (h, after) = v2::Header::decode(buf, &v2_limits(limits)).map_err(|e| Refusal::Answer {
        xid: common.xid,
        body: e.reply(),
    })?;
    let frag = |len| continuation::Fragment {
        xid: h.prefix.xid,
        htype: h.htype().into(),
        flags: h.prefix.flags.to_wire(),
        len,
    };
    if h.prefix.flags.more {
        return match h.body {
            Body::Msg(l) if l.lists_empty() => Ok((frag(buf.len().saturating_sub(after)), after)),
            _ => Err(Refusal::Answer {
                xid: h.prefix.xid,
                body: ErrorBody::InvalFlag,
            }),
        };
    }
    match decode_call(buf, limits)? {
        Inbound::Call(c) => Ok((
            frag(buf.len().saturating_sub(c.payload_offset)),
            c.payload_offset,
        )),
        Inbound::CreditRefresh | Inbound::ConnProp(_) => Ok((frag(0), buf.len())),
    }
}

/// Encodes a version 2 prefix of type `htype` followed by `inv_handle` (`rdma_inv_handle`).
fn encode_prefix(
    e: &mut Encoder<'_>,
    (xid, credit): (u32, u32),
    response: bool,
    htype: HeaderType,
    inv_handle: u32,
) -> xdr::Result<()> {
    let prefix = Prefix {
        xid,
        credit,
        flags: Flags {
            response,
            more: false,
        },
    };
    prefix.encode(e, htype).map_err(|e| match e {
        v2::Error::Xdr(x) => x,
        _ => xdr::Error::Short,
    })?;
    e.u32(inv_handle)
}

/// The header type of a version 1 procedure with chunk lists.
fn htype_of(proc: Proc) -> xdr::Result<HeaderType> {
    match proc {
        Proc::Msg => Ok(HeaderType::Msg),
        Proc::NoMsg => Ok(HeaderType::NoMsg),
        p => Err(xdr::Error::BadDiscriminant(p.into())),
    }
}

/// Encodes a requester's `RDMA2_MSG` or `RDMA2_NOMSG` Call header with `lists`, as
/// [`v1::encode`] does for version 1, with `rdma_flags` zero and `inv_handle` as
/// `rdma_inv_handle`: the one handle the responder may invalidate with its Send, or zero for
/// none (Section 6.3.3). Returns the header length; nothing is written if it does not fit.
pub fn encode_call(
    e: &mut Encoder<'_>,
    (xid, credit): (u32, u32),
    proc: Proc,
    lists: &Lists<'_>,
    inv_handle: u32,
) -> xdr::Result<usize> {
    let htype = htype_of(proc)?;
    let len = LISTS_AT.saturating_add(lists.encoded_len());
    if e.remaining() < len {
        return Err(xdr::Error::Short);
    }
    encode_prefix(e, (xid, credit), false, htype, inv_handle)?;
    v1::encode_read_list(e, lists.reads)?;
    v1::encode_write_list(e, lists.writes)?;
    v1::encode_reply_chunk(e, lists.reply)?;
    Ok(len)
}

/// How a call that drew an `RDMA2_ERROR` was sent, as far as the draft's retries go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sent {
    /// How the call travelled.
    pub call: CallChunk,
    /// How its reply was to travel.
    pub reply: ReplyChunk,
    /// It was itself sent again after an `RDMA2_ERROR`.
    pub retried: bool,
    /// The largest reply the requester takes (`rq_rcv_buf.buflen`).
    pub rcv_buflen: u32,
}

/// What the draft asks of a requester whose call, sent as `sent`, drew the `RDMA2_ERROR`
/// `err` (Section 6.4.3): the marshaling to send it again with, or `None` when the RPC fails.
///
/// - `RDMA2_ERR_READ_CHUNKS` with no Read chunk accepted: again with a Position-Zero Read
///   chunk, unless the call already was one ("the requester MUST terminate the transaction");
///   with some accepted, our single Read chunk was within them: the responder is wrong.
/// - `RDMA2_ERR_REPLY_RESOURCE` (also what a responder taking no Write chunks sends, see
///   [`WriteChunkRefusals`]): again with
///   a Reply chunk and no Write chunk, unless a Reply chunk was offered already (ours covers the
///   whole reply buffer) or the length needed exceeds that buffer.
/// - `RDMA2_ERR_WRITE_RESOURCE`, and `RDMA2_ERR_WRITE_CHUNKS` with none accepted: a Write chunk
///   was not good enough; again with a Reply chunk instead.
/// - Anything else, or a call sent again already: the RPC fails (one retry per call).
pub fn retry(err: &ErrorBody, sent: &Sent) -> Option<Force> {
    if sent.retried {
        return None;
    }
    let reply_chunk = Force {
        position_zero: false,
        reply_chunk: true,
    };
    match *err {
        ErrorBody::ReadChunks { max_chunks: 0 }
            if matches!(sent.call, CallChunk::ReadChunk { .. }) =>
        {
            Some(Force {
                position_zero: true,
                reply_chunk: sent.reply == ReplyChunk::ReplyChunk,
            })
        }
        ErrorBody::ReplyResource { length_needed }
            if sent.reply != ReplyChunk::ReplyChunk && length_needed <= sent.rcv_buflen =>
        {
            Some(reply_chunk)
        }
        ErrorBody::WriteResource { .. } | ErrorBody::WriteChunks { max_chunks: 0 }
            if sent.reply == ReplyChunk::WriteChunk =>
        {
            Some(reply_chunk)
        }
        _ => None,
    }
}

/// How many `RDMA2_ERR_REPLY_RESOURCE` answers in a row, each to a call that offered a Write
/// chunk, make a requester take it that the responder takes no Write chunks at all
/// ([`WriteChunkRefusals`]).
pub const REFUSALS_IN_A_ROW: u32 = 2;

/// What a connection's answers have told of its responder's Write chunks, for a requester
/// that would rather offer a Reply chunk at once than draw an `RDMA2_ERROR`, and a round trip,
/// for each call offering a Write chunk to a responder that takes none (Section 6.4.3).
///
/// The draft gives such a responder no answer of its own: it "MUST return a response of
/// `RDMA2_ERR_REPLY_RESOURCE`", which a responder that takes Write chunks also sends when the
/// rest of the reply does not fit inline. So one such answer says nothing about Write chunks;
/// [`REFUSALS_IN_A_ROW`] of them, each for a call that offered one, with no answer between them
/// that used or accepted a Write chunk, are taken to. `RDMA2_ERR_WRITE_CHUNKS` with
/// `rdma_max_chunks` zero says it outright ("the maximum number of Write chunks the responder
/// can process") and counts at once. `RDMA2_ERR_WRITE_RESOURCE` speaks of one chunk too short,
/// so of a responder that takes them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteChunkRefusals {
    /// `RDMA2_ERR_REPLY_RESOURCE` answers in a row to calls that offered a Write chunk.
    in_a_row: u32,
}

impl WriteChunkRefusals {
    /// Feeds the `RDMA2_ERROR` `err` answering a call sent as `sent`; whether the responder
    /// takes no Write chunks, as far as this connection's answers tell.
    pub fn on_error(&mut self, err: &ErrorBody, sent: &Sent) -> bool {
        if sent.reply != ReplyChunk::WriteChunk {
            return false;
        }
        match err {
            ErrorBody::WriteChunks { max_chunks: 0 } => true,
            ErrorBody::ReplyResource { .. } => {
                self.in_a_row = self.in_a_row.saturating_add(1);
                self.in_a_row >= REFUSALS_IN_A_ROW
            }
            _ => {
                self.in_a_row = 0;
                false
            }
        }
    }

    /// A reply that is no `RDMA2_ERROR` answered a call sent as `sent`: if that call offered a
    /// Write chunk, the responder took it (the streak of [`WriteChunkRefusals::on_error`]
    /// ends).
    pub fn on_reply(&mut self, sent: &Sent) {
        if sent.reply == ReplyChunk::WriteChunk {
            self.in_a_row = 0;
        }
    }
}

/// Encodes a credit refresh granting `credit` (a credit word, [`credit_word`]): an
/// `RDMA2_NOMSG` with xid 0, no flag and empty chunk lists (Sections 4.3.1 and 6.4.2). Either
/// end sends it; it also serves as a keep-alive ([`super::keepalive`]).
pub fn encode_refresh(e: &mut Encoder<'_>, credit: u32) -> xdr::Result<usize> {
    encode_call(e, (0, credit), Proc::NoMsg, &Lists::default(), 0)
}

/// Length of the header of a message with [`v2::F_MORE`] (Section 6.3.2): an `RDMA2_MSG` with
/// `rdma_inv_handle` zero and empty chunk lists, which "MUST be empty" in such a message.
pub const MORE_HEADER_LEN: usize = LISTS_AT + 12;

/// Encodes the header of a message with [`v2::F_MORE`]: `RDMA2_MSG`, `xid`, `credit` (a credit
/// word), [`v2::F_RESPONSE`] if `response`, `rdma_inv_handle` zero and empty chunk lists; its
/// part of the RPC message follows. Returns [`MORE_HEADER_LEN`].
pub fn encode_more(
    e: &mut Encoder<'_>,
    xid: u32,
    credit: u32,
    response: bool,
) -> xdr::Result<usize> {
    if e.remaining() < MORE_HEADER_LEN {
        return Err(xdr::Error::Short);
    }
    let prefix = Prefix {
        xid,
        credit,
        flags: Flags {
            response,
            more: true,
        },
    };
    prefix.encode(e, HeaderType::Msg).map_err(|e| match e {
        v2::Error::Xdr(x) => x,
        _ => xdr::Error::Short,
    })?;
    for _ in 0..4 {
        e.u32(0)?;
    }
    Ok(MORE_HEADER_LEN)
}

/// Encoded size of a version 2 reply header echoing `call`'s Write list, and its Reply chunk
/// if `reply_chunk_used` ([`v1::reply_header_len`] plus [`EXTRA`]).
pub fn reply_header_len(call: &Chunks<'_>, reply_chunk_used: bool) -> usize {
    v1::reply_header_len(call, reply_chunk_used).saturating_add(EXTRA)
}

/// Encodes a responder's version 2 reply header, as [`v1::encode_reply`] does for version 1,
/// with [`v2::F_RESPONSE`] set and `rdma_inv_handle` zero. Returns the header length.
pub fn encode_reply(
    e: &mut Encoder<'_>,
    xid: u32,
    credit: u32,
    call: &Chunks<'_>,
    write_payloads: &[u32],
    reply_len: Option<u32>,
) -> xdr::Result<usize> {
    v1::encode_reply_with(
        e,
        (LISTS_AT, &|e, proc| {
            encode_prefix(e, (xid, credit), true, htype_of(proc)?, 0)
        }),
        call,
        write_payloads,
        reply_len,
    )
}

/// The transport properties (Section 5.2) one end advertises in its `RDMA2_CONNPROP`, or those
/// its peer advertised, with Table 1's defaults for any left out. Host authentication
/// (Section 5.2.6) is neither sent nor kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnProps {
    /// Maximum Send Size: the largest Send this end posts.
    pub sbsiz: u32,
    /// Receive Buffer Size: the size of every Receive buffer this end posts.
    pub rbsiz: u32,
    /// Maximum RDMA Segment Size this end sends or receives.
    pub rssiz: u32,
    /// Maximum RDMA Segment Count in a requester's transport header.
    pub rcsiz: u32,
    /// Reverse Request Support.
    pub brs: ReverseSupport,
}

/// The properties as both ends log them: "send S, receive R, segments of SIZE x COUNT, reverse
/// requests SUPPORT".
impl core::fmt::Display for ConnProps {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "send {}, receive {}, segments of {} x {}, reverse requests {:?}",
            self.sbsiz, self.rbsiz, self.rssiz, self.rcsiz, self.brs
        )
    }
}

impl Default for ConnProps {
    fn default() -> Self {
        Self::from(&Properties::default())
    }
}

impl From<&Properties<'_>> for ConnProps {
    fn from(p: &Properties<'_>) -> Self {
        ConnProps {
            sbsiz: p.sbsiz,
            rbsiz: p.rbsiz,
            rssiz: p.rssiz,
            rcsiz: p.rcsiz,
            brs: p.brs,
        }
    }
}

/// Why a peer's transport properties cannot be honoured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unusable {
    /// Its Receive Buffer Size is below [`MIN_RBSIZ`]: not even the version 1 minimum inline
    /// threshold, which every RPC-over-RDMA receiver supports.
    ReceiveBuffer(u32),
    /// Its Maximum RDMA Segment Size is below one page: no registered page fits a segment.
    SegmentSize(u32),
    /// Its Maximum RDMA Segment Count is below two: a call that offers a Read chunk and a
    /// Write chunk would exceed it.
    SegmentCount(u32),
    /// Its Maximum RDMA Segment Size and Count leave segments of `depth` pages, `segs` per
    /// chunk: too few for the largest payload (`marshal::max_data_segs`), which the mount sized
    /// its I/O for before they arrived. Every READ or WRITE of that size would fail.
    Payload {
        /// Pages per segment the size leaves.
        depth: u32,
        /// Segments per chunk the count leaves.
        segs: u32,
    },
}

/// Transport messages that carry no RPC (`RDMA2_CONNPROP`) an end may have outstanding
/// toward its peer: each end keeps a Send for them apart from its credits, and a Receive beyond
/// them to catch the peer's (Section 4.3.1: a receiver must always be able to take one such
/// message in addition to the payload-bearing ones).
pub const CTL_MESSAGES: u32 = 1;

/// The smallest Receive Buffer Size honoured: RFC 8166's minimum inline threshold (1024).
pub const MIN_RBSIZ: u32 = private_data::MIN_BUFFER_SIZE;

impl ConnProps {
    /// Length of the `RDMA2_CONNPROP` [`ConnProps::encode`] writes: the prefix, the count and
    /// five properties of one word each.
    pub const ENCODED_LEN: usize = v2::PREFIX_LEN + 4 + 5 * 12;

    /// Encodes a complete `RDMA2_CONNPROP` (`rdma_xid` zero, no flag) advertising these five
    /// properties, with `credit` as its credit word. Returns its length.
    pub fn encode(&self, buf: &mut [u8], credit: u32) -> Result<usize, v2::Error> {
        let props = [
            Property::Sbsiz(Some(self.sbsiz)),
            Property::Rbsiz(Some(self.rbsiz)),
            Property::Rssiz(Some(self.rssiz)),
            Property::Rcsiz(Some(self.rcsiz)),
            Property::Brs(Some(self.brs)),
        ];
        let prefix = Prefix {
            xid: 0,
            credit,
            flags: Flags::default(),
        };
        v2::encode(buf, &prefix, &Outgoing::ConnProp(&props))
    }

    /// The send threshold toward a peer that advertised these properties, for a sender whose
    /// threshold was `ours` (from the RFC 8797 exchange and its own Send buffers): never more
    /// than the peer's Receive buffers hold, never more than before, since the sender's buffers
    /// were sized at connect. Section 4.3.2: the threshold is the smaller of what the sender
    /// can send and what the receiver can receive.
    pub fn send_threshold(&self, ours: u32) -> Result<u32, Unusable> {
        if self.rbsiz < MIN_RBSIZ {
            return Err(Unusable::ReceiveBuffer(self.rbsiz));
        }
        Ok(ours.min(self.rbsiz))
    }

    /// The registration limits of a requester toward a responder that advertised these
    /// properties, for a requester whose own are `depth` pages per segment and `segs`
    /// segments per chunk: no segment longer than the responder's Maximum RDMA Segment Size
    /// (Section 5.2.3), and no call header with more segments than its Maximum RDMA Segment
    /// Count (Section 5.2.4): the count bounds each chunk, and the chunks of a call together
    /// (the third value, for `marshal::Connection::max_call_segs`). Like the send threshold,
    /// the limits only drop: MRs and header buffers were sized at connect.
    ///
    /// Limits under which the largest payload no longer fits one chunk (with the head and tail
    /// segments a chunk covering a whole buffer adds) cannot be honoured
    /// ([`Unusable::Payload`]): the transport told sunrpc its largest payload when the mount was
    /// made, and the mount sized its I/O by it, so every I/O of that size would fail. The
    /// requester then keeps its own limits, which is what a receiver that does not take note of
    /// the properties does (Section 6.4.4: the sender "should be prepared for cases in which
    /// the receiver continues to assume that the default value for a particular property is
    /// still in effect"); ours are within Table 1's defaults (segments of at most 1 MiB, and no
    /// call with more than 16 segments unless the device needs more for one payload).
    pub fn segment_caps(
        &self,
        depth: u32,
        segs: u32,
        page_size: u32,
    ) -> Result<(u32, u32, u32), Unusable> {
        let pages = self.rssiz.checked_div(page_size).unwrap_or(0);
        if pages == 0 {
            return Err(Unusable::SegmentSize(self.rssiz));
        }
        if self.rcsiz < 2 {
            return Err(Unusable::SegmentCount(self.rcsiz));
        }
        let (depth, segs) = (depth.min(pages), segs.min(self.rcsiz));
        // As `marshal::max_rdma_segs`: the payload's segments, and two more for the head and
        // tail of a Reply or Position-Zero Read chunk covering a whole buffer.
        let need = match depth {
            0 => u32::MAX,
            d => marshal::max_data_segs(page_size)
                .div_ceil(d)
                .saturating_add(2),
        };
        if segs < need {
            return Err(Unusable::Payload { depth, segs });
        }
        Ok((depth, segs, self.rcsiz))
    }
}

/// Largest `RDMA2_ERROR` header: prefix, code and two words.
pub const ERROR_MAX: usize = v2::PREFIX_LEN + 12;

/// Encodes a responder's `RDMA2_ERROR` answering the message with `xid`, with
/// [`v2::F_RESPONSE`] set (the XID is the requester's). Returns its length.
pub fn encode_error(
    buf: &mut [u8],
    xid: u32,
    credit: u32,
    body: ErrorBody,
) -> Result<usize, v2::Error> {
    let prefix = Prefix {
        xid,
        credit,
        flags: Flags {
            response: true,
            more: false,
        },
    };
    v2::encode(buf, &prefix, &v2::Outgoing::Error(body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::v1::{
        ReadSegment,
        Segment, //
    };
    use std::vec::Vec;

    const LIM: v1::Limits = v1::Limits {
        max_segments: 8,
        max_read_chunks: 16,
        max_write_chunks: 16,
        max_read_bytes: 1 << 20,
        max_write_bytes: 1 << 20,
    };

    fn seg(handle: u32, length: u32) -> Segment {
        Segment {
            handle,
            length,
            offset: 0x1000,
        }
    }

    fn call(proc: Proc, lists: &Lists<'_>, payload: &[u8]) -> Vec<u8> {
        let mut buf = [0u8; 512];
        let n = encode_call(
            &mut Encoder::new(&mut buf),
            (7, credit_word(32)),
            proc,
            lists,
            0,
        )
        .unwrap();
        let mut v = buf[..n].to_vec();
        v.extend_from_slice(payload);
        v
    }

    fn words(w: &[u32]) -> Vec<u8> {
        w.iter().flat_map(|v| v.to_be_bytes()).collect()
    }

    #[test]
    fn call_round_trip_matches_v1() {
        let reads = [ReadSegment {
            position: 8,
            segment: seg(1, 4096),
        }];
        let w = [seg(2, 8192)];
        let writes = [&w[..]];
        let r = [seg(3, 1024)];
        let lists = Lists {
            reads: &reads,
            writes: &writes,
            reply: Some(&r),
        };
        let msg = call(Proc::Msg, &lists, &[0xaa; 12]);
        // The v1 header with the same lists is EXTRA bytes shorter.
        let mut b1 = [0u8; 512];
        let n1 = v1::encode(&mut Encoder::new(&mut b1), 7, 32, Proc::Msg, &lists).unwrap();
        assert_eq!(msg.len() - 12, n1 + EXTRA);
        assert_eq!(&msg[LISTS_AT..msg.len() - 12], &b1[v1::FIXED_SIZE..n1]);
        let Ok(Inbound::Call(c)) = decode_call(&msg, &LIM) else {
            panic!("not a call");
        };
        assert_eq!(c.vers, 2);
        assert_eq!(c.xid, 7);
        assert_eq!(c.payload_offset, msg.len() - 12);
        assert_eq!(c.write_len(0), Some(8192));
        assert_eq!(c.reply_len(), Some(1024));
        let chunks = c.chunks(&msg);
        assert_eq!(chunks.reads.len(), 1);
        assert_eq!(c.read_chunks(&msg).count(), 1);
        assert_eq!(c.inv_handle, 0);
    }

    #[test]
    fn call_names_its_inv_handle() {
        let w = [seg(2, 8192)];
        let writes = [&w[..]];
        let lists = Lists {
            writes: &writes,
            ..Lists::default()
        };
        let mut buf = [0u8; 128];
        let n = encode_call(&mut Encoder::new(&mut buf), (9, 1), Proc::Msg, &lists, 2).unwrap();
        assert_eq!(&buf[v2::PREFIX_LEN..LISTS_AT], &2u32.to_be_bytes());
        let Ok(Inbound::Call(c)) = decode_call(&buf[..n], &LIM) else {
            panic!("not a call");
        };
        assert_eq!(c.inv_handle, 2);
        // A Call naming a handle it does not carry cannot be processed as sent.
        let n = encode_call(&mut Encoder::new(&mut buf), (9, 1), Proc::Msg, &lists, 3).unwrap();
        assert_eq!(
            decode_call(&buf[..n], &LIM),
            Err(Refusal::Answer {
                xid: 9,
                body: ErrorBody::BadXdr
            })
        );
    }

    #[test]
    fn empty_write_chunks() {
        // A Call with an empty Write chunk (no segment) between two others.
        let w1 = [seg(1, 4096)];
        let w3 = [seg(3, 100), seg(4, 28)];
        let writes: [&[Segment]; 3] = [&w1, &[], &w3];
        let lists = Lists {
            writes: &writes,
            ..Lists::default()
        };
        let b = call(Proc::Msg, &lists, &[0; 8]);
        let Ok(Inbound::Call(c)) = decode_call(&b, &LIM) else {
            panic!("empty Write chunk refused: {:?}", decode_call(&b, &LIM));
        };
        assert_eq!(c.write_count(), 3);
        assert_eq!(
            (c.write_len(0), c.write_len(1), c.write_len(2)),
            (Some(4096), Some(0), Some(128))
        );
        let chunks = c.chunks(&b);
        let counts: Vec<_> = chunks.writes.chunks().map(|w| w.segment_count()).collect();
        assert_eq!(counts, [1, 0, 2]);
        // The reply echoes it, zero segments, and a requester takes the echo.
        let mut out = [0u8; 256];
        let n = encode_reply(
            &mut Encoder::new(&mut out),
            7,
            credit_word(8),
            &chunks,
            &[10, 0, 110],
            None,
        )
        .unwrap();
        assert_eq!(n, reply_header_len(&chunks, false));
        let l = v1::Limits {
            max_write_chunks: 3,
            ..v1::Limits::UNLIMITED
        };
        let Ok(Reply::Rpc(d)) = decode_reply(&out[..n], &l) else {
            panic!("echo refused: {:?}", decode_reply(&out[..n], &l));
        };
        let Some(echo) = d.header.body.chunks() else {
            panic!()
        };
        let lens: Vec<_> = echo
            .writes
            .chunks()
            .map(|w| (w.segment_count(), w.length()))
            .collect();
        assert_eq!(lens, [(1, 10), (0, 0), (2, 110)]);
        // Version 1 keeps its rule, and a version 2 Reply chunk still needs a segment.
        let mut v1b = [0u8; 256];
        let m = v1::encode(&mut Encoder::new(&mut v1b), 7, 32, Proc::Msg, &lists).unwrap();
        assert_eq!(
            v1::Call::decode(&v1b[..m], &LIM),
            Err(v1::Error::Chunk(v1::ChunkError::EmptyChunk))
        );
        let reply_empty = call(
            Proc::Msg,
            &Lists {
                reply: Some(&[]),
                ..Lists::default()
            },
            &[0; 8],
        );
        assert_eq!(
            decode_call(&reply_empty, &LIM),
            Err(Refusal::Answer {
                xid: 7,
                body: ErrorBody::BadXdr
            })
        );
    }

    #[test]
    fn reply_inv_handle_not_checked() {
        // The draft defines `rdma_inv_handle` for Calls; a reply's is not refused, whatever
        // it holds: here a handle of no segment of the reply.
        let w = [seg(2, 8192)];
        let writes = [&w[..]];
        let call_lists = Lists {
            writes: &writes,
            ..Lists::default()
        };
        let call_buf = call(Proc::Msg, &call_lists, &[0; 8]);
        let Ok(Inbound::Call(c)) = decode_call(&call_buf, &LIM) else {
            panic!("not a call");
        };
        let mut buf = [0u8; 128];
        let n = encode_reply(
            &mut Encoder::new(&mut buf),
            7,
            credit_word(8),
            &c.chunks(&call_buf),
            &[100],
            None,
        )
        .unwrap();
        for inv in [0x55u32, 2] {
            buf[v2::PREFIX_LEN..LISTS_AT].copy_from_slice(&inv.to_be_bytes());
            let Ok(Reply::Rpc(d)) = decode_reply(&buf[..n], &LIM) else {
                panic!("reply with rdma_inv_handle {inv:#x} refused");
            };
            assert_eq!(d.payload_offset, n);
            assert!(fragment(&buf[..n], &LIM).is_ok());
        }
        // An RDMA2_NOMSG reply in a Reply chunk alike.
        let r = [seg(4, 4096)];
        let nomsg_call = call(
            Proc::Msg,
            &Lists {
                reply: Some(&r),
                ..Lists::default()
            },
            &[0; 8],
        );
        let Ok(Inbound::Call(c)) = decode_call(&nomsg_call, &LIM) else {
            panic!("not a call");
        };
        let n = encode_reply(
            &mut Encoder::new(&mut buf),
            7,
            credit_word(8),
            &c.chunks(&nomsg_call),
            &[],
            Some(300),
        )
        .unwrap();
        buf[v2::PREFIX_LEN..LISTS_AT].copy_from_slice(&0x99u32.to_be_bytes());
        assert!(matches!(decode_reply(&buf[..n], &LIM), Ok(Reply::Rpc(_))));
    }

    #[test]
    fn long_call_and_refresh() {
        let reads = [ReadSegment {
            position: 0,
            segment: seg(1, 4096),
        }];
        let lists = Lists {
            reads: &reads,
            ..Lists::default()
        };
        let msg = call(Proc::NoMsg, &lists, &[]);
        let Ok(Inbound::Call(c)) = decode_call(&msg, &LIM) else {
            panic!("not a call");
        };
        assert!(c.position_zero(&msg).is_some());
        // Position zero in RDMA2_MSG is BAD_XDR.
        let msg = call(Proc::Msg, &lists, &[0; 8]);
        assert_eq!(
            decode_call(&msg, &LIM),
            Err(Refusal::Answer {
                xid: 7,
                body: ErrorBody::BadXdr
            })
        );
        // NOMSG with empty lists is a credit refresh.
        let msg = call(Proc::NoMsg, &Lists::default(), &[]);
        assert_eq!(decode_call(&msg, &LIM), Ok(Inbound::CreditRefresh));
        // As encode_refresh writes it, for both ends.
        let mut buf = [0u8; 64];
        let mut e = Encoder::new(&mut buf);
        let n = encode_refresh(&mut e, credit_word(32)).unwrap();
        assert_eq!(n, LISTS_AT + 12);
        let msg = &buf[..n];
        assert_eq!(v1::peek(msg).map(|f| f.xid), Some(0));
        assert_eq!(decode_call(msg, &LIM), Ok(Inbound::CreditRefresh));
        assert_eq!(decode_reply(msg, &LIM), Ok(Reply::CreditRefresh));
    }

    #[test]
    fn refusals() {
        // Reserved flag bit: INVAL_FLAG.
        let m = words(&[9, 2, 1, 0, 0x100, 0, 0, 0, 0]);
        assert_eq!(
            decode_call(&m, &LIM),
            Err(Refusal::Answer {
                xid: 9,
                body: ErrorBody::InvalFlag
            })
        );
        // F_MORE on RDMA2_MSG: not supported, INVAL_FLAG.
        let m = words(&[9, 2, 1, 0, v2::F_MORE, 0, 0, 0, 0, 1]);
        assert_eq!(
            decode_call(&m, &LIM),
            Err(Refusal::Answer {
                xid: 9,
                body: ErrorBody::InvalFlag
            })
        );
        // Unknown header type: INVAL_HTYPE.
        let m = words(&[9, 2, 1, 77, 0]);
        assert_eq!(
            decode_call(&m, &LIM),
            Err(Refusal::Answer {
                xid: 9,
                body: ErrorBody::InvalHtype
            })
        );
        // Truncated lists: BAD_XDR.
        let m = words(&[9, 2, 1, 0, 0, 0, 1]);
        assert_eq!(
            decode_call(&m, &LIM),
            Err(Refusal::Answer {
                xid: 9,
                body: ErrorBody::BadXdr
            })
        );
        // Too many segments in a Write chunk: SEGMENTS with our limit.
        let mut w = Vec::from([9u32, 2, 1, 0, 0, 0, 0, 1, 9]);
        for _ in 0..9 {
            w.extend_from_slice(&[1, 16, 0, 0]);
        }
        w.extend_from_slice(&[0, 0]);
        assert_eq!(
            decode_call(&words(&w), &LIM),
            Err(Refusal::Answer {
                xid: 9,
                body: ErrorBody::Segments { max_segments: 8 }
            })
        );
        // Errors and short messages are dropped; CONNPROP is reported with defaults applied.
        assert_eq!(
            decode_call(&words(&[9, 2, 1, 4, 1, 10]), &LIM),
            Err(Refusal::Drop)
        );
        assert_eq!(decode_call(&[0; 15], &LIM), Err(Refusal::Drop));
        assert_eq!(
            decode_call(&words(&[9, 2, 1, 5, 0, 0]), &LIM),
            Ok(Inbound::ConnProp(ConnProps::default()))
        );
        // A continued CONNPROP is not supported.
        assert_eq!(
            decode_call(&words(&[9, 2, 1, 5, 2, 0]), &LIM),
            Err(Refusal::Answer {
                xid: 9,
                body: ErrorBody::InvalFlag
            })
        );
    }

    #[test]
    fn connprops_round_trip_and_threshold() {
        let ours = ConnProps {
            sbsiz: 4096,
            rbsiz: 8192,
            rssiz: 1 << 20,
            rcsiz: 32,
            brs: ReverseSupport::Inline,
        };
        let mut buf = [0u8; ConnProps::ENCODED_LEN];
        let n = ours.encode(&mut buf, credit_word(5)).unwrap();
        assert_eq!(n, ConnProps::ENCODED_LEN);
        // xid 0, version 2, the credit word, RDMA2_CONNPROP, no flag, five properties.
        assert_eq!(
            &buf[..24],
            &words(&[0, 2, credit_word(5), v2::CONNPROP, 0, 5])[..]
        );
        assert_eq!(decode_call(&buf, &LIM), Ok(Inbound::ConnProp(ours)));
        assert_eq!(decode_reply(&buf, &LIM), Ok(Reply::ConnProp(ours)));
        // The threshold is the smaller of ours and the peer's Receive buffers.
        assert_eq!(ours.send_threshold(4096), Ok(4096));
        assert_eq!(ours.send_threshold(16384), Ok(8192));
        let tiny = ConnProps { rbsiz: 512, ..ours };
        assert_eq!(tiny.send_threshold(4096), Err(Unusable::ReceiveBuffer(512)));
        assert_eq!(
            ConnProps {
                rbsiz: MIN_RBSIZ,
                ..ours
            }
            .send_threshold(4096),
            Ok(MIN_RBSIZ)
        );
        // Segments: never longer than the peer's size, never more than its count per chunk
        // nor per call; limits above ours change nothing, and unusable ones are refused.
        assert_eq!(ours.segment_caps(257, 4, 4096), Ok((256, 4, ours.rcsiz)));
        assert_eq!(ours.segment_caps(30, 11, 4096), Ok((30, 11, ours.rcsiz)));
        // Table 1's default count, 16: a 1 MiB payload at depth 30 (9 segments) still fits.
        assert_eq!(
            ConnProps { rcsiz: 16, ..ours }.segment_caps(30, 11, 4096),
            Ok((30, 11, 16))
        );
        // Caps that still carry the largest payload (257 pages) in one chunk, with a head and
        // a tail segment (a Reply chunk's): honoured.
        let smaller = ConnProps {
            rssiz: 29 * 4096 + 100,
            rcsiz: 12,
            ..ours
        };
        assert_eq!(smaller.segment_caps(32, 11, 4096), Ok((29, 11, 12)));
        assert_eq!(
            ConnProps {
                rssiz: 1 << 20,
                rcsiz: 11,
                ..ours
            }
            .segment_caps(32, 11, 4096),
            Ok((32, 11, 11))
        );
        // Caps under which it does not fit: unusable, whether by size, by count or both (one
        // page and two segments, or 16 KiB and 8 of them).
        let small = ConnProps {
            rssiz: 8192 + 100,
            rcsiz: 5,
            ..ours
        };
        assert_eq!(
            small.segment_caps(30, 11, 4096),
            Err(Unusable::Payload { depth: 2, segs: 5 })
        );
        for (rssiz, rcsiz, depth, segs) in [
            (4096, 2, 1, 2),
            (16384, 8, 4, 8),
            (23 * 4096, 16, 23, 11),
            (1 << 20, 8, 32, 8),
            // The payload fits, but not with a Reply chunk's head and tail: 24 pages x 11
            // (11 + 2 segments needed), 32 pages x 9 or 10 (9 + 2).
            (24 * 4096, 11, 24, 11),
            (1 << 20, 9, 32, 9),
            (1 << 20, 10, 32, 10),
        ] {
            assert_eq!(
                ConnProps {
                    rssiz,
                    rcsiz,
                    ..ours
                }
                .segment_caps(32, 11, 4096),
                Err(Unusable::Payload { depth, segs })
            );
        }
        assert_eq!(
            ConnProps {
                rssiz: 4095,
                ..ours
            }
            .segment_caps(30, 11, 4096),
            Err(Unusable::SegmentSize(4095))
        );
        assert_eq!(
            ConnProps { rcsiz: 1, ..ours }.segment_caps(30, 11, 4096),
            Err(Unusable::SegmentCount(1))
        );
        assert_eq!(
            ours.segment_caps(30, 11, 0),
            Err(Unusable::SegmentSize(1 << 20))
        );
        // Missing properties take Table 1's defaults; unknown ones (id 99) are skipped; a
        // property whose value does not fit its typedef is RDMA2_ERR_BAD_XDR.
        let partial = words(&[
            0,
            2,
            1,
            v2::CONNPROP,
            0,
            2,
            99,
            4,
            7,
            v2::PROPID_RBSIZ,
            4,
            2048,
        ]);
        assert_eq!(
            decode_call(&partial, &LIM),
            Ok(Inbound::ConnProp(ConnProps {
                rbsiz: 2048,
                ..ConnProps::default()
            }))
        );
        let bad = words(&[3, 2, 1, v2::CONNPROP, 0, 1, v2::PROPID_BRS, 4, 7]);
        assert_eq!(
            decode_call(&bad, &LIM),
            Err(Refusal::Answer {
                xid: 3,
                body: ErrorBody::BadXdr
            })
        );
        assert!(matches!(decode_reply(&bad, &LIM), Err(ReplyError::V2(_))));
        // A continued one is not reassembled by a requester either.
        let more = words(&[0, 2, 1, v2::CONNPROP, v2::F_MORE, 0]);
        assert_eq!(decode_reply(&more, &LIM), Err(ReplyError::Continued));
    }

    #[test]
    fn reply_round_trip() {
        let w = [seg(2, 8192)];
        let writes = [&w[..]];
        let r = [seg(3, 1024)];
        let lists = Lists {
            writes: &writes,
            reply: Some(&r),
            ..Lists::default()
        };
        let msg = call(Proc::Msg, &lists, &[0; 8]);
        let Ok(Inbound::Call(c)) = decode_call(&msg, &LIM) else {
            panic!("not a call");
        };
        let chunks = c.chunks(&msg);
        // Inline reply with 100 bytes in the Write chunk.
        let mut out = [0u8; 512];
        let n = encode_reply(
            &mut Encoder::new(&mut out),
            7,
            credit_word(32),
            &chunks,
            &[100],
            None,
        )
        .unwrap();
        assert_eq!(n, reply_header_len(&chunks, false));
        let Ok(Reply::Rpc(d)) = decode_reply(&out[..n], &v1::Limits::UNLIMITED) else {
            panic!("bad reply");
        };
        assert_eq!(d.payload_offset, n);
        assert_eq!(d.header.vers, 2);
        assert_eq!(credit_grant(d.header.credits), 32);
        let v1::Body::Msg(ch) = d.header.body else {
            panic!("not MSG");
        };
        assert_eq!(ch.writes.total_length(), 100);
        // F_RESPONSE is set.
        assert_eq!(out[19], 1);
        // Long reply through the Reply chunk.
        let n = encode_reply(
            &mut Encoder::new(&mut out),
            7,
            credit_word(32),
            &chunks,
            &[],
            Some(900),
        )
        .unwrap();
        assert_eq!(n, reply_header_len(&chunks, true));
        let Ok(Reply::Rpc(d)) = decode_reply(&out[..n], &v1::Limits::UNLIMITED) else {
            panic!("bad reply");
        };
        assert!(matches!(d.header.body, v1::Body::NoMsg(_)));
        // Errors.
        let n = encode_error(
            &mut out,
            7,
            credit_word(1),
            ErrorBody::ReplyResource {
                length_needed: 9000,
            },
        )
        .unwrap();
        assert!(n <= ERROR_MAX);
        assert_eq!(
            decode_reply(&out[..n], &v1::Limits::UNLIMITED),
            Ok(Reply::Error(ErrorBody::ReplyResource {
                length_needed: 9000
            }))
        );
        // A continued reply is refused.
        let m = words(&[7, 2, 1, 0, v2::F_MORE | v2::F_RESPONSE, 0, 0, 0, 0]);
        assert_eq!(
            decode_reply(&m, &v1::Limits::UNLIMITED),
            Err(ReplyError::Continued)
        );
    }

    #[test]
    fn retries_after_errors() {
        let sent = |call, reply| Sent {
            call,
            reply,
            retried: false,
            rcv_buflen: 8192,
        };
        let chunk = CallChunk::ReadChunk { position: 100 };
        let pz = Force {
            position_zero: true,
            reply_chunk: false,
        };
        let rc = Force {
            position_zero: false,
            reply_chunk: true,
        };
        let none = ErrorBody::ReadChunks { max_chunks: 0 };
        // A Read chunk refused outright: the whole call in a Position-Zero chunk.
        assert_eq!(retry(&none, &sent(chunk, ReplyChunk::Inline)), Some(pz));
        assert_eq!(
            retry(&none, &sent(chunk, ReplyChunk::ReplyChunk)),
            Some(Force {
                position_zero: true,
                reply_chunk: true
            })
        );
        // Already Position-Zero, inline, or some Read chunks accepted: fail.
        assert_eq!(
            retry(&none, &sent(CallChunk::PositionZero, ReplyChunk::Inline)),
            None
        );
        let inline = CallChunk::Inline { pullup: true };
        assert_eq!(retry(&none, &sent(inline, ReplyChunk::Inline)), None);
        let one = ErrorBody::ReadChunks { max_chunks: 1 };
        assert_eq!(retry(&one, &sent(chunk, ReplyChunk::Inline)), None);
        // Reply resources: a Reply chunk instead of inline or a Write chunk, within the buffer.
        let need = |n| ErrorBody::ReplyResource { length_needed: n };
        assert_eq!(
            retry(&need(5000), &sent(inline, ReplyChunk::Inline)),
            Some(rc)
        );
        assert_eq!(
            retry(&need(8192), &sent(inline, ReplyChunk::WriteChunk)),
            Some(rc)
        );
        assert_eq!(retry(&need(8193), &sent(inline, ReplyChunk::Inline)), None);
        assert_eq!(
            retry(&need(100), &sent(inline, ReplyChunk::ReplyChunk)),
            None
        );
        // A Write chunk too short, or none accepted: a Reply chunk.
        let short = ErrorBody::WriteResource {
            chunk_index: 1,
            length_needed: 9000,
        };
        assert_eq!(
            retry(&short, &sent(inline, ReplyChunk::WriteChunk)),
            Some(rc)
        );
        assert_eq!(retry(&short, &sent(inline, ReplyChunk::Inline)), None);
        let nowrite = ErrorBody::WriteChunks { max_chunks: 0 };
        assert_eq!(
            retry(&nowrite, &sent(inline, ReplyChunk::WriteChunk)),
            Some(rc)
        );
        // Which of them say the responder takes no Write chunks at all: WRITE_CHUNKS 0 at
        // once; REPLY_RESOURCE for calls offering a Write chunk only twice in a row, since a
        // responder taking them sends it too when the rest of the reply does not fit inline.
        let write = sent(inline, ReplyChunk::WriteChunk);
        let mut w = WriteChunkRefusals::default();
        assert!(w.on_error(&nowrite, &write));
        let mut w = WriteChunkRefusals::default();
        assert!(!w.on_error(&need(8192), &write));
        assert!(w.on_error(&need(8192), &write));
        assert_eq!(REFUSALS_IN_A_ROW, 2);
        // A reply that used (or accepted) a Write chunk in between ends the streak; one to a
        // call without a Write chunk (the retry with a Reply chunk) does not.
        let mut w = WriteChunkRefusals::default();
        assert!(!w.on_error(&need(8192), &write));
        w.on_reply(&sent(inline, ReplyChunk::ReplyChunk));
        assert!(w.on_error(&need(8192), &write));
        let mut w = WriteChunkRefusals::default();
        assert!(!w.on_error(&need(8192), &write));
        w.on_reply(&write);
        assert!(!w.on_error(&need(8192), &write));
        // Errors to calls without a Write chunk say nothing, nor end the streak.
        let mut w = WriteChunkRefusals::default();
        assert!(!w.on_error(&need(8192), &write));
        assert!(!w.on_error(&need(5000), &sent(inline, ReplyChunk::Inline)));
        assert!(!w.on_error(&nowrite, &sent(inline, ReplyChunk::Inline)));
        assert!(w.on_error(&need(8192), &write));
        // A Write chunk too short, or a nonzero number of them: the responder takes them.
        let mut w = WriteChunkRefusals::default();
        assert!(!w.on_error(&need(8192), &write));
        assert!(!w.on_error(&short, &write));
        assert!(!w.on_error(&need(8192), &write));
        assert!(!w.on_error(&ErrorBody::WriteChunks { max_chunks: 1 }, &write));
        assert!(!w.on_error(&need(8192), &write));
        // One retry per call; the other errors fail the RPC.
        let again = Sent {
            retried: true,
            ..sent(chunk, ReplyChunk::Inline)
        };
        assert_eq!(retry(&none, &again), None);
        for e in [
            ErrorBody::BadXdr,
            ErrorBody::InvalFlag,
            ErrorBody::InvalHtype,
            ErrorBody::System,
            ErrorBody::Segments { max_segments: 1 },
            ErrorBody::Other(99),
        ] {
            assert_eq!(retry(&e, &sent(chunk, ReplyChunk::WriteChunk)), None);
        }
    }

    #[test]
    fn fragments_of_continued_replies() {
        use continuation::{
            Limits as CLimits,
            Reassembly, //
        };
        // A continued reply: the first message with F_MORE and empty lists, then the final
        // one with the payload's rest.
        let mut first = words(&[7, 2, 1, 0, v2::F_MORE | v2::F_RESPONSE, 0, 0, 0, 0]);
        first.extend_from_slice(&[1u8; 40]);
        let mut last = words(&[7, 2, 1, 0, v2::F_RESPONSE, 0, 0, 0, 0]);
        last.extend_from_slice(&[2u8; 24]);
        // What a responder encodes for such a message.
        let mut b = [0u8; MORE_HEADER_LEN];
        assert_eq!(
            encode_more(&mut Encoder::new(&mut b), 7, 1, true),
            Ok(MORE_HEADER_LEN)
        );
        assert_eq!(&b[..], &first[..MORE_HEADER_LEN]);
        let mut short = [0u8; MORE_HEADER_LEN - 1];
        assert!(encode_more(&mut Encoder::new(&mut short), 7, 1, true).is_err());
        let (f1, o1) = fragment(&first, &LIM).unwrap();
        assert_eq!(
            (f1.xid, f1.htype, f1.len, o1),
            (7, v2::MSG, 40, LISTS_AT + 12)
        );
        assert_eq!(f1.flags, v2::F_MORE | v2::F_RESPONSE);
        let (f2, o2) = fragment(&last, &LIM).unwrap();
        assert_eq!((f2.len, o2, f2.flags), (24, LISTS_AT + 12, v2::F_RESPONSE));
        let mut r = Reassembly::new(CLimits {
            max_fragments: 4,
            max_len: 100,
        });
        assert!(!r.feed(f1).unwrap().complete);
        let p = r.feed(f2).unwrap();
        assert!(p.complete);
        assert_eq!((p.offset, p.end()), (40, 64));
        // F_MORE with chunks, on RDMA2_NOMSG, or on a continued RDMA2_CONNPROP: unsupported.
        let chunked = words(&[7, 2, 1, 0, v2::F_MORE | v2::F_RESPONSE, 0, 0, 0, 1, 0, 0]);
        assert!(fragment(&chunked, &LIM).is_err());
        let nomsg = words(&[7, 2, 1, 1, v2::F_MORE | v2::F_RESPONSE, 0, 0, 0, 0]);
        assert!(fragment(&nomsg, &LIM).is_err());
        let props = words(&[0, 2, 1, v2::CONNPROP, v2::F_MORE, 0]);
        assert_eq!(fragment(&props, &LIM), Err(ReplyError::Continued));
        assert!(fragment(&[0u8; 8], &LIM).is_err());
    }

    #[test]
    fn fragments_of_continued_calls() {
        // A NULL call in two messages: 8 bytes with F_MORE, the rest in the final one.
        let null = words(&[9, 0, 2, 100003, 3, 0, 0, 0, 0, 0]);
        let mut first = words(&[9, 2, 1, 0, v2::F_MORE, 0, 0, 0, 0]);
        first.extend_from_slice(&null[..8]);
        let mut last = words(&[9, 2, 1, 0, 0, 0, 0, 0, 0]);
        last.extend_from_slice(&null[8..]);
        let (f1, o1) = call_fragment(&first, &LIM).unwrap();
        assert_eq!(
            (f1.xid, f1.flags, f1.len, o1),
            (9, v2::F_MORE, 8, LISTS_AT + 12)
        );
        let (f2, o2) = call_fragment(&last, &LIM).unwrap();
        assert_eq!((f2.flags, f2.len, o2), (0, 32, LISTS_AT + 12));
        // F_MORE with a chunk list, or on RDMA2_NOMSG: refused with the draft's code.
        let chunked = words(&[9, 2, 1, 0, v2::F_MORE, 0, 0, 1, 0, 0]);
        assert!(matches!(
            call_fragment(&chunked, &LIM),
            Err(Refusal::Answer {
                xid: 9,
                body: ErrorBody::InvalFlag | ErrorBody::BadXdr
            })
        ));
        let nomsg = words(&[9, 2, 1, 1, v2::F_MORE, 0, 0, 0, 0]);
        assert_eq!(
            call_fragment(&nomsg, &LIM),
            Err(Refusal::Answer {
                xid: 9,
                body: ErrorBody::InvalFlag
            })
        );
        // A credit refresh is a fragment of nothing (it breaks a sequence in progress).
        let refresh = words(&[0, 2, 1, 1, 0, 0, 0, 0, 0]);
        let (f, o) = call_fragment(&refresh, &LIM).unwrap();
        assert_eq!((f.xid, f.len, o), (0, 0, refresh.len()));
        assert_eq!(call_fragment(&[0u8; 4], &LIM), Err(Refusal::Drop));
    }

    #[test]
    fn errors_in_continued_calls_are_dropped() {
        // An RDMA2_ERROR from the client, in the middle of a continued Call of XID 9 or not:
        // never answered, well-formed or not, whatever its XID (the responder then answers the
        // broken sequence's XID itself, which it skips for a refusal answering that XID).
        for xid in [9, 10] {
            for (msg, what) in [
                (
                    words(&[xid, 2, 1, v2::ERROR, v2::F_RESPONSE, 2]),
                    "well-formed",
                ),
                (words(&[xid, 2, 1, v2::ERROR, 0, 10]), "without F_RESPONSE"),
                (words(&[xid, 2, 1, v2::ERROR, v2::F_MORE, 2]), "with F_MORE"),
                (words(&[xid, 2, 1, v2::ERROR, 0x80, 2]), "a reserved flag"),
                (words(&[xid, 2, 1, v2::ERROR, 0, 1, 1]), "a truncated body"),
                (words(&[xid, 2, 1, v2::ERROR, 0]), "no body"),
            ] {
                assert_eq!(
                    call_fragment(&msg, &LIM),
                    Err(Refusal::Drop),
                    "{what}, xid {xid}"
                );
                assert_eq!(decode_call(&msg, &LIM), Err(Refusal::Drop), "{what}");
            }
        }
    }

    #[test]
    fn connprops_display() {
        let p = ConnProps {
            sbsiz: 4096,
            rbsiz: 8192,
            rssiz: 1 << 20,
            rcsiz: 16,
            brs: ReverseSupport::Inline,
        };
        assert_eq!(
            std::format!("{p}"),
            "send 4096, receive 8192, segments of 1048576 x 16, reverse requests Inline"
        );
    }

    #[test]
    fn credit_words() {
        assert_eq!(credit_word(128), 0x0080_0080);
        assert_eq!(credit_word(1 << 20), 0xffff_ffff);
        assert_eq!(credit_grant(0x0080_0040), 0x40);
    }
}
