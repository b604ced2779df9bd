// SPDX-License-Identifier: GPL-2.0

//! Marshaling decisions: how a call and its reply travel.
//!
//! Pure functions mirroring `rpcrdma_marshal_req()` and its helpers in `rpc_rdma.c`, and the
//! memory registration arithmetic of `frwr_map()` / `frwr_query_device()` in `frwr_ops.c`:
//!
//! - the call goes inline (copied into one buffer or gathered from the `xdr_buf` pieces), with
//!   its DDP payload in a Read chunk at the payload's position, or whole in a Position-Zero Read
//!   chunk (`RDMA_NOMSG`);
//! - the reply comes back inline, with its DDP payload in a Write chunk, or whole in a Reply
//!   chunk;
//! - how many RDMA segments (memory registrations) each chunk needs for a given `xdr_buf` page
//!   layout, the resulting transport header size, and the largest header sizes
//!   (`rpcrdma_max_call_header_size()`, `rpcrdma_max_reply_header_size()`) that the inline
//!   payload thresholds are derived from (`rpcrdma_set_max_header_sizes()`).
//!
//! Everything is in bytes and counts; no kernel types.

use super::{
    continuation,
    v1::{
        Proc,
        FIXED_SIZE,
        HDRLEN_MIN,
        READ_ENTRY_SIZE,
        SEGMENT_SIZE, //
    },
};

/// Size of one XDR word, as `u32`.
const WORD: u32 = 4;

// The v1 header sizes as `u32`: small constants, so the conversions are lossless.
/// [`FIXED_SIZE`] as `u32`.
const FIXED: u32 = FIXED_SIZE as u32;
/// [`HDRLEN_MIN`] as `u32`.
const HDR_MIN: u32 = HDRLEN_MIN as u32;
/// [`READ_ENTRY_SIZE`] as `u32`.
const READ_ENTRY: u32 = READ_ENTRY_SIZE as u32;
/// [`SEGMENT_SIZE`] as `u32`.
const SEGMENT: u32 = SEGMENT_SIZE as u32;

/// `RPCRDMA_MAX_HDR_SEGS`: most segments a transport header may describe per chunk.
pub const MAX_HDR_SEGS: u32 = 16;

/// `RPCRDMA_MIN_SEND_SGES`: Send SGEs always reserved (transport header, head, tail).
pub const MIN_SEND_SGES: u32 = 3;

/// `RPCRDMA_MAX_IOV_SEGS`: extra segments a Reply chunk may need (head, page boundary, tail).
pub const MAX_IOV_SEGS: u32 = 3;

/// Largest payload the client moves in one chunk, `1 MiB` (the basis of
/// `RPCRDMA_MAX_DATA_SEGS`).
pub const MAX_DATA_SIZE: u32 = 1024 * 1024;

/// Why a call cannot be marshaled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// A chunk would contain no memory at all: `frwr_map()` is then called with zero entries
    /// and fails (`-EIO`). Happens for a DDP-eligible call with an empty page list.
    EmptyChunk,
    /// A chunk needs more segments than the connection's `max_rdma_segs`, or the call's chunks
    /// together more than its `max_call_segs` (`-EIO`).
    TooManySegments {
        /// Segments the chunk needs (at least; counting stops past the limit).
        needed: u32,
        /// The limit.
        max: u32,
    },
    /// The transport header does not fit the header buffer (`-EMSGSIZE`).
    HeaderTooLong {
        /// Header length needed.
        needed: u32,
        /// Header buffer size.
        max: u32,
    },
    /// The connection parameters are unusable (zero page size or registration depth).
    BadConfig,
}

impl Error {
    /// The negative errno `rpcrdma_marshal_req()` returns for this error.
    pub fn errno(&self) -> i32 {
        /// `EIO`.
        const EIO: i32 = 5;
        /// `EMSGSIZE`.
        const EMSGSIZE: i32 = 90;
        /// `EINVAL`.
        const EINVAL: i32 = 22;
        match self {
            Error::EmptyChunk | Error::TooManySegments { .. } => -EIO,
            Error::HeaderTooLong { .. } => -EMSGSIZE,
            Error::BadConfig => -EINVAL,
        }
    }
}

/// Result of a marshaling decision.
pub type Result<T> = core::result::Result<T, Error>;

/// Layout of an `xdr_buf`: head kvec, page list, tail kvec.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct XdrBuf {
    /// `head[0].iov_len`.
    pub head_len: u32,
    /// `page_base`: offset of the page data from the start of the first page (only its offset
    /// within a page matters).
    pub page_base: u32,
    /// `page_len`.
    pub page_len: u32,
    /// `tail[0].iov_len`.
    pub tail_len: u32,
    /// Offset of `tail[0].iov_base` within its page.
    pub tail_page_offset: u32,
}

impl XdrBuf {
    /// Total length, head + pages + tail (`xdr->len`).
    pub fn len(&self) -> u64 {
        u64::from(self.head_len) + u64::from(self.page_len) + u64::from(self.tail_len)
    }

    /// Whether the buffer holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of page-list pieces (one per page touched), as the Send SGE and MR loops walk
    /// them.
    pub fn page_pieces(&self, page_size: u32) -> u64 {
        if self.page_len == 0 || page_size == 0 {
            return 0;
        }
        let first = u64::from(self.page_base % page_size);
        (first + u64::from(self.page_len)).div_ceil(u64::from(page_size))
    }

    /// Whether the page list ends exactly at a page boundary.
    fn pages_end_aligned(&self, page_size: u32) -> bool {
        let first = u64::from(self.page_base % page_size);
        (first + u64::from(self.page_len)) % u64::from(page_size) == 0
    }
}

/// Memory registration capabilities of the device (FRWR).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Registration {
    /// Most pages one MR covers (`re_max_fr_depth`).
    pub max_fr_depth: u32,
    /// Whether MRs may have gaps between elements (`IB_MR_TYPE_SG_GAPS`); otherwise head, page
    /// list and tail need separate MRs unless page aligned.
    pub sg_gaps: bool,
    /// `PAGE_SIZE`.
    pub page_size: u32,
}

/// Which parts of an `xdr_buf` a chunk covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Span {
    /// Head, pages and tail: a Position-Zero Read chunk or a Reply chunk.
    Whole,
    /// The page list only: a Read chunk (position = head length) or a Write chunk.
    Pages,
}

/// Number of MRs (RDMA segments) `frwr_map()` produces to register `span` of `buf`.
///
/// Follows the cursor of `rpcrdma_xdr_cursor_init()` and `frwr_map()`: without gap support the
/// head always gets its own MR; pages fill MRs of up to `max_fr_depth` entries; the tail joins
/// the last page MR only if both meet at page boundaries. Counting stops once `limit` is
/// exceeded ([`Error::TooManySegments`]), so the loop runs at most `limit + 1` times whatever
/// the buffer size. A span with no bytes needs one empty MR, which fails
/// ([`Error::EmptyChunk`]), as in C.
pub fn count_segments(buf: &XdrBuf, span: Span, reg: &Registration, limit: u32) -> Result<u32> {
    if reg.max_fr_depth == 0 || reg.page_size == 0 {
        return Err(Error::BadConfig);
    }
    let depth = u64::from(reg.max_fr_depth);
    // `pos != 0` marks the head done; for `Span::Pages` the position is the head length.
    let mut head_done = match span {
        Span::Whole => false,
        Span::Pages => buf.head_len != 0,
    };
    let mut pieces = buf.page_pieces(reg.page_size);
    let mut tail_done = span == Span::Pages || buf.tail_len == 0;
    let tail_joins = reg.sg_gaps
        || (buf.pages_end_aligned(reg.page_size) && buf.tail_page_offset % reg.page_size == 0);

    let mut mrs = 0u32;
    loop {
        let mut nents = 0u64;
        let mut last_is_page = false;
        let mut finished = false;
        if !head_done {
            head_done = true;
            nents = 1;
            finished = !reg.sg_gaps;
        }
        if !finished && pieces > 0 {
            let k = depth.saturating_sub(nents).min(pieces);
            nents += k;
            pieces -= k;
            last_is_page = k > 0;
        }
        if !finished && !tail_done && nents < depth && (nents == 0 || !last_is_page || tail_joins) {
            // In the C loop the tail's page-boundary check only applies after a page entry.
            tail_done = true;
            nents += 1;
        }
        if nents == 0 {
            return Err(Error::EmptyChunk);
        }
        mrs += 1;
        if mrs > limit {
            return Err(Error::TooManySegments {
                needed: mrs,
                max: limit,
            });
        }
        if head_done && pieces == 0 && tail_done {
            return Ok(mrs);
        }
    }
}

/// `RPCRDMA_MAX_DATA_SEGS`: pages in the largest payload, plus one for misalignment.
pub fn max_data_segs(page_size: u32) -> u32 {
    if page_size == 0 {
        return 0;
    }
    MAX_DATA_SIZE / page_size + 1
}

/// `re_max_fr_depth` from device attributes (`frwr_query_device()`): `max_sge_rd` if it is
/// above [`MAX_HDR_SEGS`] (some devices work best with MRs no larger than that), otherwise
/// `max_fast_reg_page_list_len`; at most [`max_data_segs`].
pub fn max_fr_depth(max_sge_rd: u32, max_fast_reg_page_list_len: u32, page_size: u32) -> u32 {
    let depth = if max_sge_rd > MAX_HDR_SEGS {
        max_sge_rd
    } else {
        max_fast_reg_page_list_len
    };
    depth.min(max_data_segs(page_size))
}

/// `re_max_rdma_segs` (`frwr_query_device()`): MRs needed for the largest payload at
/// `max_fr_depth` pages each, plus two for a Reply chunk's head and tail, at most
/// [`MAX_HDR_SEGS`].
pub fn max_rdma_segs(max_fr_depth: u32, page_size: u32) -> u32 {
    if max_fr_depth == 0 {
        return MAX_HDR_SEGS;
    }
    max_data_segs(page_size)
        .div_ceil(max_fr_depth)
        .saturating_add(2)
        .min(MAX_HDR_SEGS)
}

/// Largest call transport header for `maxsegs` segments (`rpcrdma_max_call_header_size()`):
/// a Read list of `maxsegs` entries and a one-segment chunk.
pub fn max_call_header_size(maxsegs: u32) -> u32 {
    HDR_MIN
        .saturating_add(maxsegs.saturating_mul(READ_ENTRY))
        .saturating_add(WORD + SEGMENT + WORD)
}

/// Largest reply transport header for `maxsegs` segments (`rpcrdma_max_reply_header_size()`):
/// a Write chunk of `maxsegs` segments.
pub fn max_reply_header_size(maxsegs: u32) -> u32 {
    HDR_MIN
        .saturating_add(WORD)
        .saturating_add(maxsegs.saturating_mul(SEGMENT))
        .saturating_add(WORD)
}

/// Size of a request's transport header buffer (`rpcrdma_req_setup()`): room for the fixed
/// fields, three list words and `maxsegs` Read list entries, rounded up to a power of two.
pub fn header_buffer_size(maxsegs: u32) -> u32 {
    let words = maxsegs
        .saturating_mul(READ_ENTRY / WORD)
        .saturating_add(FIXED / WORD + 3);
    words
        .saturating_mul(WORD)
        .checked_next_power_of_two()
        .unwrap_or(u32::MAX)
}

/// Per-connection parameters of the requester.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Connection {
    /// Negotiated inline threshold for calls we send (`re_inline_send`).
    pub inline_send: u32,
    /// Negotiated inline threshold for replies we receive (`re_inline_recv`).
    pub inline_recv: u32,
    /// Most segments per chunk (`re_max_rdma_segs`).
    pub max_rdma_segs: u32,
    /// Most segments one call's header may carry, all its chunks together: the responder's
    /// Maximum RDMA Segment Count once it advertised one (version 2, draft Section 5.2.4);
    /// `u32::MAX` without (version 1 bounds each chunk only, by `max_rdma_segs`).
    pub max_call_segs: u32,
    /// Send SGEs the QP allows (`re_attr.cap.max_send_sge`).
    pub max_send_sge: u32,
    /// Size of a request's send buffer (`rdmab_length(req->rl_sendbuf)`): calls shorter than
    /// this are copied into it, longer inline calls are sent from their pages.
    pub send_buf_len: u32,
    /// Memory registration capabilities.
    pub reg: Registration,
}

impl Connection {
    /// Largest RPC call that may go inline (`re_max_inline_send`): the send threshold minus
    /// the largest call header.
    pub fn max_inline_send(&self) -> u32 {
        self.inline_send
            .saturating_sub(max_call_header_size(self.max_rdma_segs))
    }

    /// Largest RPC reply that may come back inline (`re_max_inline_recv`).
    pub fn max_inline_recv(&self) -> u32 {
        self.inline_recv
            .saturating_sub(max_reply_header_size(self.max_rdma_segs))
    }
}

/// One RPC call as the ULP built it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Call {
    /// The call message (`rq_snd_buf`).
    pub snd: XdrBuf,
    /// The reply buffer (`rq_rcv_buf`) layout.
    pub rcv: XdrBuf,
    /// Largest reply expected (`rq_rcv_buf.buflen`, from `rq_rcvsize`).
    pub rcv_buflen: u32,
    /// Direct data placement is allowed: false when the auth flavour checksums or encrypts
    /// the payload (`RPCAUTH_AUTH_DATATOUCH`).
    pub ddp_allowed: bool,
    /// The call's page list is a DDP-eligible payload, as for a WRITE (`XDRBUF_WRITE`).
    pub write_payload: bool,
    /// The reply's page list will receive a DDP-eligible payload, as for a READ
    /// (`XDRBUF_READ`).
    pub read_payload: bool,
}

/// How the call travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallChunk {
    /// Inline in the Send; `pullup` if copied into the send buffer (`rpcrdma_noch_pullup`)
    /// rather than gathered from its pages (`rpcrdma_noch_mapped`).
    Inline {
        /// Copy into the send buffer.
        pullup: bool,
    },
    /// Head (and tail) inline; the page list in a Read chunk at `position`, the head length
    /// (`rpcrdma_readch`).
    ReadChunk {
        /// XDR position of the Read chunk.
        position: u32,
    },
    /// The whole call in a Position-Zero Read chunk, `RDMA_NOMSG` (`rpcrdma_areadch`).
    PositionZero,
    /// Version 2: no chunk; the call goes inline in `messages` messages chained with `F_MORE`
    /// (draft Section 6.3.2), each taking one of the responder's credits. One message: a call
    /// that fits inline with its actual header (empty chunk lists) though not with the
    /// largest one [`args_inline`] allows for.
    Continued {
        /// Messages in the sequence ([`continued_messages`] of the call's length).
        messages: u32,
    },
}

/// How the reply travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyChunk {
    /// Inline in the responder's Send (`rpcrdma_noch`).
    Inline,
    /// Header inline, payload into the reply buffer's page list by RDMA Write
    /// (`rpcrdma_writech`).
    WriteChunk,
    /// The whole reply by RDMA Write into a Reply chunk (`rpcrdma_replych`).
    ReplyChunk,
    /// Version 2: no chunk; the reply comes inline in up to `messages` messages chained with
    /// `F_MORE` (draft Section 6.3.2), for which the requester keeps Receives.
    Continued {
        /// The most messages the reply can take ([`continued_messages`]).
        messages: u32,
    },
}

/// The marshaling decision for one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// `rdma_proc` of the call: [`Proc::NoMsg`] for [`CallChunk::PositionZero`], else
    /// [`Proc::Msg`].
    pub proc: Proc,
    /// How the call travels.
    pub call: CallChunk,
    /// How the reply travels.
    pub reply: ReplyChunk,
    /// Segments in the Read list.
    pub read_segments: u32,
    /// Segments in the Write chunk, including the XDR pad segment (`re_write_pad_mr`) when the
    /// page list length is not a multiple of four.
    pub write_segments: u32,
    /// Segments in the Reply chunk.
    pub reply_segments: u32,
    /// Length of the transport header.
    pub header_len: u32,
    /// RPC message bytes sent inline after the header.
    pub inline_len: u32,
    /// Send SGEs used, the transport header's included.
    pub send_sges: u64,
}

/// Whether the call can be sent inline (`rpcrdma_args_inline()`): it fits the inline threshold
/// left after the largest call header, and its pages fit the Send SGEs beside the header, head
/// and tail.
pub fn args_inline(call: &Call, conn: &Connection) -> bool {
    if call.snd.len() > u64::from(conn.max_inline_send()) {
        return false;
    }
    let pieces = call.snd.page_pieces(conn.reg.page_size);
    u64::from(MIN_SEND_SGES) + pieces <= u64::from(conn.max_send_sge)
}

/// Whether the largest possible reply fits inline (`rpcrdma_results_inline()`).
pub fn results_inline(call: &Call, conn: &Connection) -> bool {
    call.rcv_buflen <= conn.max_inline_recv()
}

/// Whether the reply's non-payload parts fit inline (`rpcrdma_nonpayload_inline()`).
pub fn nonpayload_inline(call: &Call, conn: &Connection) -> bool {
    u64::from(call.rcv.head_len) + u64::from(call.rcv.tail_len) < u64::from(conn.max_inline_recv())
}

/// Marshaling imposed on a call sent again after a version 2 responder's `RDMA2_ERROR`
/// (draft Section 6.4.3; [`super::v2msg::retry`] decides).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Force {
    /// The whole call in a Position-Zero Read chunk (after `RDMA2_ERR_READ_CHUNKS` with no
    /// Read chunk accepted).
    pub position_zero: bool,
    /// The reply in a Reply chunk, with no Write chunk (after `RDMA2_ERR_REPLY_RESOURCE` or
    /// `RDMA2_ERR_WRITE_RESOURCE`).
    pub reply_chunk: bool,
}

/// Decides how `call` and its reply travel, and sizes the chunks and header
/// (`rpcrdma_marshal_req()`).
///
/// Reply: inline if the largest reply fits; else a Write chunk for a DDP-eligible READ-like
/// reply whose non-payload parts fit inline; else a Reply chunk. Call: inline if it fits; else a
/// Read chunk for a DDP-eligible WRITE-like call; else a Position-Zero Read chunk. DDP is never
/// used when `ddp_allowed` is false.
pub fn plan(call: &Call, conn: &Connection) -> Result<Plan> {
    plan_forced(call, conn, Force::default())
}

/// [`plan`], with the choices `force` imposes on the call or the reply.
pub fn plan_forced(call: &Call, conn: &Connection, force: Force) -> Result<Plan> {
    plan_with(call, conn, force, Continuation::NONE)
}

/// How many messages continued calls and replies may take (version 2, draft Section 6.3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Continuation {
    /// The most messages a call may take: the responder's credits not in use. 1: none.
    pub call: u32,
    /// The most messages a reply may take: the Receives the requester keeps for it. 1: none.
    pub reply: u32,
}

impl Continuation {
    /// No continuation (version 1): every call and reply in one message or in chunks.
    pub const NONE: Self = Self { call: 1, reply: 1 };
}

/// The most messages a reply of up to `rcv_buflen` bytes takes when the responder continues
/// it (draft Section 6.3.2) in messages of at most `inline_recv` bytes each, with headers as
/// long as a version 1 header with empty chunk lists (the thresholds a version 2 plan gets are
/// already cut by the longer version 2 header, as [`plan`]'s caller does). `None` if a
/// message can carry nothing.
pub fn continued_messages(rcv_buflen: u32, inline_recv: u32) -> Option<u32> {
    continuation::split(rcv_buflen, inline_recv, HDR_MIN, HDR_MIN).map(|s| s.messages)
}

/// [`plan_forced`] for a version 2 connection where calls and replies may also go in several
/// messages chained with `F_MORE`, as many as `cont` allows (draft Section 6.3.2). A reply too
/// large to come inline whose payload is not DDP-eligible then comes continued when it fits,
/// in place of a Reply chunk (a READ's data still goes in a Write chunk); a call too large to
/// go inline goes continued when it fits and its reply needs no chunk, in preference to a Read
/// chunk or a Position-Zero Read chunk: no memory registration either way (and the advice of
/// the draft's Section 9 on moderately-sized replies). [`Continuation::NONE`]: as
/// [`plan_forced`].
pub fn plan_with(call: &Call, conn: &Connection, force: Force, cont: Continuation) -> Result<Plan> {
    let reply_messages = cont.reply;
    let reg = &conn.reg;
    if reg.page_size == 0 || reg.max_fr_depth == 0 {
        return Err(Error::BadConfig);
    }
    let limit = conn.max_rdma_segs;

    let reply = if force.reply_chunk {
        ReplyChunk::ReplyChunk
    } else if results_inline(call, conn) {
        ReplyChunk::Inline
    } else if call.ddp_allowed && call.read_payload && nonpayload_inline(call, conn) {
        // A DDP-eligible payload (a READ's data) is reduced into a Write chunk first, as
        // the draft's Section 4.5.4 describes: measured faster than continuation (see
        // Documentation/proto.md).
        ReplyChunk::WriteChunk
    } else if let Some(messages) = continued_messages(call.rcv_buflen, conn.inline_recv)
        .filter(|&m| reply_messages > 1 && m <= reply_messages)
    {
        ReplyChunk::Continued { messages }
    } else {
        ReplyChunk::ReplyChunk
    };

    let (proc, chunk) = if force.position_zero {
        (Proc::NoMsg, CallChunk::PositionZero)
    } else if args_inline(call, conn) {
        let pullup = call.snd.len() < u64::from(conn.send_buf_len);
        (Proc::Msg, CallChunk::Inline { pullup })
    } else if let Some(messages) = u32::try_from(call.snd.len())
        .ok()
        .filter(|_| {
            cont.call > 1 && matches!(reply, ReplyChunk::Inline | ReplyChunk::Continued { .. })
        })
        .and_then(|len| continued_messages(len, conn.inline_send))
        .filter(|&m| m <= cont.call)
    {
        (Proc::Msg, CallChunk::Continued { messages })
    } else if call.ddp_allowed && call.write_payload {
        let position = call.snd.head_len;
        (Proc::Msg, CallChunk::ReadChunk { position })
    } else {
        (Proc::NoMsg, CallChunk::PositionZero)
    };

    let snd = &call.snd;
    let (read_segments, inline_len, send_sges) = match chunk {
        CallChunk::Inline { pullup: true } => (0, snd.len(), 2),
        CallChunk::Inline { pullup: false } => {
            let tail = u64::from(snd.tail_len != 0);
            (0, snd.len(), 2 + snd.page_pieces(reg.page_size) + tail)
        }
        CallChunk::ReadChunk { .. } => {
            let segs = count_segments(snd, Span::Pages, reg, limit)?;
            // A tail that is only the XDR pad of the page list is not sent; otherwise the
            // pad is skipped so the tail's content lands XDR aligned.
            let tail = if snd.tail_len > 3 {
                snd.tail_len - (snd.tail_len & 3)
            } else {
                0
            };
            let inline = u64::from(snd.head_len) + u64::from(tail);
            (segs, inline, 2 + u64::from(tail != 0))
        }
        CallChunk::PositionZero => (count_segments(snd, Span::Whole, reg, limit)?, 0, 1),
        CallChunk::Continued { .. } => (0, snd.len(), 2),
    };

    let (write_segments, reply_segments) = match reply {
        ReplyChunk::Inline | ReplyChunk::Continued { .. } => (0, 0),
        ReplyChunk::WriteChunk => {
            let segs = count_segments(&call.rcv, Span::Pages, reg, limit)?;
            let pad = u32::from(call.rcv.page_len % WORD != 0);
            (segs + pad, 0)
        }
        ReplyChunk::ReplyChunk => (0, count_segments(&call.rcv, Span::Whole, reg, limit)?),
    };

    let segments = read_segments
        .saturating_add(write_segments)
        .saturating_add(reply_segments);
    if segments > conn.max_call_segs {
        return Err(Error::TooManySegments {
            needed: segments,
            max: conn.max_call_segs,
        });
    }
    let header_len = header_size(read_segments, write_segments, reply, reply_segments);
    // A Read chunk leaves the head and tail of the call inline, beside the header: should they
    // not fit the Send (a long head, or the 1024-byte first message of a version 2 offer), the
    // whole call goes in a Position-Zero Read chunk, as a call whose payload is not
    // DDP-eligible would (the C client sends it anyway, larger than the server's Receives).
    if matches!(chunk, CallChunk::ReadChunk { .. })
        && u64::from(header_len).saturating_add(inline_len) > u64::from(conn.inline_send)
    {
        let force = Force {
            position_zero: true,
            ..force
        };
        return plan_with(call, conn, force, cont);
    }
    let max = header_buffer_size(conn.max_rdma_segs);
    if header_len > max {
        return Err(Error::HeaderTooLong {
            needed: header_len,
            max,
        });
    }
    Ok(Plan {
        proc,
        call: chunk,
        reply,
        read_segments,
        write_segments,
        reply_segments,
        header_len,
        // At most the call length, which the inline checks bounded by a `u32` threshold.
        inline_len: u32::try_from(inline_len).unwrap_or(u32::MAX),
        send_sges,
    })
}

/// Transport header length for a Read list of `reads` entries, a Write list of one chunk of
/// `writes` segments (none if zero) and a Reply chunk of `replies` segments if `reply` is
/// [`ReplyChunk::ReplyChunk`].
fn header_size(reads: u32, writes: u32, reply: ReplyChunk, replies: u32) -> u32 {
    let mut len = HDR_MIN.saturating_add(reads.saturating_mul(READ_ENTRY));
    if reply == ReplyChunk::WriteChunk {
        len = len
            .saturating_add(2 * WORD)
            .saturating_add(writes.saturating_mul(SEGMENT));
    }
    if reply == ReplyChunk::ReplyChunk {
        len = len
            .saturating_add(WORD)
            .saturating_add(replies.saturating_mul(SEGMENT));
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: u32 = 4096;

    /// A ConnectX-like device with 4 KiB inline thresholds.
    fn conn(sg_gaps: bool) -> Connection {
        let depth = max_fr_depth(30, 256, PAGE);
        Connection {
            inline_send: 4096,
            inline_recv: 4096,
            max_rdma_segs: max_rdma_segs(depth, PAGE),
            max_call_segs: u32::MAX,
            max_send_sge: 16,
            send_buf_len: 4096,
            reg: Registration {
                max_fr_depth: depth,
                sg_gaps,
                page_size: PAGE,
            },
        }
    }

    fn buf(head_len: u32, page_base: u32, page_len: u32, tail_len: u32) -> XdrBuf {
        XdrBuf {
            head_len,
            page_base,
            page_len,
            tail_len,
            tail_page_offset: 0,
        }
    }

    #[test]
    fn device_limits_like_frwr_query_device() {
        assert_eq!(max_data_segs(PAGE), 257);
        // max_sge_rd above 16 wins.
        assert_eq!(max_fr_depth(30, 256, PAGE), 30);
        assert_eq!(max_fr_depth(16, 256, PAGE), 256);
        assert_eq!(max_fr_depth(1, 512, PAGE), 257);
        // ceil(257 / 30) + 2 = 11; ceil(257 / 256) + 2 = 4; capped at 16.
        assert_eq!(max_rdma_segs(30, PAGE), 11);
        assert_eq!(max_rdma_segs(256, PAGE), 4);
        assert_eq!(max_rdma_segs(8, PAGE), 16);
        assert_eq!(max_rdma_segs(0, PAGE), 16);
    }

    #[test]
    fn header_sizes_like_set_max_header_sizes() {
        // 28 + 16 * 24 + 4 + 16 + 4 and 28 + 4 + 16 * 16 + 4.
        assert_eq!(max_call_header_size(16), 436);
        assert_eq!(max_reply_header_size(16), 292);
        assert_eq!(max_call_header_size(11), 316);
        // (4 + 3 + 16 * 6) * 4 = 412 -> 512.
        assert_eq!(header_buffer_size(16), 512);
        assert_eq!(header_buffer_size(4), 128);
        let c = conn(false);
        assert_eq!(c.max_inline_send(), 4096 - 316);
        assert_eq!(c.max_inline_recv(), 4096 - (28 + 4 + 11 * 16 + 4));
        let tiny = Connection {
            inline_send: 100,
            ..c
        };
        assert_eq!(tiny.max_inline_send(), 0);
    }

    #[test]
    fn segment_counts() {
        let reg = conn(false).reg;
        // 1 MiB page-aligned payload at depth 30: ceil(256 / 30) = 9 MRs.
        let b = buf(100, 0, 1 << 20, 0);
        assert_eq!(count_segments(&b, Span::Pages, &reg, 16), Ok(9));
        // Misaligned: 257 pieces, still 9.
        let b = buf(100, 512, 1 << 20, 0);
        assert_eq!(count_segments(&b, Span::Pages, &reg, 16), Ok(9));
        // Whole buffer without gap support: head MR, page MRs, tail joins the last page MR
        // only if both meet at page boundaries.
        let b = buf(100, 0, 8192, 4);
        assert_eq!(count_segments(&b, Span::Whole, &reg, 16), Ok(2));
        let b = buf(100, 0, 8190, 4);
        assert_eq!(count_segments(&b, Span::Whole, &reg, 16), Ok(3));
        let b = XdrBuf {
            tail_page_offset: 8,
            ..buf(100, 0, 8192, 4)
        };
        assert_eq!(count_segments(&b, Span::Whole, &reg, 16), Ok(3));
        // With gap support everything shares MRs up to the depth.
        let gaps = conn(true).reg;
        let b = buf(100, 0, 8190, 4);
        assert_eq!(count_segments(&b, Span::Whole, &gaps, 16), Ok(1));
        let b = buf(100, 0, 29 * 4096, 4);
        assert_eq!(count_segments(&b, Span::Whole, &gaps, 16), Ok(2));
        // Head only.
        let b = buf(100, 0, 0, 0);
        assert_eq!(count_segments(&b, Span::Whole, &reg, 16), Ok(1));
        // Nothing to register.
        assert_eq!(
            count_segments(&b, Span::Pages, &reg, 16),
            Err(Error::EmptyChunk)
        );
        // Over the limit; counting stops early.
        let b = buf(0, 0, u32::MAX, 0);
        let one = Registration {
            max_fr_depth: 1,
            ..reg
        };
        assert_eq!(
            count_segments(&b, Span::Pages, &one, 16),
            Err(Error::TooManySegments {
                needed: 17,
                max: 16,
            })
        );
        let zero = Registration {
            max_fr_depth: 0,
            ..reg
        };
        assert_eq!(
            count_segments(&b, Span::Pages, &zero, 16),
            Err(Error::BadConfig)
        );
    }

    #[test]
    fn small_call_goes_inline() {
        let c = conn(false);
        let call = Call {
            snd: buf(200, 0, 0, 0),
            rcv: buf(1000, 0, 0, 0),
            rcv_buflen: 1000,
            ddp_allowed: true,
            ..Call::default()
        };
        let p = plan(&call, &c).unwrap();
        assert_eq!(p.proc, Proc::Msg);
        assert_eq!(p.call, CallChunk::Inline { pullup: true });
        assert_eq!(p.reply, ReplyChunk::Inline);
        assert_eq!((p.header_len, p.inline_len, p.send_sges), (28, 200, 2));
    }

    #[test]
    fn mapped_inline_when_not_smaller_than_send_buffer() {
        let c = Connection {
            send_buf_len: 1024,
            ..conn(false)
        };
        let call = Call {
            snd: buf(200, 0, 2048, 4),
            rcv_buflen: 100,
            ..Call::default()
        };
        let p = plan(&call, &c).unwrap();
        assert_eq!(p.call, CallChunk::Inline { pullup: false });
        // Header, head, one page, tail.
        assert_eq!(p.send_sges, 4);
        // Too many pages for the Send SGEs: Position-Zero Read chunk instead.
        let c = Connection {
            max_send_sge: 3,
            ..c
        };
        assert_eq!(plan(&call, &c).unwrap().call, CallChunk::PositionZero);
    }

    #[test]
    fn write_call_uses_read_chunk() {
        let c = conn(false);
        let call = Call {
            snd: buf(180, 0, 65536, 7),
            rcv: buf(200, 0, 0, 0),
            rcv_buflen: 200,
            ddp_allowed: true,
            write_payload: true,
            ..Call::default()
        };
        let p = plan(&call, &c).unwrap();
        assert_eq!(p.proc, Proc::Msg);
        assert_eq!(p.call, CallChunk::ReadChunk { position: 180 });
        // 16 pages at depth 30: one MR.
        assert_eq!(p.read_segments, 1);
        assert_eq!(p.header_len, 28 + 24);
        // Tail of 7 bytes: 3 pad bytes skipped, 4 sent.
        assert_eq!((p.inline_len, p.send_sges), (184, 3));
        // A head too long for the Send beside the header (a 1024-byte first message): the
        // whole call by Position-Zero Read chunk.
        let first = Connection {
            inline_send: 1024,
            ..c
        };
        let long = Call {
            snd: buf(1000, 0, 65536, 7),
            ..call
        };
        let p = plan(&long, &first).unwrap();
        assert_eq!((p.proc, p.call), (Proc::NoMsg, CallChunk::PositionZero));
        assert_eq!((p.inline_len, p.send_sges), (0, 1));
        // 1024 bytes in all, header included, still fit.
        let head = 1024 - 28 - 24 - 4;
        let fits = Call {
            snd: buf(head, 0, 65536, 7),
            ..call
        };
        let p = plan(&fits, &first).unwrap();
        assert_eq!(p.call, CallChunk::ReadChunk { position: head });
        assert_eq!(u64::from(p.header_len) + u64::from(p.inline_len), 1024);
        // Without DDP (krb5i/krb5p): the whole call by Position-Zero Read chunk.
        let call = Call {
            ddp_allowed: false,
            ..call
        };
        let p = plan(&call, &c).unwrap();
        assert_eq!((p.proc, p.call), (Proc::NoMsg, CallChunk::PositionZero));
        // Head MR, then one MR for the 16 pages with the page-aligned tail joining it.
        assert_eq!(p.read_segments, 2);
        assert_eq!((p.inline_len, p.send_sges), (0, 1));
    }

    #[test]
    fn call_segment_total() {
        // A 1 MiB WRITE at depth 30: a Read chunk of 9 segments, an inline reply.
        let write = Call {
            snd: buf(180, 0, 1 << 20, 0),
            rcv: buf(200, 0, 0, 0),
            rcv_buflen: 200,
            ddp_allowed: true,
            write_payload: true,
            ..Call::default()
        };
        // Within a responder's count of 16 (draft Table 1's default), which a halving
        // between two chunks would not have allowed.
        let c = Connection {
            max_call_segs: 16,
            ..conn(false)
        };
        assert_eq!(plan(&write, &c).map(|p| p.read_segments), Ok(9));
        // A call's chunks together beyond it: refused.
        let both = Force {
            position_zero: true,
            reply_chunk: true,
        };
        let p = plan_forced(&write, &conn(false), both).unwrap();
        let total = p.read_segments + p.reply_segments;
        let tight = Connection {
            max_call_segs: total - 1,
            ..conn(false)
        };
        assert_eq!(
            plan_forced(&write, &tight, both),
            Err(Error::TooManySegments {
                needed: total,
                max: total - 1
            })
        );
        let exact = Connection {
            max_call_segs: total,
            ..conn(false)
        };
        assert_eq!(plan_forced(&write, &exact, both), Ok(p));
    }

    #[test]
    fn forced_after_rdma2_errors() {
        let c = conn(false);
        let call = Call {
            snd: buf(180, 0, 65536, 7),
            rcv: buf(200, 0, 0, 0),
            rcv_buflen: 200,
            ddp_allowed: true,
            write_payload: true,
            ..Call::default()
        };
        let none = plan_forced(&call, &c, Force::default()).unwrap();
        assert_eq!(none, plan(&call, &c).unwrap());
        assert_eq!(none.reply, ReplyChunk::Inline);
        // The Read chunk refused: the same call by Position-Zero Read chunk, as without DDP.
        let pz = plan_forced(
            &call,
            &c,
            Force {
                position_zero: true,
                reply_chunk: false,
            },
        )
        .unwrap();
        assert_eq!((pz.proc, pz.call), (Proc::NoMsg, CallChunk::PositionZero));
        assert_eq!(pz.read_segments, 2);
        assert_eq!(pz.reply, ReplyChunk::Inline);
        // A READ-like call whose reply would go in a Write chunk: a Reply chunk instead.
        let read = Call {
            snd: buf(120, 0, 0, 0),
            rcv: buf(120, 0, 65536, 0),
            rcv_buflen: 65536 + 120,
            ddp_allowed: true,
            read_payload: true,
            ..Call::default()
        };
        assert_eq!(plan(&read, &c).unwrap().reply, ReplyChunk::WriteChunk);
        let rc = plan_forced(
            &read,
            &c,
            Force {
                position_zero: false,
                reply_chunk: true,
            },
        )
        .unwrap();
        assert_eq!(rc.reply, ReplyChunk::ReplyChunk);
        assert_eq!((rc.write_segments, rc.reply_segments), (0, 2));
        assert_eq!(rc.call, CallChunk::Inline { pullup: true });
    }

    #[test]
    fn continued_replies_replace_chunks() {
        // A version 2 connection: thresholds cut by the 8 bytes of the longer header.
        let c = Connection {
            inline_send: 4088,
            inline_recv: 4088,
            ..conn(false)
        };
        let read = |len: u32| Call {
            snd: buf(120, 0, 0, 0),
            rcv: buf(120, 0, len, 0),
            rcv_buflen: len + 120,
            ddp_allowed: true,
            read_payload: true,
            ..Call::default()
        };
        // 32 KiB in messages carrying 4060 bytes each (4096 minus a 36-byte header): 9.
        assert_eq!(continued_messages(32768 + 120, 4088), Some(9));
        let r16 = Continuation { call: 1, reply: 16 };
        // A READ's data is DDP-eligible: a Write chunk still, as without continuation.
        let p = plan_with(&read(32768), &c, Force::default(), r16).unwrap();
        assert_eq!(p.reply, ReplyChunk::WriteChunk);
        // A reply of the same size without DDP (a READDIR, a READLINK, or integrity): 9
        // continued messages in place of a Reply chunk, or a Reply chunk with too few
        // Receives kept.
        let nonddp = |len: u32| Call {
            ddp_allowed: false,
            ..read(len)
        };
        let p = plan_with(&nonddp(32768), &c, Force::default(), r16).unwrap();
        assert_eq!(p.reply, ReplyChunk::Continued { messages: 9 });
        assert_eq!(
            (p.write_segments, p.reply_segments, p.header_len),
            (0, 0, 28)
        );
        let r8 = Continuation { call: 1, reply: 8 };
        let p = plan_with(&nonddp(32768), &c, Force::default(), r8).unwrap();
        assert_eq!(p.reply, ReplyChunk::ReplyChunk);
        let p = plan_with(&read(32768), &c, Force::default(), r8).unwrap();
        assert_eq!(p, plan(&read(32768), &c).unwrap());
        // A reply that fits inline stays inline; a forced Reply chunk stays forced.
        let small = plan_with(&read(1000), &c, Force::default(), r16).unwrap();
        assert_eq!(small.reply, ReplyChunk::Inline);
        let forced = Force {
            position_zero: false,
            reply_chunk: true,
        };
        let p = plan_with(&read(8192), &c, forced, r16).unwrap();
        assert_eq!(p.reply, ReplyChunk::ReplyChunk);
        // Without DDP (a READDIR, or integrity): continued rather than a Reply chunk.
        let dir = Call {
            ddp_allowed: false,
            ..read(16384)
        };
        assert_eq!(
            plan_with(&dir, &c, Force::default(), r16).unwrap().reply,
            ReplyChunk::Continued { messages: 5 }
        );

        // A WRITE-like call of 16 KiB: continued in 5 messages rather than a Read chunk.
        let write = |len: u32| Call {
            snd: buf(180, 0, len, 0),
            rcv: buf(200, 0, 0, 0),
            rcv_buflen: 200,
            ddp_allowed: true,
            write_payload: true,
            ..Call::default()
        };
        let c16 = Continuation { call: 16, reply: 1 };
        let p = plan_with(&write(16384), &c, Force::default(), c16).unwrap();
        assert_eq!(
            (p.proc, p.call, p.reply),
            (
                Proc::Msg,
                CallChunk::Continued { messages: 5 },
                ReplyChunk::Inline
            )
        );
        assert_eq!(
            (p.read_segments, p.header_len, p.inline_len),
            (0, 28, 16564)
        );
        // Too few credits free, or a reply that needs a chunk: a Read chunk.
        let c4 = Continuation { call: 4, reply: 1 };
        let p = plan_with(&write(16384), &c, Force::default(), c4).unwrap();
        assert_eq!(p.call, CallChunk::ReadChunk { position: 180 });
        let big_reply = Call {
            rcv: buf(200, 0, 65536, 0),
            rcv_buflen: 65736,
            ..write(16384)
        };
        let p = plan_with(&big_reply, &c, Force::default(), c16).unwrap();
        assert_eq!(
            (p.call, p.reply),
            (
                CallChunk::ReadChunk { position: 180 },
                ReplyChunk::ReplyChunk
            )
        );
        // Forced to Position Zero (after RDMA2_ERR_READ_CHUNKS): stays so.
        let pz = Force {
            position_zero: true,
            reply_chunk: false,
        };
        assert_eq!(
            plan_with(&write(16384), &c, pz, c16).unwrap().call,
            CallChunk::PositionZero
        );
    }

    #[test]
    fn tail_only_pad_is_not_sent() {
        let call = Call {
            snd: buf(180, 0, 65535, 1),
            rcv_buflen: 200,
            ddp_allowed: true,
            write_payload: true,
            ..Call::default()
        };
        let p = plan(&call, &conn(false)).unwrap();
        assert_eq!((p.inline_len, p.send_sges), (180, 2));
    }

    #[test]
    fn read_reply_uses_write_chunk() {
        let c = conn(false);
        let call = Call {
            snd: buf(150, 0, 0, 0),
            rcv: buf(300, 0, 32767, 0),
            rcv_buflen: 300 + 32767,
            ddp_allowed: true,
            read_payload: true,
            ..Call::default()
        };
        let p = plan(&call, &c).unwrap();
        assert_eq!(p.reply, ReplyChunk::WriteChunk);
        // One MR plus the XDR pad segment for an odd-length page list.
        assert_eq!(p.write_segments, 2);
        assert_eq!(p.header_len, 28 + 8 + 32);
        // Without DDP, or with large non-payload parts: Reply chunk of head, pages (one MR)
        // and tail.
        let p = plan(
            &Call {
                ddp_allowed: false,
                ..call
            },
            &c,
        )
        .unwrap();
        assert_eq!(p.reply, ReplyChunk::ReplyChunk);
        assert_eq!(p.reply_segments, 2);
        assert_eq!(p.header_len, 28 + 4 + 32);
        let big_head = Call {
            rcv: buf(4000, 0, 32767, 0),
            ..call
        };
        assert_eq!(plan(&big_head, &c).unwrap().reply, ReplyChunk::ReplyChunk);
    }

    #[test]
    fn impossible_cases() {
        let c = conn(false);
        // A DDP WRITE without pages: frwr_map() gets nothing to map.
        let call = Call {
            snd: buf(5000, 0, 0, 0),
            rcv_buflen: 100,
            ddp_allowed: true,
            write_payload: true,
            ..Call::default()
        };
        assert_eq!(plan(&call, &c), Err(Error::EmptyChunk));
        assert_eq!(Error::EmptyChunk.errno(), -5);
        // Too many segments: 4 MiB of pages at depth 30.
        let call = Call {
            snd: buf(200, 0, 4 << 20, 0),
            ..call
        };
        let e = plan(&call, &c).unwrap_err();
        assert_eq!(
            e,
            Error::TooManySegments {
                needed: 12,
                max: 11,
            }
        );
        assert_eq!(e.errno(), -5);
        // Read list and Write list together overflow the header buffer with small MRs.
        let small = Connection {
            max_rdma_segs: 16,
            max_call_segs: u32::MAX,
            reg: Registration {
                max_fr_depth: 1,
                ..c.reg
            },
            ..c
        };
        let call = Call {
            snd: buf(200, 0, 16 * 4096, 0),
            rcv: buf(200, 0, 16 * 4096, 0),
            rcv_buflen: 200 + 16 * 4096,
            ddp_allowed: true,
            write_payload: true,
            read_payload: true,
        };
        let e = plan(&call, &small).unwrap_err();
        assert_eq!(
            e,
            Error::HeaderTooLong {
                needed: 28 + 16 * 24 + 8 + 16 * 16,
                max: 512,
            }
        );
        assert_eq!(e.errno(), -90);
        let bad = Connection {
            reg: Registration {
                page_size: 0,
                ..c.reg
            },
            ..c
        };
        assert_eq!(plan(&call, &bad), Err(Error::BadConfig));
    }
}
