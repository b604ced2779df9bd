// SPDX-License-Identifier: GPL-2.0

//! RPC-over-RDMA version 1 (RFC 8166) transport headers.
//!
//! Every RPC-over-RDMA message starts with a transport header:
//!
//! ```text
//! rdma_xid | rdma_vers | rdma_credit | rdma_proc | body
//! ```
//!
//! where the body of `RDMA_MSG` and `RDMA_NOMSG` is three chunk lists (Read list, Write list,
//! Reply chunk) and the body of `RDMA_ERROR` is an error code. Decoding is zero-copy: the lists are
//! returned as borrowed views ([`ReadList`], [`WriteList`], [`WriteChunk`]) over the received
//! bytes, with iterators yielding [`Segment`]s. Every view handed out has already been validated,
//! so iterating it cannot fail.
//!
//! Two role-specific entry points apply the checks a receiver must make:
//!
//! - [`Header::decode_call`] is the responder (server) side, at least as strict as
//!   `svc_rdma_xdr_decode_req()` and the pcl code in `svc_rdma_pcl.c`;
//! - [`Header::decode_reply`] is the requester (client) side, as strict as
//!   `rpcrdma_reply_handler()` and `rpcrdma_decode_{msg,nomsg,error}()`.
//!
//! Each failure is an [`Error`]; [`Error::verdict`] says what the transport must do about it
//! (answer `ERR_VERS`, answer `ERR_CHUNK`, drop the message, or fail the matching RPC).
//!
//! The encoders write a requester's call header ([`encode`]), a responder's reply header that
//! echoes the call's Write list and Reply chunk with the lengths actually written
//! ([`encode_reply`]), and `RDMA_ERROR` messages ([`encode_error`]).

use super::xdr::{
    self,
    Decoder,
    Encoder, //
};

/// The RPC-over-RDMA protocol version this module implements (`RPCRDMA_VERSION`).
pub const VERSION: u32 = 1;

/// `rdma_proc`: an RPC message follows the transport header inline.
pub const RDMA_MSG: u32 = 0;
/// `rdma_proc`: the RPC message is conveyed in a Position-Zero Read chunk or a Reply chunk.
pub const RDMA_NOMSG: u32 = 1;
/// `rdma_proc`: padded message; reserved by RFC 8166, never sent.
pub const RDMA_MSGP: u32 = 2;
/// `rdma_proc`: Read chunk completion; reserved by RFC 8166, never sent.
pub const RDMA_DONE: u32 = 3;
/// `rdma_proc`: transport-level error report.
pub const RDMA_ERROR: u32 = 4;

/// `rdma_err`: the receiver does not support the sender's protocol version.
pub const ERR_VERS: u32 = 1;
/// `rdma_err`: the header or its chunks could not be parsed or used.
pub const ERR_CHUNK: u32 = 2;

/// Size of the four fixed header fields (`rpcrdma_fixed_maxsz` words).
pub const FIXED_SIZE: usize = 16;
/// Smallest `RDMA_MSG`/`RDMA_NOMSG` header: fixed fields and three empty lists
/// (`RPCRDMA_HDRLEN_MIN`).
pub const HDRLEN_MIN: usize = 28;
/// Size of an `RDMA_ERROR` header carrying `ERR_CHUNK` (`RPCRDMA_HDRLEN_ERR`).
pub const HDRLEN_ERR: usize = 20;
/// Size of an `RDMA_ERROR` header carrying `ERR_VERS`.
pub const HDRLEN_ERR_VERS: usize = 28;
/// Encoded size of one [`Segment`] (`rpcrdma_segment_maxsz` words).
pub const SEGMENT_SIZE: usize = 16;
/// Encoded size of one [`ReadSegment`] (`rpcrdma_readseg_maxsz` words).
pub const READ_SEGMENT_SIZE: usize = 20;
/// Encoded size of one Read list entry: discriminator and Read segment
/// (`rpcrdma_readchunk_maxsz` words).
pub const READ_ENTRY_SIZE: usize = 24;
/// Inline threshold both directions use when the peer sent no RFC 8797 private data
/// (`RPCRDMA_V1_DEF_INLINE_SIZE`).
pub const DEF_INLINE_SIZE: u32 = 1024;

/// Size of one XDR word.
const WORD: usize = xdr::UNIT;

/// Values of `rdma_proc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Proc {
    /// [`RDMA_MSG`].
    Msg,
    /// [`RDMA_NOMSG`].
    NoMsg,
    /// [`RDMA_MSGP`].
    Msgp,
    /// [`RDMA_DONE`].
    Done,
    /// [`RDMA_ERROR`].
    Error,
}

impl From<Proc> for u32 {
    fn from(p: Proc) -> u32 {
        match p {
            Proc::Msg => RDMA_MSG,
            Proc::NoMsg => RDMA_NOMSG,
            Proc::Msgp => RDMA_MSGP,
            Proc::Done => RDMA_DONE,
            Proc::Error => RDMA_ERROR,
        }
    }
}

impl TryFrom<u32> for Proc {
    /// The undefined value.
    type Error = u32;

    fn try_from(v: u32) -> core::result::Result<Self, u32> {
        match v {
            RDMA_MSG => Ok(Proc::Msg),
            RDMA_NOMSG => Ok(Proc::NoMsg),
            RDMA_MSGP => Ok(Proc::Msgp),
            RDMA_DONE => Ok(Proc::Done),
            RDMA_ERROR => Ok(Proc::Error),
            v => Err(v),
        }
    }
}

/// An RDMA segment (`struct rpcrdma1_segment`): a registered remote memory region.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Segment {
    /// R_key of the registered region (`rdma_handle`).
    pub handle: u32,
    /// Length of the region in bytes (`rdma_length`).
    pub length: u32,
    /// Remote address or offset of the region (`rdma_offset`).
    pub offset: u64,
}

impl Segment {
    /// Decodes a segment.
    pub fn decode(d: &mut Decoder<'_>) -> xdr::Result<Self> {
        Ok(Self {
            handle: d.u32()?,
            length: d.u32()?,
            offset: d.u64()?,
        })
    }

    /// Encodes the segment (`xdr_encode_rdma_segment()`).
    pub fn encode(&self, e: &mut Encoder<'_>) -> xdr::Result<()> {
        if e.remaining() < SEGMENT_SIZE {
            return Err(xdr::Error::Short);
        }
        e.u32(self.handle)?;
        e.u32(self.length)?;
        e.u64(self.offset)
    }
}

/// A Read segment (`struct rpcrdma1_read_segment`): a segment and its XDR position.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ReadSegment {
    /// Byte offset of the containing Read chunk in the RPC message (`rdma_position`).
    pub position: u32,
    /// The source region.
    pub segment: Segment,
}

impl ReadSegment {
    /// Decodes a Read segment (without the list discriminator).
    pub fn decode(d: &mut Decoder<'_>) -> xdr::Result<Self> {
        Ok(Self {
            position: d.u32()?,
            segment: Segment::decode(d)?,
        })
    }

    /// Encodes the Read segment (without the list discriminator).
    pub fn encode(&self, e: &mut Encoder<'_>) -> xdr::Result<()> {
        if e.remaining() < READ_SEGMENT_SIZE {
            return Err(xdr::Error::Short);
        }
        e.u32(self.position)?;
        self.segment.encode(e)
    }
}

/// The four fixed header fields, as returned by [`peek`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fixed {
    /// Transaction id (`rdma_xid`), equal to the RPC XID.
    pub xid: u32,
    /// Protocol version (`rdma_vers`).
    pub vers: u32,
    /// Credits requested (call) or granted (reply) (`rdma_credit`).
    pub credits: u32,
    /// Message type (`rdma_proc`), not yet checked.
    pub proc: u32,
}

/// Reads the four fixed header fields from the first 16 bytes of `buf`, without any validation.
///
/// Returns `None` if `buf` is shorter than [`FIXED_SIZE`].
pub fn peek(buf: &[u8]) -> Option<Fixed> {
    let mut d = Decoder::new(buf);
    Some(Fixed {
        xid: d.u32().ok()?,
        vers: d.u32().ok()?,
        credits: d.u32().ok()?,
        proc: d.u32().ok()?,
    })
}

/// Iterator over the segments of a [`WriteChunk`].
#[derive(Clone, Debug)]
pub struct Segments<'a> {
    dec: Decoder<'a>,
    left: u32,
}

impl Iterator for Segments<'_> {
    type Item = Segment;

    fn next(&mut self) -> Option<Segment> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        match Segment::decode(&mut self.dec) {
            Ok(s) => Some(s),
            Err(_) => {
                // Unreachable for views built by the decoder, which checked the length.
                self.left = 0;
                None
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, usize::try_from(self.left).ok())
    }
}

/// A Write chunk (`struct rpcrdma1_write_chunk`), also the shape of a Reply chunk: a counted
/// array of segments, borrowed from the received header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteChunk<'a> {
    /// The encoded segments, `count * SEGMENT_SIZE` bytes.
    raw: &'a [u8],
    count: u32,
}

impl<'a> WriteChunk<'a> {
    /// Decodes the segment count and segments of a chunk, checking `limits`. A chunk without
    /// segments is [`ChunkError::EmptyChunk`] unless `empty_ok`.
    ///
    /// The count is range-checked before it is used, and the segments must be present in the
    /// input before any is looked at, so a hostile count costs nothing.
    fn decode(d: &mut Decoder<'a>, limits: &Limits, empty_ok: bool) -> Result<Self> {
        let count = d.u32()?;
        if count == 0 && !empty_ok {
            return Err(Error::Chunk(ChunkError::EmptyChunk));
        }
        if count > limits.max_segments {
            return Err(Error::Chunk(ChunkError::TooManySegments));
        }
        let len = usize::try_from(count)
            .ok()
            .and_then(|n| n.checked_mul(SEGMENT_SIZE))
            .ok_or(Error::Xdr(xdr::Error::LengthOverflow))?;
        let raw = d.opaque_fixed(len)?;
        let chunk = Self { raw, count };
        if chunk.length() > limits.max_write_bytes {
            return Err(Error::Chunk(ChunkError::TooLong));
        }
        Ok(chunk)
    }

    /// Number of segments (`ch_segcount`).
    pub fn segment_count(&self) -> u32 {
        self.count
    }

    /// The segments, in array order.
    pub fn segments(&self) -> Segments<'a> {
        Segments {
            dec: Decoder::new(self.raw),
            left: self.count,
        }
    }

    /// Sum of the segment lengths (`ch_length`), which cannot overflow a `u64`.
    pub fn length(&self) -> u64 {
        self.segments().map(|s| u64::from(s.length)).sum()
    }
}

/// Iterator over the chunks of a [`WriteList`].
#[derive(Clone, Debug)]
pub struct WriteChunks<'a> {
    dec: Decoder<'a>,
    left: u32,
}

impl<'a> Iterator for WriteChunks<'a> {
    type Item = WriteChunk<'a>;

    fn next(&mut self) -> Option<WriteChunk<'a>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let chunk = (|| {
            self.dec.u32().ok()?;
            let count = self.dec.u32().ok()?;
            let len = usize::try_from(count).ok()?.checked_mul(SEGMENT_SIZE)?;
            let raw = self.dec.opaque_fixed(len).ok()?;
            Some(WriteChunk { raw, count })
        })();
        if chunk.is_none() {
            // Unreachable for views built by the decoder.
            self.left = 0;
        }
        chunk
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, usize::try_from(self.left).ok())
    }
}

/// A Write list (`struct rpcrdma1_write_list`), borrowed from the received header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteList<'a> {
    /// The encoded entries (discriminator, count, segments), without the terminating zero.
    raw: &'a [u8],
    count: u32,
}

impl<'a> WriteList<'a> {
    /// Number of Write chunks.
    pub fn len(&self) -> u32 {
        self.count
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The Write chunks, in list order.
    pub fn chunks(&self) -> WriteChunks<'a> {
        WriteChunks {
            dec: Decoder::new(self.raw),
            left: self.count,
        }
    }

    /// Sum of the lengths of all chunks.
    pub fn total_length(&self) -> u64 {
        self.chunks().map(|c| c.length()).sum()
    }
}

/// Iterator over the entries of a [`ReadList`].
#[derive(Clone, Debug)]
pub struct ReadSegments<'a> {
    dec: Decoder<'a>,
    left: u32,
}

impl Iterator for ReadSegments<'_> {
    type Item = ReadSegment;

    fn next(&mut self) -> Option<ReadSegment> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let seg = (|| {
            self.dec.u32().ok()?;
            ReadSegment::decode(&mut self.dec).ok()
        })();
        if seg.is_none() {
            // Unreachable for views built by the decoder.
            self.left = 0;
        }
        seg
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, usize::try_from(self.left).ok())
    }
}

/// A Read list (`struct rpcrdma1_read_list`), borrowed from the received header.
///
/// On the wire the list is a flat sequence of Read segments; a Read chunk is the set of segments
/// sharing one position. [`ReadList::chunks`] groups them the way `pcl_alloc_read()` does: one
/// chunk per distinct non-zero position, in ascending position order, each chunk's segments in
/// list order. All position-zero segments form the Position-Zero Read chunk
/// ([`ReadList::position_zero`], `pcl_alloc_call()`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadList<'a> {
    /// The encoded entries (discriminator and Read segment each), without the terminating zero.
    raw: &'a [u8],
    count: u32,
}

impl<'a> ReadList<'a> {
    /// Number of Read segments (not chunks).
    pub fn len(&self) -> u32 {
        self.count
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// All Read segments, in list order.
    pub fn segments(&self) -> ReadSegments<'a> {
        ReadSegments {
            dec: Decoder::new(self.raw),
            left: self.count,
        }
    }

    /// The Position-Zero Read chunk, if any segment has position zero.
    pub fn position_zero(&self) -> Option<ReadChunk<'a>> {
        self.segments()
            .any(|s| s.position == 0)
            .then_some(ReadChunk {
                list: *self,
                position: 0,
            })
    }

    /// The Read chunks at non-zero positions, in ascending position order.
    ///
    /// Each step scans the list once, so a full iteration costs segments × chunks; the decoder
    /// bounds both through [`Limits`].
    pub fn chunks(&self) -> ReadChunks<'a> {
        ReadChunks {
            list: *self,
            last: 0,
        }
    }

    /// Sum of all segment lengths.
    pub fn total_length(&self) -> u64 {
        self.segments().map(|s| u64::from(s.segment.length)).sum()
    }
}

/// Iterator over the non-zero-position chunks of a [`ReadList`], by ascending position.
#[derive(Clone, Debug)]
pub struct ReadChunks<'a> {
    list: ReadList<'a>,
    /// Position of the previous chunk; zero before the first.
    last: u32,
}

impl<'a> Iterator for ReadChunks<'a> {
    type Item = ReadChunk<'a>;

    fn next(&mut self) -> Option<ReadChunk<'a>> {
        let last = self.last;
        let position = self
            .list
            .segments()
            .map(|s| s.position)
            .filter(|&p| p > last)
            .min()?;
        self.last = position;
        Some(ReadChunk {
            list: self.list,
            position,
        })
    }
}

/// One Read chunk: the segments of a [`ReadList`] that share a position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadChunk<'a> {
    list: ReadList<'a>,
    position: u32,
}

impl<'a> ReadChunk<'a> {
    /// XDR position of the chunk in the RPC message (`ch_position`).
    pub fn position(&self) -> u32 {
        self.position
    }

    /// The chunk's segments, in list order.
    pub fn segments(&self) -> ReadChunkSegments<'a> {
        ReadChunkSegments {
            inner: self.list.segments(),
            position: self.position,
        }
    }

    /// Number of segments (`ch_segcount`).
    pub fn segment_count(&self) -> u32 {
        // At most `list.count`, which is a `u32`.
        self.segments().fold(0u32, |n, _| n.saturating_add(1))
    }

    /// Sum of the segment lengths (`ch_length`).
    pub fn length(&self) -> u64 {
        self.segments().map(|s| u64::from(s.length)).sum()
    }
}

/// Iterator over the segments of one [`ReadChunk`].
#[derive(Clone, Debug)]
pub struct ReadChunkSegments<'a> {
    inner: ReadSegments<'a>,
    position: u32,
}

impl Iterator for ReadChunkSegments<'_> {
    type Item = Segment;

    fn next(&mut self) -> Option<Segment> {
        let position = self.position;
        self.inner
            .by_ref()
            .find(|s| s.position == position)
            .map(|s| s.segment)
    }
}

/// The chunk lists of an `RDMA_MSG` or `RDMA_NOMSG` header (`struct rpcrdma1_chunks`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Chunks<'a> {
    /// The Read list (calls only).
    pub reads: ReadList<'a>,
    /// The Write list.
    pub writes: WriteList<'a>,
    /// The Reply chunk, if present.
    pub reply: Option<WriteChunk<'a>>,
}

/// Body of an `RDMA_ERROR` message (`union rpcrdma1_error`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorBody {
    /// `ERR_VERS`, with the range of versions the sender supports.
    Vers {
        /// Lowest supported version (`rdma_vers_low`).
        low: u32,
        /// Highest supported version (`rdma_vers_high`).
        high: u32,
    },
    /// `ERR_CHUNK`.
    Chunk,
}

impl ErrorBody {
    /// The `ERR_VERS` body this implementation sends: version 1 only.
    pub const OUR_VERS: Self = ErrorBody::Vers {
        low: VERSION,
        high: VERSION,
    };

    fn decode(d: &mut Decoder<'_>) -> Result<Self> {
        match d.u32()? {
            ERR_VERS => Ok(ErrorBody::Vers {
                low: d.u32()?,
                high: d.u32()?,
            }),
            ERR_CHUNK => Ok(ErrorBody::Chunk),
            v => Err(Error::Xdr(xdr::Error::BadDiscriminant(v))),
        }
    }

    fn encode(&self, e: &mut Encoder<'_>) -> xdr::Result<()> {
        match *self {
            ErrorBody::Vers { low, high } => {
                e.u32(ERR_VERS)?;
                e.u32(low)?;
                e.u32(high)
            }
            ErrorBody::Chunk => e.u32(ERR_CHUNK),
        }
    }
}

/// Body of a decoded header, by `rdma_proc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body<'a> {
    /// `RDMA_MSG`: the RPC message follows the header inline.
    Msg(Chunks<'a>),
    /// `RDMA_NOMSG`: the RPC message is in a Position-Zero Read chunk (call) or the Reply chunk
    /// (reply).
    NoMsg(Chunks<'a>),
    /// `RDMA_ERROR`.
    Error(ErrorBody),
}

impl<'a> Body<'a> {
    /// The chunk lists, for `RDMA_MSG` and `RDMA_NOMSG`.
    pub fn chunks(&self) -> Option<&Chunks<'a>> {
        match self {
            Body::Msg(c) | Body::NoMsg(c) => Some(c),
            Body::Error(_) => None,
        }
    }

    /// The `rdma_proc` value of this body.
    pub fn proc(&self) -> Proc {
        match self {
            Body::Msg(_) => Proc::Msg,
            Body::NoMsg(_) => Proc::NoMsg,
            Body::Error(_) => Proc::Error,
        }
    }
}

/// A decoded RPC-over-RDMA version 1 transport header (`struct rpcrdma1_msg`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header<'a> {
    /// Transaction id (`rdma_xid`).
    pub xid: u32,
    /// Protocol version (`rdma_vers`); always [`VERSION`] once decoded.
    pub vers: u32,
    /// Credits requested or granted (`rdma_credit`).
    pub credits: u32,
    /// The message body.
    pub body: Body<'a>,
}

/// Result of decoding: the header view and where the RPC message starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decoded<'a> {
    /// The header.
    pub header: Header<'a>,
    /// Offset in the received buffer of the first byte past the transport header: the start of
    /// the RPC message for `RDMA_MSG` (the header length, `hdr_len` in C).
    pub payload_offset: usize,
}

/// Caller-supplied bounds on what a received header may describe.
///
/// Every list is bounded both by these limits and by the received length. The inline payload
/// length that Read chunk positions are checked against is not a limit: it is what follows the
/// header in the received buffer, so pass exactly the bytes received (`wc->byte_len`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most segments in one chunk of any kind (C: `rc_maxpages` for Write and Reply chunks).
    pub max_segments: u32,
    /// Most Read chunks (distinct positions, counting the Position-Zero Read chunk). Together
    /// with `max_segments` this also bounds the Read list to
    /// `max_read_chunks * max_segments` segments.
    pub max_read_chunks: u32,
    /// Most Write chunks in the Write list.
    pub max_write_chunks: u32,
    /// Most bytes in all Read segments together, and in any single Read chunk (C:
    /// `rc_maxpages << PAGE_SHIFT`).
    pub max_read_bytes: u64,
    /// Most bytes in any single Write chunk or Reply chunk.
    pub max_write_bytes: u64,
}

impl Limits {
    /// Chunks per list allowed by [`Limits::svcrdma`].
    pub const MAX_CHUNKS: u32 = 16;

    /// No limit but the received length: for tests and tools, never for a live connection.
    pub const UNLIMITED: Self = Self {
        max_segments: u32::MAX,
        max_read_chunks: u32::MAX,
        max_write_chunks: u32::MAX,
        max_read_bytes: u64::MAX,
        max_write_bytes: u64::MAX,
    };

    /// The limits the C server applies, for a receive context of `maxpages` pages of
    /// `page_size` bytes (`svc_serv_maxpages()`).
    ///
    /// The C server bounds neither the number of Read or Write chunks (only the received
    /// length does) nor Write chunk lengths. Here each list gets at most
    /// [`Limits::MAX_CHUNKS`] chunks, far more than any client puts in one header (the Linux
    /// client sends at most one chunk per list), which keeps Read chunk grouping
    /// (segments × chunks) cheap; a Write or Reply chunk may describe at most 4 GiB, what the
    /// C server's `u32` chunk lengths can hold.
    pub fn svcrdma(maxpages: u32, page_size: u32) -> Self {
        Self {
            max_segments: maxpages,
            max_read_chunks: Self::MAX_CHUNKS,
            max_write_chunks: Self::MAX_CHUNKS,
            // Cannot overflow: both factors are `u32`.
            max_read_bytes: u64::from(maxpages) * u64::from(page_size),
            max_write_bytes: u64::from(u32::MAX),
        }
    }
}

/// What is wrong with a header's chunk lists.
///
/// Received by a responder, each of these must be answered with `ERR_CHUNK` (RFC 8166, section
/// 5.5.2); received by a requester, the matching RPC fails (see [`Error::verdict`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkError {
    /// A Read segment's position is not a multiple of four (RFC 8166, section 3.4.5;
    /// `xdr_count_read_segments()`).
    BadPosition(u32),
    /// A Read chunk starts beyond the inline payload (or beyond the Position-Zero Read chunk)
    /// once earlier chunks are accounted for, each with its XDR round-up
    /// (`pcl_check_read_chunk_positions()`, which forgets the round-up).
    PositionBeyondPayload,
    /// Two Read chunks overlap in the reconstructed RPC message
    /// (`pcl_check_read_chunk_positions()`).
    OverlappingReadChunks,
    /// A chunk has more segments than [`Limits::max_segments`], or the Read list has more
    /// segments than its chunks may hold.
    TooManySegments,
    /// A Write or Reply chunk has no segments (`xdr_check_write_chunk()` rejects a zero
    /// segment count). Version 2 allows an empty Write chunk (not a Reply chunk): see
    /// [`super::v2msg`].
    EmptyChunk,
    /// More Read or Write chunks than [`Limits`] allow.
    TooManyChunks,
    /// A segment, a chunk or the Read list is longer than [`Limits`] allow.
    TooLong,
    /// An `RDMA_NOMSG` call has no Position-Zero Read chunk, so it carries no RPC message.
    MissingPositionZero,
    /// An `RDMA_MSG` call has a Position-Zero Read chunk, which only `RDMA_NOMSG` may carry.
    UnexpectedPositionZero,
    /// A reply carries a Read list (`decode_read_list()` in `rpc_rdma.c`).
    ReadListInReply,
    /// An `RDMA_MSG` reply carries a used (non-zero length) Reply chunk
    /// (`rpcrdma_decode_msg()`).
    ReplyChunkInMsg,
    /// An `RDMA_NOMSG` reply carries a used (non-zero length) Write list
    /// (`rpcrdma_decode_nomsg()`).
    WriteListInNoMsg,
    /// An `RDMA_NOMSG` reply has no used Reply chunk (`rpcrdma_decode_nomsg()`).
    MissingReplyChunk,
}

/// Why a received header was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// Fewer than [`FIXED_SIZE`] bytes: not even the fixed fields are present.
    Short,
    /// `rdma_vers` is not [`VERSION`].
    BadVersion(u32),
    /// `rdma_proc` has an undefined value.
    BadProc(u32),
    /// `RDMA_MSGP`, reserved by RFC 8166 (section 5.6.1).
    Msgp,
    /// `RDMA_DONE`, reserved by RFC 8166 (section 5.6.2).
    Done,
    /// A responder received an `RDMA_ERROR` message.
    UnexpectedError,
    /// The body is malformed XDR: truncated, a list discriminator other than 0 or 1, or an
    /// undefined `rdma_err`.
    Xdr(xdr::Error),
    /// The chunk lists are well-formed XDR but unusable.
    Chunk(ChunkError),
}

impl From<xdr::Error> for Error {
    fn from(e: xdr::Error) -> Self {
        Error::Xdr(e)
    }
}

impl From<ChunkError> for Error {
    fn from(e: ChunkError) -> Self {
        Error::Chunk(e)
    }
}

/// Result of decoding a header.
pub type Result<T> = core::result::Result<T, Error>;

/// Which end of the connection received the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The client, receiving replies.
    Requester,
    /// The server, receiving calls.
    Responder,
}

/// What the transport must do with a message that failed to decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Send `RDMA_ERROR` / `ERR_VERS` with our version range ([`ErrorBody::OUR_VERS`]),
    /// echoing the message's xid and `rdma_vers`.
    ErrVers,
    /// Send `RDMA_ERROR` / `ERR_CHUNK`, echoing the message's xid and `rdma_vers`.
    ErrChunk,
    /// Discard the message silently (repost the Receive).
    Drop,
    /// Requester only: if the xid matches a pending RPC, complete it with `-EIO`
    /// (`rpcrdma_complete_rqst()`); otherwise discard the message.
    Fail,
}

impl Error {
    /// How a receiver in `role` must react to this error.
    ///
    /// Responder (`svc_rdma_recvfrom()`, RFC 8166 section 5.5):
    ///
    /// - [`Error::Short`]: drop, as far as the fixed header goes: no header to echo. The C
    ///   server answers `ERR_CHUNK` echoing the words it got and, for the rest, whatever stale
    ///   bytes sit in its receive buffer; our server answers `ERR_CHUNK` too when the message
    ///   holds an xid (`SvcConn::short_message`), and drops it when it does not.
    /// - [`Error::BadVersion`]: `ERR_VERS` (section 5.5.1).
    /// - [`Error::BadProc`], [`Error::Xdr`], [`Error::Chunk`]: `ERR_CHUNK` (section 5.5.2).
    /// - [`Error::Msgp`]: `ERR_CHUNK` (section 5.6.1; C reaches the same via its `out_proc`).
    /// - [`Error::Done`]: drop, as the C server does; RFC 8166 section 5.6.2 says receivers
    ///   SHOULD answer `ERR_CHUNK`, but no peer sends `RDMA_DONE` and dropping never feeds an
    ///   error loop.
    /// - [`Error::UnexpectedError`]: drop (answering an error with an error could loop).
    ///
    /// Requester (`rpcrdma_reply_handler()`): a short message or a wrong version is dropped
    /// (the credit grant is ignored too); anything else fails the matching RPC with `-EIO`. A
    /// requester never sends `RDMA_ERROR`.
    pub fn verdict(&self, role: Role) -> Verdict {
        match (role, self) {
            (_, Error::Short) => Verdict::Drop,
            (Role::Requester, Error::BadVersion(_)) => Verdict::Drop,
            (Role::Requester, _) => Verdict::Fail,
            (Role::Responder, Error::BadVersion(_)) => Verdict::ErrVers,
            (Role::Responder, Error::Done | Error::UnexpectedError) => Verdict::Drop,
            (
                Role::Responder,
                Error::BadProc(_) | Error::Msgp | Error::Xdr(_) | Error::Chunk(_),
            ) => Verdict::ErrChunk,
        }
    }
}

/// Decodes a Read list, checking per-segment limits as `xdr_count_read_segments()` does.
fn decode_read_list<'a>(
    buf: &'a [u8],
    d: &mut Decoder<'a>,
    limits: &Limits,
) -> Result<(ReadList<'a>, Span)> {
    let start = d.position();
    let max_segments = limits.max_read_chunks.saturating_mul(limits.max_segments);
    let max_bytes = limits.max_read_bytes;
    let mut count = 0u32;
    let mut total = 0u64;
    loop {
        let end = d.position();
        if !d.bool()? {
            let span = Span { start, end, count };
            let raw = buf.get(start..end).ok_or(Error::Xdr(xdr::Error::Short))?;
            return Ok((ReadList { raw, count }, span));
        }
        let rs = ReadSegment::decode(d)?;
        let length = u64::from(rs.segment.length);
        if length > max_bytes {
            return Err(ChunkError::TooLong.into());
        }
        total = total.saturating_add(length);
        if total > max_bytes {
            return Err(ChunkError::TooLong.into());
        }
        if rs.position % 4 != 0 {
            return Err(ChunkError::BadPosition(rs.position).into());
        }
        if count >= max_segments {
            return Err(ChunkError::TooManySegments.into());
        }
        // Cannot overflow: `count < max_segments <= u32::MAX`.
        count += 1;
    }
}

/// Decodes a Write list (`xdr_count_write_chunks()`); its chunks may have no segment if
/// `empty_ok` (version 2's empty Write chunks).
fn decode_write_list<'a>(
    buf: &'a [u8],
    d: &mut Decoder<'a>,
    limits: &Limits,
    empty_ok: bool,
) -> Result<(WriteList<'a>, Span)> {
    let start = d.position();
    let mut count = 0u32;
    loop {
        let end = d.position();
        if !d.bool()? {
            let span = Span { start, end, count };
            let raw = buf.get(start..end).ok_or(Error::Xdr(xdr::Error::Short))?;
            return Ok((WriteList { raw, count }, span));
        }
        if count >= limits.max_write_chunks {
            return Err(ChunkError::TooManyChunks.into());
        }
        WriteChunk::decode(d, limits, empty_ok)?;
        // Cannot overflow: `count < max_write_chunks <= u32::MAX`.
        count += 1;
    }
}

/// Decodes the optional Reply chunk (`xdr_check_reply_chunk()`), with the span of its
/// segments.
fn decode_reply_chunk<'a>(
    d: &mut Decoder<'a>,
    limits: &Limits,
) -> Result<Option<(WriteChunk<'a>, Span)>> {
    if d.bool()? {
        let chunk = WriteChunk::decode(d, limits, false)?;
        let end = d.position();
        let span = Span {
            // Cannot underflow: the segments were just taken from the decoder.
            start: end - chunk.raw.len(),
            end,
            count: chunk.count,
        };
        Ok(Some((chunk, span)))
    } else {
        Ok(None)
    }
}

/// `len` rounded up to a whole number of XDR units: the room a Read chunk of `len` bytes takes
/// in the reconstructed RPC message, its XDR round-up included (RFC 8166, Section 3.4.4.4,
/// "Chunk Roundup").
fn xdr_roundup(len: u64) -> u64 {
    len.saturating_add(WORD as u64 - 1) & !(WORD as u64 - 1)
}

/// Checks the Read chunks of a call against each other and the inline payload, as
/// `pcl_check_read_chunk_positions()` does, plus the chunk-count and per-chunk limits.
///
/// Positions are offsets in the unreduced RPC message (RFC 8166, Section 3.4.5), where each
/// earlier Read chunk takes its length rounded up to a multiple of four: the requester removes
/// the chunk's XDR padding from the inline payload with its data (Section 3.4.4.4). So a
/// chunk's inline offset is its position less the rounded-up lengths of the chunks before it,
/// which must not be beyond the inline payload (or the Position-Zero Read chunk), and a chunk
/// must not start before the rounded-up end of the one before it. (C subtracts the bare
/// lengths, refusing valid calls whose earlier chunks have odd lengths; its placement makes
/// the same mistake, ours rounds up: `server::recv`.)
///
/// The positions of the chunks at non-zero positions are stored in `positions`, ascending, as
/// far as it has room; returns how many there are.
fn check_read_chunks(
    proc: Proc,
    reads: &ReadList<'_>,
    inline_len: u64,
    limits: &Limits,
    positions: &mut [u32],
) -> Result<usize> {
    let max_len = limits.max_read_bytes;
    let pzrc = reads.position_zero();
    match (proc, pzrc.is_some()) {
        (Proc::NoMsg, false) => return Err(ChunkError::MissingPositionZero.into()),
        (Proc::Msg, true) => return Err(ChunkError::UnexpectedPositionZero.into()),
        _ => (),
    }
    let mut nchunks = 0u32;
    let bound = match pzrc {
        Some(pz) => {
            if pz.segment_count() > limits.max_segments {
                return Err(ChunkError::TooManySegments.into());
            }
            let len = pz.length();
            if len > max_len {
                return Err(ChunkError::TooLong.into());
            }
            nchunks = 1;
            len
        }
        None => inline_len,
    };

    // Bytes the earlier chunks take in the reconstructed message, round-up included, and where
    // the last one ends there.
    let mut total_read = 0u64;
    let mut prev_end: Option<u64> = None;
    let mut found = 0usize;
    for chunk in reads.chunks() {
        if nchunks >= limits.max_read_chunks {
            return Err(ChunkError::TooManyChunks.into());
        }
        nchunks += 1;
        if chunk.segment_count() > limits.max_segments {
            return Err(ChunkError::TooManySegments.into());
        }
        let position = u64::from(chunk.position());
        let length = chunk.length();
        if prev_end.is_some_and(|end| end > position) {
            return Err(ChunkError::OverlappingReadChunks.into());
        }
        if position.saturating_sub(total_read) > bound {
            return Err(ChunkError::PositionBeyondPayload.into());
        }
        if length > max_len {
            return Err(ChunkError::TooLong.into());
        }
        let room = xdr_roundup(length);
        total_read = total_read.saturating_add(room);
        prev_end = Some(position.saturating_add(room));
        if let Some(p) = positions.get_mut(found) {
            *p = chunk.position();
        }
        found += 1;
    }
    Ok(found)
}

/// Checks the chunk lists of a reply as `rpcrdma_decode_msg()` and `rpcrdma_decode_nomsg()` do.
fn check_reply_chunks(proc: Proc, chunks: &Chunks<'_>) -> Result<()> {
    if !chunks.reads.is_empty() {
        return Err(ChunkError::ReadListInReply.into());
    }
    let reply_len = chunks.reply.map_or(0, |c| c.length());
    match proc {
        Proc::Msg if reply_len != 0 => Err(ChunkError::ReplyChunkInMsg.into()),
        Proc::NoMsg if chunks.writes.total_length() != 0 => {
            Err(ChunkError::WriteListInNoMsg.into())
        }
        Proc::NoMsg if reply_len == 0 => Err(ChunkError::MissingReplyChunk.into()),
        _ => Ok(()),
    }
}

impl<'a> Header<'a> {
    /// Decodes a header of any role, checking only XDR well-formedness and `limits`.
    ///
    /// Accepts `RDMA_MSG`, `RDMA_NOMSG` and `RDMA_ERROR`; `RDMA_MSGP` and `RDMA_DONE` are
    /// reported as [`Error::Msgp`] and [`Error::Done`] without looking at their bodies. Use
    /// [`Header::decode_call`] or [`Header::decode_reply`] on received messages.
    pub fn decode(buf: &'a [u8], limits: &Limits) -> Result<Decoded<'a>> {
        Self::decode_spans(buf, limits).map(|(d, _)| d)
    }

    /// [`Header::decode`], also returning where the chunk lists are in `buf`.
    fn decode_spans(buf: &'a [u8], limits: &Limits) -> Result<(Decoded<'a>, Option<Spans>)> {
        let fixed = peek(buf).ok_or(Error::Short)?;
        if fixed.vers != VERSION {
            return Err(Error::BadVersion(fixed.vers));
        }
        let proc = Proc::try_from(fixed.proc).map_err(Error::BadProc)?;
        Self::decode_body_at(buf, fixed, proc, FIXED_SIZE, limits)
    }

    /// Decodes the body of a header of type `proc` starting at offset `at` of `buf`, where
    /// version 2 puts its chunk lists (after its prefix and `rdma_inv_handle`): they have the
    /// version 1 encoding, so version 2 Calls and replies are checked and placed with the
    /// version 1 views ([`super::v2msg`]). With `fixed.vers` 2 the rules are version 2's:
    /// a Write chunk may have no segment (an "empty Write chunk", of length zero).
    pub(super) fn decode_body_at(
        buf: &'a [u8],
        fixed: Fixed,
        proc: Proc,
        at: usize,
        limits: &Limits,
    ) -> Result<(Decoded<'a>, Option<Spans>)> {
        let mut d = Decoder::new(buf);
        d.skip(at)?;
        let mut spans = None;
        let body = match proc {
            Proc::Msgp => return Err(Error::Msgp),
            Proc::Done => return Err(Error::Done),
            Proc::Error => Body::Error(ErrorBody::decode(&mut d)?),
            Proc::Msg | Proc::NoMsg => {
                let (reads, read_span) = decode_read_list(buf, &mut d, limits)?;
                // Version 2 has empty Write chunks (draft Section 4.4.6); version 1 does not.
                let empty_writes = fixed.vers == super::v2::VERSION;
                let (writes, write_span) = decode_write_list(buf, &mut d, limits, empty_writes)?;
                let reply = decode_reply_chunk(&mut d, limits)?;
                spans = Some(Spans {
                    reads: read_span,
                    writes: write_span,
                    reply: reply.map(|(_, s)| s),
                });
                let chunks = Chunks {
                    reads,
                    writes,
                    reply: reply.map(|(c, _)| c),
                };
                if proc == Proc::Msg {
                    Body::Msg(chunks)
                } else {
                    Body::NoMsg(chunks)
                }
            }
        };
        let decoded = Decoded {
            header: Header {
                xid: fixed.xid,
                vers: fixed.vers,
                credits: fixed.credits,
                body,
            },
            payload_offset: d.position(),
        };
        Ok((decoded, spans))
    }

    /// Decodes a received call (responder side), as `svc_rdma_xdr_decode_req()` does.
    ///
    /// Checks, in order: the fixed fields are present, the version, the procedure (only
    /// `RDMA_MSG` and `RDMA_NOMSG` are calls; an `RDMA_ERROR` is not even parsed), the three
    /// lists against `limits`, then the Read chunks: an `RDMA_NOMSG` call must have a
    /// Position-Zero Read chunk and an `RDMA_MSG` call must not; chunk count and segments per
    /// chunk; every chunk must start within the inline payload (or the Position-Zero Read
    /// chunk) and chunks must not overlap.
    pub fn decode_call(buf: &'a [u8], limits: &Limits) -> Result<Decoded<'a>> {
        let fixed = peek(buf).ok_or(Error::Short)?;
        if fixed.vers != VERSION {
            return Err(Error::BadVersion(fixed.vers));
        }
        if fixed.proc == RDMA_ERROR {
            return Err(Error::UnexpectedError);
        }
        let decoded = Self::decode(buf, limits)?;
        if let Some(chunks) = decoded.header.body.chunks() {
            let inline_len = buf.len().saturating_sub(decoded.payload_offset);
            let inline_len = u64::try_from(inline_len).unwrap_or(u64::MAX);
            check_read_chunks(
                decoded.header.body.proc(),
                &chunks.reads,
                inline_len,
                limits,
                &mut [],
            )?;
        }
        Ok(decoded)
    }

    /// Decodes a received reply (requester side), as `rpcrdma_reply_handler()` and
    /// `rpcrdma_complete_rqst()` do.
    ///
    /// Besides [`Header::decode`]'s checks: a reply never carries a Read list; an `RDMA_MSG`
    /// reply has no used Reply chunk (an echoed Reply chunk whose segments all have length zero
    /// is accepted, as in C); an `RDMA_NOMSG` reply has a used Reply chunk and no used Write
    /// chunk. `RDMA_ERROR` replies decode to [`Body::Error`]. Set
    /// [`Limits::max_write_chunks`] to the number of Write chunks offered (the Linux client
    /// offers at most one) and [`Limits::max_segments`] to its most segments per chunk.
    pub fn decode_reply(buf: &'a [u8], limits: &Limits) -> Result<Decoded<'a>> {
        let decoded = Self::decode(buf, limits)?;
        Self::check_reply(decoded)
    }

    /// The reply checks of [`Header::decode_reply`] on a decoded header.
    pub(super) fn check_reply(decoded: Decoded<'a>) -> Result<Decoded<'a>> {
        if let Some(chunks) = decoded.header.body.chunks() {
            check_reply_chunks(decoded.header.body.proc(), chunks)?;
        }
        Ok(decoded)
    }
}

/// Where the entries of one chunk list are in a received header: the bytes a view is built on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Span {
    start: usize,
    end: usize,
    count: u32,
}

impl Span {
    /// The bytes of the span in `buf` and its entry count; nothing if `buf` is too short
    /// (another buffer than the one decoded).
    fn get<'a>(&self, buf: &'a [u8]) -> (&'a [u8], u32) {
        match buf.get(self.start..self.end) {
            Some(raw) => (raw, self.count),
            None => (&[], 0),
        }
    }
}

/// The spans of the three chunk lists of an `RDMA_MSG` or `RDMA_NOMSG` header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Spans {
    reads: Span,
    writes: Span,
    reply: Option<Span>,
}

/// Most chunks per list a [`Call`] records.
const CALL_CHUNKS: usize = Limits::MAX_CHUNKS as usize;

/// A received call header, decoded and validated once, as svcrdma's receive context keeps
/// its parsed chunk lists (`rc_read_pcl`, `rc_call_pcl`, `rc_write_pcl`, `rc_reply_pcl`).
///
/// Unlike [`Decoded`] it borrows nothing: it records where each list is in the received
/// buffer and what the transport asks of it again and again (the Write and Reply chunk lengths,
/// the Read chunks' positions), so a responder keeps it with the Receive buffer for the life
/// of the RPC and hands out views ([`Call::chunks`]) without decoding anything again. Its size
/// is fixed: at most [`Limits::MAX_CHUNKS`] chunks per list are accepted, whatever `limits`
/// say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Call {
    /// Transaction id (`rdma_xid`).
    pub xid: u32,
    /// Protocol version (`rdma_vers`) of the header: [`VERSION`], or 2 for a version 2 Call
    /// ([`super::v2msg::decode_call`]), whose chunk lists have the same encoding.
    pub vers: u32,
    /// `rdma_inv_handle` of a version 2 Call (zero for version 1).
    pub inv_handle: u32,
    /// Credits requested (`rdma_credit`).
    pub credits: u32,
    /// [`Proc::Msg`] or [`Proc::NoMsg`].
    pub proc: Proc,
    /// Offset of the RPC message (`RDMA_MSG`) past the transport header.
    pub payload_offset: usize,
    spans: Spans,
    /// `ch_length` of each Write chunk, in list order (`spans.writes.count` of them).
    write_lens: [u64; CALL_CHUNKS],
    /// `ch_length` of the Reply chunk, if offered.
    reply_len: Option<u64>,
    /// Positions of the Read chunks at non-zero positions, ascending (`read_chunks` of them).
    read_positions: [u32; CALL_CHUNKS],
    read_chunks: usize,
    /// Whether there is a Position-Zero Read chunk.
    position_zero: bool,
}

impl Call {
    /// Decodes a received call with the checks of [`Header::decode_call`] (the same errors, in
    /// the same order), with at most [`Limits::MAX_CHUNKS`] Read and Write chunks. `buf` is
    /// the received message, exactly `wc->byte_len` bytes.
    pub fn decode(buf: &[u8], limits: &Limits) -> Result<Self> {
        let fixed = peek(buf).ok_or(Error::Short)?;
        if fixed.vers != VERSION {
            return Err(Error::BadVersion(fixed.vers));
        }
        if fixed.proc == RDMA_ERROR {
            return Err(Error::UnexpectedError);
        }
        let proc = Proc::try_from(fixed.proc).map_err(Error::BadProc)?;
        Self::decode_at(buf, fixed, proc, FIXED_SIZE, limits)
    }

    /// Decodes and checks, as [`Call::decode`], the chunk lists at offset `at` of `buf` of a
    /// Call of type `proc` whose fixed fields are `fixed` (`fixed.vers` is recorded, not
    /// checked; with 2, empty Write chunks are accepted: [`Header::decode_body_at`]).
    pub(super) fn decode_at(
        buf: &[u8],
        fixed: Fixed,
        proc: Proc,
        at: usize,
        limits: &Limits,
    ) -> Result<Self> {
        let limits = Limits {
            max_read_chunks: limits.max_read_chunks.min(Limits::MAX_CHUNKS),
            max_write_chunks: limits.max_write_chunks.min(Limits::MAX_CHUNKS),
            ..*limits
        };
        let (decoded, spans) = match proc {
            Proc::Msgp => return Err(Error::Msgp),
            Proc::Done => return Err(Error::Done),
            Proc::Error => return Err(Error::UnexpectedError),
            Proc::Msg | Proc::NoMsg => Header::decode_body_at(buf, fixed, proc, at, &limits)?,
        };
        let (Some(chunks), Some(spans)) = (decoded.header.body.chunks(), spans) else {
            // Only `RDMA_ERROR` has no chunk lists, and it was refused above.
            return Err(Error::UnexpectedError);
        };
        let proc = decoded.header.body.proc();
        let inline_len = buf.len().saturating_sub(decoded.payload_offset);
        let inline_len = u64::try_from(inline_len).unwrap_or(u64::MAX);
        let mut read_positions = [0u32; CALL_CHUNKS];
        let read_chunks = check_read_chunks(
            proc,
            &chunks.reads,
            inline_len,
            &limits,
            &mut read_positions,
        )?;
        let mut write_lens = [0u64; CALL_CHUNKS];
        for (l, c) in write_lens.iter_mut().zip(chunks.writes.chunks()) {
            *l = c.length();
        }
        Ok(Self {
            xid: fixed.xid,
            vers: fixed.vers,
            inv_handle: 0,
            credits: fixed.credits,
            proc,
            payload_offset: decoded.payload_offset,
            spans,
            write_lens,
            reply_len: chunks.reply.map(|c| c.length()),
            read_positions,
            read_chunks: read_chunks.min(CALL_CHUNKS),
            position_zero: chunks.reads.position_zero().is_some(),
        })
    }

    /// The chunk lists, as views over `buf`, which must be the buffer given to
    /// [`Call::decode`] (with another one the views are empty or meaningless, never out of bounds).
    pub fn chunks<'a>(&self, buf: &'a [u8]) -> Chunks<'a> {
        let (raw, count) = self.spans.reads.get(buf);
        let reads = ReadList { raw, count };
        let (raw, count) = self.spans.writes.get(buf);
        let writes = WriteList { raw, count };
        let reply = self.spans.reply.map(|s| {
            let (raw, count) = s.get(buf);
            WriteChunk { raw, count }
        });
        Chunks {
            reads,
            writes,
            reply,
        }
    }

    /// Number of Write chunks.
    pub fn write_count(&self) -> usize {
        (self.spans.writes.count as usize).min(CALL_CHUNKS)
    }

    /// The length (`ch_length`) of Write chunk `i`, if there is one.
    pub fn write_len(&self, i: usize) -> Option<u64> {
        self.write_lens.get(..self.write_count())?.get(i).copied()
    }

    /// The length (`ch_length`) of the Reply chunk, if one is offered.
    pub fn reply_len(&self) -> Option<u64> {
        self.reply_len
    }

    /// Whether the call has a Read list.
    pub fn has_reads(&self) -> bool {
        self.spans.reads.count != 0
    }

    /// The Position-Zero Read chunk, as a view over `buf` (see [`Call::chunks`]).
    pub fn position_zero<'a>(&self, buf: &'a [u8]) -> Option<ReadChunk<'a>> {
        self.position_zero.then(|| ReadChunk {
            list: self.chunks(buf).reads,
            position: 0,
        })
    }

    /// The Read chunks at non-zero positions, in ascending position order, as views over `buf`
    /// (see [`Call::chunks`]); the same as [`ReadList::chunks`] without grouping again.
    pub fn read_chunks<'a>(&self, buf: &'a [u8]) -> impl Iterator<Item = ReadChunk<'a>> + 'a {
        let list = self.chunks(buf).reads;
        let positions = self.read_positions;
        (0..self.read_chunks).filter_map(move |i| {
            positions
                .get(i)
                .map(|&position| ReadChunk { list, position })
        })
    }
}

/// Encodes the four fixed header fields.
pub fn encode_fixed(
    e: &mut Encoder<'_>,
    xid: u32,
    vers: u32,
    credits: u32,
    proc: Proc,
) -> xdr::Result<()> {
    if e.remaining() < FIXED_SIZE {
        return Err(xdr::Error::Short);
    }
    e.u32(xid)?;
    e.u32(vers)?;
    e.u32(credits)?;
    e.u32(proc.into())
}

/// Encodes a Read list, terminator included (`rpcrdma_encode_read_list()`).
pub fn encode_read_list(e: &mut Encoder<'_>, reads: &[ReadSegment]) -> xdr::Result<()> {
    for rs in reads {
        e.bool(true)?;
        rs.encode(e)?;
    }
    e.bool(false)
}

/// Encodes one Write or Reply chunk: segment count and segments.
fn encode_chunk(e: &mut Encoder<'_>, segments: &[Segment]) -> xdr::Result<()> {
    let count = u32::try_from(segments.len()).map_err(|_| xdr::Error::LengthOverflow)?;
    e.u32(count)?;
    segments.iter().try_for_each(|s| s.encode(e))
}

/// Encodes a Write list of `chunks`, terminator included (`rpcrdma_encode_write_list()`).
pub fn encode_write_list(e: &mut Encoder<'_>, chunks: &[&[Segment]]) -> xdr::Result<()> {
    for chunk in chunks {
        e.bool(true)?;
        encode_chunk(e, chunk)?;
    }
    e.bool(false)
}

/// Encodes the optional Reply chunk (`rpcrdma_encode_reply_chunk()`).
pub fn encode_reply_chunk(e: &mut Encoder<'_>, reply: Option<&[Segment]>) -> xdr::Result<()> {
    match reply {
        Some(segments) => {
            e.bool(true)?;
            encode_chunk(e, segments)
        }
        None => e.bool(false),
    }
}

/// Chunk lists to encode, as plain slices.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lists<'s> {
    /// Read list entries, in order; segments of one chunk share a position.
    pub reads: &'s [ReadSegment],
    /// Write chunks, each a slice of segments.
    pub writes: &'s [&'s [Segment]],
    /// The Reply chunk's segments, if any.
    pub reply: Option<&'s [Segment]>,
}

impl Lists<'_> {
    /// Encoded size of these lists.
    pub fn encoded_len(&self) -> usize {
        let reads = self.reads.len().saturating_mul(READ_ENTRY_SIZE);
        let writes = self.writes.iter().fold(0usize, |n, c| {
            n.saturating_add(2 * WORD)
                .saturating_add(c.len().saturating_mul(SEGMENT_SIZE))
        });
        let reply = self.reply.map_or(0, |c| {
            WORD.saturating_add(c.len().saturating_mul(SEGMENT_SIZE))
        });
        (3 * WORD)
            .saturating_add(reads)
            .saturating_add(writes)
            .saturating_add(reply)
    }
}

/// Encodes an `RDMA_MSG` or `RDMA_NOMSG` header with the given lists (`rpcrdma_marshal_req()`
/// for a requester). Returns the header length.
///
/// `proc` must be [`Proc::Msg`] or [`Proc::NoMsg`] (else [`xdr::Error::BadDiscriminant`]);
/// nothing is written if the header does not fit ([`xdr::Error::Short`], `-EMSGSIZE` in C).
pub fn encode(
    e: &mut Encoder<'_>,
    xid: u32,
    credits: u32,
    proc: Proc,
    lists: &Lists<'_>,
) -> xdr::Result<usize> {
    if !matches!(proc, Proc::Msg | Proc::NoMsg) {
        return Err(xdr::Error::BadDiscriminant(proc.into()));
    }
    let len = FIXED_SIZE.saturating_add(lists.encoded_len());
    if e.remaining() < len {
        return Err(xdr::Error::Short);
    }
    encode_fixed(e, xid, VERSION, credits, proc)?;
    encode_read_list(e, lists.reads)?;
    encode_write_list(e, lists.writes)?;
    encode_reply_chunk(e, lists.reply)?;
    Ok(len)
}

/// Echoes one of the call's chunks with `payload` bytes spread over its segments in order
/// (`svc_rdma_encode_write_chunk()`): each segment's length becomes the part of the payload it
/// holds, zero once the payload is exhausted.
fn encode_used_chunk(e: &mut Encoder<'_>, chunk: &WriteChunk<'_>, payload: u32) -> xdr::Result<()> {
    if u64::from(payload) > chunk.length() {
        return Err(xdr::Error::LengthOverflow);
    }
    e.u32(chunk.segment_count())?;
    let mut remaining = payload;
    for s in chunk.segments() {
        let length = remaining.min(s.length);
        remaining -= length;
        Segment { length, ..s }.encode(e)?;
    }
    Ok(())
}

/// Encoded size of a reply header echoing `call`'s Write list, and its Reply chunk if
/// `reply_chunk_used`.
pub fn reply_header_len(call: &Chunks<'_>, reply_chunk_used: bool) -> usize {
    let chunk_len = |c: WriteChunk<'_>| {
        usize::try_from(c.segment_count())
            .unwrap_or(usize::MAX)
            .saturating_mul(SEGMENT_SIZE)
            .saturating_add(WORD)
    };
    let writes = call.writes.chunks().fold(0usize, |n, c| {
        n.saturating_add(WORD).saturating_add(chunk_len(c))
    });
    let reply = match call.reply {
        Some(c) if reply_chunk_used => chunk_len(c),
        _ => 0,
    };
    HDRLEN_MIN.saturating_add(writes).saturating_add(reply)
}

/// Encodes a responder's reply header (`svc_rdma_sendto()`). Returns the header length.
///
/// The Read list is empty (RPC-over-RDMA version 1 replies never have one). Every Write chunk
/// of `call` is echoed with its segment count unchanged; chunk *i* carries `write_payloads[i]`
/// bytes (zero when the slice is shorter: an unused chunk). With `reply_len` `Some(n)`, the
/// reply was written into `call`'s Reply chunk: the header is `RDMA_NOMSG` and echoes that chunk
/// carrying `n` bytes. With `None` it is `RDMA_MSG` with no Reply chunk and the RPC reply
/// follows inline.
///
/// The C server always returns the reply through an offered Reply chunk; a responder that
/// sends it inline anyway (`None` although `call.reply` is present) omits the Reply chunk,
/// which the C client accepts.
///
/// Errors: [`xdr::Error::LengthOverflow`] if a payload exceeds its chunk or `reply_len` is
/// given without a Reply chunk in `call` (`-E2BIG` in C: answer `ERR_CHUNK` instead), and
/// [`xdr::Error::Short`] if the header does not fit (nothing is written then).
pub fn encode_reply(
    e: &mut Encoder<'_>,
    xid: u32,
    credits: u32,
    call: &Chunks<'_>,
    write_payloads: &[u32],
    reply_len: Option<u32>,
) -> xdr::Result<usize> {
    encode_reply_with(
        e,
        (FIXED_SIZE, &|e, proc| {
            encode_fixed(e, xid, VERSION, credits, proc)
        }),
        call,
        write_payloads,
        reply_len,
    )
}

/// Encodes a header prefix of a given type: what comes before the chunk lists.
pub(super) type PrefixFn<'f> = &'f dyn Fn(&mut Encoder<'_>, Proc) -> xdr::Result<()>;

/// [`encode_reply`] with the fixed fields replaced by `prefix`, which writes `prefix.0` bytes
/// (version 2 writes its prefix and `rdma_inv_handle` there: its chunk lists have the version 1
/// encoding).
pub(super) fn encode_reply_with(
    e: &mut Encoder<'_>,
    prefix: (usize, PrefixFn<'_>),
    call: &Chunks<'_>,
    write_payloads: &[u32],
    reply_len: Option<u32>,
) -> xdr::Result<usize> {
    let (proc, reply) = match (reply_len, call.reply) {
        (None, _) => (Proc::Msg, None),
        (Some(n), Some(c)) => (Proc::NoMsg, Some((c, n))),
        (Some(_), None) => return Err(xdr::Error::LengthOverflow),
    };
    for (i, chunk) in call.writes.chunks().enumerate() {
        let payload = write_payloads.get(i).copied().unwrap_or(0);
        if u64::from(payload) > chunk.length() {
            return Err(xdr::Error::LengthOverflow);
        }
    }
    if let Some((c, n)) = reply {
        if u64::from(n) > c.length() {
            return Err(xdr::Error::LengthOverflow);
        }
    }
    let len = reply_header_len(call, reply.is_some())
        .saturating_sub(FIXED_SIZE)
        .saturating_add(prefix.0);
    if e.remaining() < len {
        return Err(xdr::Error::Short);
    }
    (prefix.1)(e, proc)?;
    e.bool(false)?;
    for (i, chunk) in call.writes.chunks().enumerate() {
        e.bool(true)?;
        encode_used_chunk(e, &chunk, write_payloads.get(i).copied().unwrap_or(0))?;
    }
    e.bool(false)?;
    match reply {
        Some((c, n)) => {
            e.bool(true)?;
            encode_used_chunk(e, &c, n)?;
        }
        None => e.bool(false)?,
    }
    Ok(len)
}

/// Encodes an `RDMA_ERROR` message (`svc_rdma_send_error_msg()`). Returns its length.
///
/// `xid` and `vers` are echoed from the failing message (RFC 8166 section 5.5: `rdma_vers`
/// carries the version of the failing request, even for `ERR_VERS`); `credits` is the
/// responder's current grant.
pub fn encode_error(
    e: &mut Encoder<'_>,
    xid: u32,
    vers: u32,
    credits: u32,
    body: &ErrorBody,
) -> xdr::Result<usize> {
    let len = match body {
        ErrorBody::Vers { .. } => HDRLEN_ERR_VERS,
        ErrorBody::Chunk => HDRLEN_ERR,
    };
    if e.remaining() < len {
        return Err(xdr::Error::Short);
    }
    encode_fixed(e, xid, vers, credits, Proc::Error)?;
    body.encode(e)?;
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::vec::Vec;

    /// RDMA_MSG call, xid 0x01020304, 128 credits, one Read chunk at position 8 made of two
    /// segments, empty Write list, no Reply chunk, 8 bytes of inline payload.
    const MSG_READ_CHUNK: [u8; 84] = [
        0x01, 0x02, 0x03, 0x04, // xid
        0x00, 0x00, 0x00, 0x01, // vers
        0x00, 0x00, 0x00, 0x80, // credits
        0x00, 0x00, 0x00, 0x00, // RDMA_MSG
        0x00, 0x00, 0x00, 0x01, // read list: present
        0x00, 0x00, 0x00, 0x08, // position
        0x11, 0x11, 0x11, 0x11, // handle
        0x00, 0x00, 0x10, 0x00, // length 4096
        0x00, 0x00, 0x00, 0x00, 0xa0, 0x00, 0x00, 0x00, // offset
        0x00, 0x00, 0x00, 0x01, // read list: present
        0x00, 0x00, 0x00, 0x08, // position
        0x22, 0x22, 0x22, 0x22, // handle
        0x00, 0x00, 0x02, 0x00, // length 512
        0x00, 0x00, 0x00, 0x00, 0xb0, 0x00, 0x00, 0x00, // offset
        0x00, 0x00, 0x00, 0x00, // read list: end
        0x00, 0x00, 0x00, 0x00, // write list: end
        0x00, 0x00, 0x00, 0x00, // reply chunk: absent
        0xde, 0xad, 0xbe, 0xef, 0xca, 0xfe, 0xba, 0xbe, // RPC message
    ];

    /// RDMA_MSG call, xid 42, 32 credits, one Write chunk of two segments (data and XDR pad).
    const MSG_WRITE_LIST: [u8; 68] = [
        0x00, 0x00, 0x00, 0x2a, // xid
        0x00, 0x00, 0x00, 0x01, // vers
        0x00, 0x00, 0x00, 0x20, // credits
        0x00, 0x00, 0x00, 0x00, // RDMA_MSG
        0x00, 0x00, 0x00, 0x00, // read list: end
        0x00, 0x00, 0x00, 0x01, // write list: present
        0x00, 0x00, 0x00, 0x02, // segment count
        0x33, 0x33, 0x33, 0x33, // handle
        0x00, 0x00, 0x80, 0x00, // length 32768
        0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, // offset
        0x44, 0x44, 0x44, 0x44, // handle
        0x00, 0x00, 0x00, 0x04, // length 4
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfc, // offset
        0x00, 0x00, 0x00, 0x00, // write list: end
        0x00, 0x00, 0x00, 0x00, // reply chunk: absent
    ];

    /// RDMA_NOMSG call, xid 7: Position-Zero Read chunk of one segment and a Reply chunk of
    /// one segment.
    const NOMSG_REPLY_CHUNK: [u8; 72] = [
        0x00, 0x00, 0x00, 0x07, // xid
        0x00, 0x00, 0x00, 0x01, // vers
        0x00, 0x00, 0x00, 0x80, // credits
        0x00, 0x00, 0x00, 0x01, // RDMA_NOMSG
        0x00, 0x00, 0x00, 0x01, // read list: present
        0x00, 0x00, 0x00, 0x00, // position zero
        0x55, 0x55, 0x55, 0x55, // handle
        0x00, 0x00, 0x08, 0x00, // length 2048
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, // offset
        0x00, 0x00, 0x00, 0x00, // read list: end
        0x00, 0x00, 0x00, 0x00, // write list: end
        0x00, 0x00, 0x00, 0x01, // reply chunk: present
        0x00, 0x00, 0x00, 0x01, // segment count
        0x66, 0x66, 0x66, 0x66, // handle
        0x00, 0x01, 0x00, 0x00, // length 65536
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x20, 0x00, // offset
    ];

    /// RDMA_ERROR / ERR_VERS answering a version-2 message with xid 0xdeadbeef.
    const ERROR_VERS: [u8; 28] = [
        0xde, 0xad, 0xbe, 0xef, // xid (echoed)
        0x00, 0x00, 0x00, 0x02, // vers (echoed)
        0x00, 0x00, 0x00, 0x80, // credits
        0x00, 0x00, 0x00, 0x04, // RDMA_ERROR
        0x00, 0x00, 0x00, 0x01, // ERR_VERS
        0x00, 0x00, 0x00, 0x01, // low
        0x00, 0x00, 0x00, 0x01, // high
    ];

    /// RDMA_ERROR / ERR_CHUNK for xid 7.
    const ERROR_CHUNK: [u8; 20] = [
        0x00, 0x00, 0x00, 0x07, // xid
        0x00, 0x00, 0x00, 0x01, // vers
        0x00, 0x00, 0x00, 0x80, // credits
        0x00, 0x00, 0x00, 0x04, // RDMA_ERROR
        0x00, 0x00, 0x00, 0x02, // ERR_CHUNK
    ];

    fn words(w: &[u32]) -> Vec<u8> {
        w.iter().flat_map(|v| v.to_be_bytes()).collect()
    }

    fn seg(handle: u32, length: u32, offset: u64) -> Segment {
        Segment {
            handle,
            length,
            offset,
        }
    }

    fn call(buf: &[u8]) -> Result<Decoded<'_>> {
        Header::decode_call(buf, &Limits::svcrdma(260, 4096))
    }

    fn reply(buf: &[u8]) -> Result<Decoded<'_>> {
        Header::decode_reply(buf, &Limits::svcrdma(260, 4096))
    }

    /// Header of an RDMA_MSG/NOMSG with xid 1 followed by `rest`.
    fn msg(proc: u32, rest: &[u32]) -> Vec<u8> {
        let mut w = std::vec![1, 1, 16, proc];
        w.extend_from_slice(rest);
        words(&w)
    }

    #[test]
    fn golden_read_chunk_of_two_segments() {
        let d = call(&MSG_READ_CHUNK).unwrap();
        assert_eq!(d.payload_offset, 76);
        assert_eq!(
            &MSG_READ_CHUNK[d.payload_offset..],
            &[0xde, 0xad, 0xbe, 0xef, 0xca, 0xfe, 0xba, 0xbe]
        );
        let h = d.header;
        assert_eq!((h.xid, h.vers, h.credits), (0x0102_0304, 1, 128));
        let Body::Msg(c) = h.body else {
            panic!("not RDMA_MSG")
        };
        assert_eq!(c.reads.len(), 2);
        assert!(c.writes.is_empty());
        assert!(c.reply.is_none());
        assert!(c.reads.position_zero().is_none());
        let chunks: Vec<_> = c.reads.chunks().collect();
        assert_eq!(chunks.len(), 1);
        assert_eq!(chunks[0].position(), 8);
        assert_eq!(chunks[0].segment_count(), 2);
        assert_eq!(chunks[0].length(), 4096 + 512);
        let segs: Vec<_> = chunks[0].segments().collect();
        assert_eq!(
            segs,
            [
                seg(0x1111_1111, 4096, 0xa000_0000),
                seg(0x2222_2222, 512, 0xb000_0000)
            ]
        );

        // The encoder produces the same bytes.
        let reads = [
            ReadSegment {
                position: 8,
                segment: segs[0],
            },
            ReadSegment {
                position: 8,
                segment: segs[1],
            },
        ];
        let lists = Lists {
            reads: &reads,
            ..Lists::default()
        };
        let mut b = [0u8; 76];
        let mut e = Encoder::new(&mut b);
        assert_eq!(encode(&mut e, 0x0102_0304, 128, Proc::Msg, &lists), Ok(76));
        assert_eq!(e.finish(), 76);
        assert_eq!(b[..], MSG_READ_CHUNK[..76]);
    }

    #[test]
    fn golden_write_list() {
        let d = call(&MSG_WRITE_LIST).unwrap();
        assert_eq!(d.payload_offset, 68);
        let Body::Msg(c) = d.header.body else {
            panic!("not RDMA_MSG")
        };
        assert!(c.reads.is_empty());
        assert_eq!(c.writes.len(), 1);
        let wc = c.writes.chunks().next().unwrap();
        assert_eq!(wc.segment_count(), 2);
        assert_eq!(wc.length(), 32772);
        let segs: Vec<_> = wc.segments().collect();
        let expect = [
            seg(0x3333_3333, 32768, 1 << 32),
            seg(0x4444_4444, 4, 0xffff_ffff_ffff_fffc),
        ];
        assert_eq!(segs, expect);

        let chunk: &[Segment] = &expect;
        let lists = Lists {
            writes: &[chunk],
            ..Lists::default()
        };
        let mut b = [0u8; 68];
        let mut e = Encoder::new(&mut b);
        assert_eq!(encode(&mut e, 42, 32, Proc::Msg, &lists), Ok(68));
        assert_eq!(b, MSG_WRITE_LIST);
    }

    #[test]
    fn golden_nomsg_with_reply_chunk() {
        let d = call(&NOMSG_REPLY_CHUNK).unwrap();
        assert_eq!(d.payload_offset, NOMSG_REPLY_CHUNK.len());
        let Body::NoMsg(c) = d.header.body else {
            panic!("not RDMA_NOMSG")
        };
        let pz = c.reads.position_zero().unwrap();
        assert_eq!(pz.position(), 0);
        assert_eq!(pz.length(), 2048);
        assert_eq!(c.reads.chunks().count(), 0);
        let rc = c.reply.unwrap();
        assert_eq!(
            rc.segments().collect::<Vec<_>>(),
            [seg(0x6666_6666, 65536, 0x2000)]
        );

        let reads = [ReadSegment {
            position: 0,
            segment: seg(0x5555_5555, 2048, 0x1000),
        }];
        let reply = [seg(0x6666_6666, 65536, 0x2000)];
        let lists = Lists {
            reads: &reads,
            writes: &[],
            reply: Some(&reply),
        };
        assert_eq!(lists.encoded_len() + FIXED_SIZE, NOMSG_REPLY_CHUNK.len());
        let mut b = [0u8; 72];
        let mut e = Encoder::new(&mut b);
        encode(&mut e, 7, 128, Proc::NoMsg, &lists).unwrap();
        assert_eq!(b, NOMSG_REPLY_CHUNK);
    }

    #[test]
    fn golden_errors() {
        let mut b = [0u8; 28];
        let mut e = Encoder::new(&mut b);
        assert_eq!(
            encode_error(&mut e, 0xdead_beef, 2, 128, &ErrorBody::OUR_VERS),
            Ok(28)
        );
        assert_eq!(b, ERROR_VERS);
        let mut b = [0u8; 20];
        let mut e = Encoder::new(&mut b);
        assert_eq!(encode_error(&mut e, 7, 1, 128, &ErrorBody::Chunk), Ok(20));
        assert_eq!(b, ERROR_CHUNK);
        let mut small = [0u8; 24];
        assert_eq!(
            encode_error(&mut Encoder::new(&mut small), 1, 1, 1, &ErrorBody::OUR_VERS),
            Err(xdr::Error::Short)
        );

        // A requester decodes both; ERR_VERS carries a foreign version, so only the generic
        // decoder applies to it.
        assert_eq!(
            Header::decode_reply(&ERROR_VERS, &Limits::UNLIMITED),
            Err(Error::BadVersion(2))
        );
        let mut v1 = ERROR_VERS;
        v1[7] = 1;
        let d = reply(&v1).unwrap();
        assert_eq!(
            d.header.body,
            Body::Error(ErrorBody::Vers { low: 1, high: 1 })
        );
        assert_eq!(d.payload_offset, 28);
        let d = reply(&ERROR_CHUNK).unwrap();
        assert_eq!(d.header.body, Body::Error(ErrorBody::Chunk));
        assert_eq!(d.header.xid, 7);
        // A responder never parses one.
        assert_eq!(call(&ERROR_CHUNK), Err(Error::UnexpectedError));
    }

    #[test]
    fn malformed_error_bodies() {
        let b = words(&[1, 1, 1, RDMA_ERROR, 3]);
        assert_eq!(reply(&b), Err(Error::Xdr(xdr::Error::BadDiscriminant(3))));
        let b = words(&[1, 1, 1, RDMA_ERROR, ERR_VERS, 1]);
        assert_eq!(reply(&b), Err(Error::Xdr(xdr::Error::Short)));
        let b = words(&[1, 1, 1, RDMA_ERROR]);
        assert_eq!(reply(&b), Err(Error::Xdr(xdr::Error::Short)));
        assert_eq!(
            Error::Xdr(xdr::Error::Short).verdict(Role::Requester),
            Verdict::Fail
        );
    }

    #[test]
    fn peek_fixed_fields() {
        assert_eq!(peek(&MSG_READ_CHUNK[..15]), None);
        assert_eq!(
            peek(&MSG_READ_CHUNK[..16]),
            Some(Fixed {
                xid: 0x0102_0304,
                vers: 1,
                credits: 128,
                proc: RDMA_MSG,
            })
        );
        assert_eq!(
            peek(&ERROR_VERS).map(|f| (f.vers, f.proc)),
            Some((2, RDMA_ERROR))
        );
    }

    #[test]
    fn fixed_field_errors() {
        for n in 0..FIXED_SIZE {
            assert_eq!(call(&MSG_READ_CHUNK[..n]), Err(Error::Short));
            assert_eq!(reply(&MSG_READ_CHUNK[..n]), Err(Error::Short));
        }
        let b = words(&[1, 2, 1, RDMA_MSG, 0, 0, 0]);
        assert_eq!(call(&b), Err(Error::BadVersion(2)));
        // The version is checked before the procedure, as in C.
        let b = words(&[1, 0, 1, 99]);
        assert_eq!(call(&b), Err(Error::BadVersion(0)));
        let b = words(&[1, 1, 1, 5, 0, 0, 0]);
        assert_eq!(call(&b), Err(Error::BadProc(5)));
        assert_eq!(reply(&b), Err(Error::BadProc(5)));
        let b = words(&[1, 1, 1, RDMA_MSGP, 0, 0, 0, 0, 0]);
        assert_eq!(call(&b), Err(Error::Msgp));
        assert_eq!(reply(&b), Err(Error::Msgp));
        let b = words(&[1, 1, 1, RDMA_DONE]);
        assert_eq!(call(&b), Err(Error::Done));
        assert_eq!(reply(&b), Err(Error::Done));
    }

    #[test]
    fn verdicts() {
        use Role::*;
        use Verdict::*;
        let chunk = Error::Chunk(ChunkError::TooLong);
        let cases = [
            (Error::Short, Drop, Drop),
            (Error::BadVersion(2), ErrVers, Drop),
            (Error::BadProc(9), ErrChunk, Fail),
            (Error::Msgp, ErrChunk, Fail),
            (Error::Done, Drop, Fail),
            (Error::UnexpectedError, Drop, Fail),
            (Error::Xdr(xdr::Error::Short), ErrChunk, Fail),
            (chunk, ErrChunk, Fail),
        ];
        for (e, responder, requester) in cases {
            assert_eq!(e.verdict(Responder), responder, "{e:?}");
            assert_eq!(e.verdict(Requester), requester, "{e:?}");
        }
    }

    #[test]
    fn truncated_lists() {
        for n in FIXED_SIZE..76 {
            if n % 4 == 0 {
                assert_eq!(
                    call(&MSG_READ_CHUNK[..n]),
                    Err(Error::Xdr(xdr::Error::Short)),
                    "{n}"
                );
            }
        }
        for n in FIXED_SIZE..MSG_WRITE_LIST.len() {
            assert_eq!(
                call(&MSG_WRITE_LIST[..n]),
                Err(Error::Xdr(xdr::Error::Short)),
                "{n}"
            );
        }
        for n in FIXED_SIZE..NOMSG_REPLY_CHUNK.len() {
            assert_eq!(
                call(&NOMSG_REPLY_CHUNK[..n]),
                Err(Error::Xdr(xdr::Error::Short)),
                "{n}"
            );
        }
    }

    #[test]
    fn bad_list_discriminator() {
        // C treats any non-zero word as "present"; XDR (and this decoder) only accepts 1.
        assert_eq!(
            call(&msg(RDMA_MSG, &[2, 0, 0])),
            Err(Error::Xdr(xdr::Error::BadDiscriminant(2)))
        );
        assert_eq!(
            call(&msg(RDMA_MSG, &[0, 0xffff_ffff, 0])),
            Err(Error::Xdr(xdr::Error::BadDiscriminant(0xffff_ffff)))
        );
        assert_eq!(
            call(&msg(RDMA_MSG, &[0, 0, 7])),
            Err(Error::Xdr(xdr::Error::BadDiscriminant(7)))
        );
    }

    #[test]
    fn empty_header() {
        let b = msg(RDMA_MSG, &[0, 0, 0]);
        let d = call(&b).unwrap();
        assert_eq!(d.payload_offset, HDRLEN_MIN);
        assert_eq!(d.header.body, Body::Msg(Chunks::default()));
    }

    #[test]
    fn bad_position() {
        let b = msg(RDMA_MSG, &[1, 6, 1, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(call(&b), Err(Error::Chunk(ChunkError::BadPosition(6))));
    }

    #[test]
    fn position_beyond_payload() {
        // Position 8 with 8 inline bytes is fine (golden); with 4 it is beyond.
        assert_eq!(
            call(&MSG_READ_CHUNK[..80]),
            Err(Error::Chunk(ChunkError::PositionBeyondPayload))
        );
        // With a Position-Zero Read chunk the bound is that chunk's length.
        let b = msg(
            RDMA_NOMSG,
            &[1, 0, 1, 100, 0, 0, 1, 104, 2, 8, 0, 0, 0, 0, 0],
        );
        assert_eq!(
            call(&b),
            Err(Error::Chunk(ChunkError::PositionBeyondPayload))
        );
        let b = msg(
            RDMA_NOMSG,
            &[1, 0, 1, 100, 0, 0, 1, 100, 2, 8, 0, 0, 0, 0, 0],
        );
        assert!(call(&b).is_ok());
        // A later chunk's position counts the bytes of earlier chunks.
        let mut w = std::vec![1, 4, 1, 100, 0, 0, 1, 108, 2, 8, 0, 0, 0, 0, 0];
        w.extend_from_slice(&[0; 2]);
        let b = msg(RDMA_MSG, &w);
        assert!(call(&b).is_ok());
        let mut w = std::vec![1, 4, 1, 100, 0, 0, 1, 112, 2, 8, 0, 0, 0, 0, 0];
        w.extend_from_slice(&[0; 2]);
        assert_eq!(
            call(&msg(RDMA_MSG, &w)),
            Err(Error::Chunk(ChunkError::PositionBeyondPayload))
        );
    }

    #[test]
    fn read_positions_count_xdr_round_up() {
        // A Read chunk of 5 bytes at position 4, then one of 8 bytes at `second`, with `inline`
        // bytes of RPC message inline. The first chunk takes 8 bytes of the reconstructed
        // message (its round-up), so the inline part resumes at 12 (RFC 8166).
        let with = |second: u32, inline: u32| {
            let mut w = std::vec![1, 4, 1, 5, 0, 0, 1, second, 2, 8, 0, 0, 0, 0, 0];
            w.extend(core::iter::repeat_n(0, inline as usize / 4));
            msg(RDMA_MSG, &w)
        };
        // Inline: 4 bytes before the first chunk, 4 between the two, none after. C (and this
        // check before) subtracted 5 for the first chunk and found 11 inline bytes needed.
        let b = with(16, 8);
        assert!(call(&b).is_ok());
        let c = Call::decode(&b, &Limits::svcrdma(260, 4096)).unwrap();
        let chunks: Vec<_> = c
            .read_chunks(&b)
            .map(|r| (r.position(), r.length()))
            .collect();
        assert_eq!(chunks, [(4, 5), (16, 8)]);
        // Right after the first chunk's round-up, and with trailing inline bytes.
        assert!(call(&with(12, 8)).is_ok());
        assert!(call(&with(16, 12)).is_ok());
        // Still refused: beyond the inline part once both chunks' room is counted...
        assert_eq!(
            call(&with(20, 8)),
            Err(Error::Chunk(ChunkError::PositionBeyondPayload))
        );
        assert_eq!(
            Call::decode(&with(20, 8), &Limits::svcrdma(260, 4096)),
            Err(Error::Chunk(ChunkError::PositionBeyondPayload))
        );
        // ... and inside the first chunk's round-up, which is the first chunk's.
        assert_eq!(
            call(&with(8, 8)),
            Err(Error::Chunk(ChunkError::OverlappingReadChunks))
        );
        // The same within a Position-Zero Read chunk of 100 bytes.
        let pz = |second: u32| {
            msg(
                RDMA_NOMSG,
                &[
                    1, 0, 1, 100, 0, 0, 1, 4, 2, 5, 0, 0, 1, second, 3, 8, 0, 0, 0, 0, 0,
                ],
            )
        };
        assert!(call(&pz(108)).is_ok());
        assert_eq!(
            call(&pz(112)),
            Err(Error::Chunk(ChunkError::PositionBeyondPayload))
        );
    }

    #[test]
    fn overlapping_read_chunks() {
        // Chunk at 4 of 100 bytes overlaps a chunk at 100; listed in reverse order to check
        // that chunks are sorted by position.
        let mut w = std::vec![1, 100, 2, 8, 0, 0, 1, 4, 1, 100, 0, 0, 0, 0, 0];
        w.extend_from_slice(&[0; 32]);
        let b = msg(RDMA_MSG, &w);
        assert_eq!(
            call(&b),
            Err(Error::Chunk(ChunkError::OverlappingReadChunks))
        );
        let Body::Msg(c) = Header::decode(&b, &Limits::UNLIMITED).unwrap().header.body else {
            panic!()
        };
        let positions: Vec<_> = c.reads.chunks().map(|c| c.position()).collect();
        assert_eq!(positions, [4, 100]);
    }

    #[test]
    fn read_chunks_grouped_by_position() {
        // Segments at 8, 4, 8: two chunks, 4 then 8, the latter with two segments in list order.
        let mut w = std::vec![
            1, 8, 10, 2, 0, 0, //
            1, 4, 11, 4, 0, 0, //
            1, 8, 12, 2, 0, 0, //
            0, 0, 0,
        ];
        w.extend_from_slice(&[0; 4]);
        let b = msg(RDMA_MSG, &w);
        let Body::Msg(c) = call(&b).unwrap().header.body else {
            panic!()
        };
        let chunks: Vec<_> = c.reads.chunks().collect();
        assert_eq!(chunks.len(), 2);
        assert_eq!((chunks[0].position(), chunks[0].length()), (4, 4));
        assert_eq!((chunks[1].position(), chunks[1].segment_count()), (8, 2));
        let handles: Vec<_> = chunks[1].segments().map(|s| s.handle).collect();
        assert_eq!(handles, [10, 12]);
        assert_eq!(c.reads.total_length(), 8);
    }

    #[test]
    fn too_many_segments() {
        let limits = Limits {
            max_segments: 2,
            ..Limits::UNLIMITED
        };
        // Write chunk of three segments.
        let mut w = std::vec![0, 1, 3];
        w.extend_from_slice(&[0; 12]);
        w.extend_from_slice(&[0, 0]);
        let b = msg(RDMA_MSG, &w);
        assert_eq!(
            Header::decode_call(&b, &limits),
            Err(Error::Chunk(ChunkError::TooManySegments))
        );
        // A hostile count is rejected before the input is even looked at.
        let b = msg(RDMA_MSG, &[0, 1, u32::MAX]);
        assert_eq!(
            Header::decode_call(&b, &limits),
            Err(Error::Chunk(ChunkError::TooManySegments))
        );
        assert_eq!(
            Header::decode_call(&b, &Limits::UNLIMITED),
            Err(Error::Xdr(xdr::Error::Short))
        );
        // Read chunk of three segments.
        let mut w = Vec::new();
        for _ in 0..3 {
            w.extend_from_slice(&[1, 4, 1, 1, 0, 0]);
        }
        w.extend_from_slice(&[0, 0, 0, 0, 0]);
        let b = msg(RDMA_MSG, &w);
        assert_eq!(
            Header::decode_call(&b, &limits),
            Err(Error::Chunk(ChunkError::TooManySegments))
        );
        // More Read segments than max_read_chunks * max_segments.
        let limits = Limits {
            max_segments: 1,
            max_read_chunks: 2,
            ..Limits::UNLIMITED
        };
        assert_eq!(
            Header::decode_call(&b, &limits),
            Err(Error::Chunk(ChunkError::TooManySegments))
        );
    }

    #[test]
    fn empty_chunk() {
        let b = msg(RDMA_MSG, &[0, 1, 0, 0, 0]);
        assert_eq!(call(&b), Err(Error::Chunk(ChunkError::EmptyChunk)));
        let b = msg(RDMA_MSG, &[0, 0, 1, 0]);
        assert_eq!(call(&b), Err(Error::Chunk(ChunkError::EmptyChunk)));
    }

    #[test]
    fn too_many_chunks() {
        // Linux-client shape: one Write chunk, a Read chunk beside the Position-Zero one.
        let linux = Limits {
            max_read_chunks: 2,
            max_write_chunks: 1,
            ..Limits::svcrdma(260, 4096)
        };
        // Two Write chunks.
        let b = msg(RDMA_MSG, &[0, 1, 1, 1, 1, 0, 0, 1, 1, 2, 1, 0, 0, 0, 0]);
        assert_eq!(
            Header::decode_call(&b, &linux),
            Err(Error::Chunk(ChunkError::TooManyChunks))
        );
        assert!(call(&b).is_ok());
        // Three Read chunks.
        let mut w = Vec::new();
        for p in [4, 8, 12] {
            w.extend_from_slice(&[1, p, 1, 0, 0, 0]);
        }
        w.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0]);
        let b = msg(RDMA_MSG, &w);
        assert_eq!(
            Header::decode_call(&b, &linux),
            Err(Error::Chunk(ChunkError::TooManyChunks))
        );
        assert!(call(&b).is_ok());
        // Seventeen Write chunks exceed even the C-shaped limits.
        let mut w = std::vec![0];
        for _ in 0..17 {
            w.extend_from_slice(&[1, 1, 1, 0, 0, 0]);
        }
        w.extend_from_slice(&[0, 0]);
        let b = msg(RDMA_MSG, &w);
        assert_eq!(call(&b), Err(Error::Chunk(ChunkError::TooManyChunks)));
    }

    #[test]
    fn too_long() {
        let limits = Limits {
            max_read_bytes: 4096,
            max_write_bytes: 8192,
            ..Limits::UNLIMITED
        };
        // One Read segment over the limit.
        let b = msg(RDMA_NOMSG, &[1, 0, 1, 4097, 0, 0, 0, 0, 0]);
        assert_eq!(
            Header::decode_call(&b, &limits),
            Err(Error::Chunk(ChunkError::TooLong))
        );
        // Two that are each fine but not together.
        let b = msg(
            RDMA_NOMSG,
            &[1, 0, 1, 4000, 0, 0, 1, 0, 2, 100, 0, 0, 0, 0, 0],
        );
        assert_eq!(
            Header::decode_call(&b, &limits),
            Err(Error::Chunk(ChunkError::TooLong))
        );
        // Write chunk over the limit.
        let b = msg(RDMA_MSG, &[0, 1, 2, 1, 8192, 0, 0, 2, 1, 0, 0, 0, 0]);
        assert_eq!(
            Header::decode_call(&b, &limits),
            Err(Error::Chunk(ChunkError::TooLong))
        );
        // Reply chunk over the limit, with the u32 sum overflowing.
        let b = msg(RDMA_MSG, &[0, 0, 1, 2, 1, u32::MAX, 0, 0, 2, 1, 0, 0]);
        assert_eq!(
            Header::decode_call(&b, &limits),
            Err(Error::Chunk(ChunkError::TooLong))
        );
    }

    #[test]
    fn position_zero_rules() {
        let b = msg(RDMA_NOMSG, &[0, 0, 0]);
        assert_eq!(call(&b), Err(Error::Chunk(ChunkError::MissingPositionZero)));
        let b = msg(RDMA_MSG, &[1, 0, 1, 4, 0, 0, 0, 0, 0]);
        assert_eq!(
            call(&b),
            Err(Error::Chunk(ChunkError::UnexpectedPositionZero))
        );
        // Several position-zero segments form one chunk.
        let b = msg(RDMA_NOMSG, &[1, 0, 1, 4, 0, 0, 1, 0, 2, 4, 0, 0, 0, 0, 0]);
        let Body::NoMsg(c) = call(&b).unwrap().header.body else {
            panic!()
        };
        let pz = c.reads.position_zero().unwrap();
        assert_eq!((pz.segment_count(), pz.length()), (2, 8));
    }

    #[test]
    fn reply_rules() {
        // A reply never carries a Read list.
        let b = msg(RDMA_MSG, &[1, 4, 1, 4, 0, 0, 0, 0, 0]);
        assert_eq!(reply(&b), Err(Error::Chunk(ChunkError::ReadListInReply)));
        // RDMA_MSG with a used Reply chunk.
        let b = msg(RDMA_MSG, &[0, 0, 1, 1, 1, 8, 0, 0]);
        assert_eq!(reply(&b), Err(Error::Chunk(ChunkError::ReplyChunkInMsg)));
        // ... but an unused (zero-length) one is accepted, as rpcrdma_decode_msg() does.
        let b = msg(RDMA_MSG, &[0, 0, 1, 1, 1, 0, 0, 0]);
        assert!(reply(&b).is_ok());
        // RDMA_NOMSG with a used Write chunk.
        let b = msg(RDMA_NOMSG, &[0, 1, 1, 1, 4, 0, 0, 0, 1, 1, 1, 8, 0, 0]);
        assert_eq!(reply(&b), Err(Error::Chunk(ChunkError::WriteListInNoMsg)));
        // RDMA_NOMSG without a used Reply chunk.
        let b = msg(RDMA_NOMSG, &[0, 0, 0]);
        assert_eq!(reply(&b), Err(Error::Chunk(ChunkError::MissingReplyChunk)));
        let b = msg(RDMA_NOMSG, &[0, 0, 1, 1, 1, 0, 0, 0]);
        assert_eq!(reply(&b), Err(Error::Chunk(ChunkError::MissingReplyChunk)));
        // Valid RDMA_NOMSG reply.
        let b = msg(RDMA_NOMSG, &[0, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 8, 0, 0]);
        let d = reply(&b).unwrap();
        assert_eq!(d.header.body.chunks().unwrap().reply.unwrap().length(), 8);
        // RDMA_MSG reply with a Write chunk, and more Write chunks than offered.
        let b = msg(RDMA_MSG, &[0, 1, 1, 1, 100, 0, 0, 0, 0]);
        assert_eq!(reply(&b).unwrap().payload_offset, 52);
        let b = msg(RDMA_MSG, &[0, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0]);
        let offered_one = Limits {
            max_write_chunks: 1,
            ..Limits::svcrdma(260, 4096)
        };
        assert_eq!(
            Header::decode_reply(&b, &offered_one),
            Err(Error::Chunk(ChunkError::TooManyChunks))
        );
    }

    #[test]
    fn server_reply_echoes_write_chunk_with_actual_lengths() {
        let Body::Msg(c) = call(&MSG_WRITE_LIST).unwrap().header.body else {
            panic!()
        };
        // 100 bytes written: the first segment says 100, the pad segment 0.
        let mut b = [0u8; 68];
        let mut e = Encoder::new(&mut b);
        assert_eq!(encode_reply(&mut e, 42, 128, &c, &[100], None), Ok(68));
        let expect = words(&[
            42,
            1,
            128,
            RDMA_MSG,
            0, // fixed, empty read list
            1,
            2,
            0x3333_3333,
            100,
            1,
            0,
            0x4444_4444,
            0,
            0xffff_ffff,
            0xffff_fffc, // chunk
            0,
            0, // end of write list, no reply chunk
        ]);
        assert_eq!(b[..], expect[..]);
        // The requester accepts it and sees 100 bytes.
        let d = reply(&b).unwrap();
        assert_eq!(d.header.body.chunks().unwrap().writes.total_length(), 100);
        // Unused chunk: every segment length zero.
        let mut b = [0u8; 68];
        encode_reply(&mut Encoder::new(&mut b), 42, 128, &c, &[], None).unwrap();
        assert_eq!(
            reply(&b)
                .unwrap()
                .header
                .body
                .chunks()
                .unwrap()
                .writes
                .total_length(),
            0
        );
        // Payload spanning both segments, then too long.
        let mut b = [0u8; 68];
        encode_reply(&mut Encoder::new(&mut b), 42, 128, &c, &[32770], None).unwrap();
        let Body::Msg(r) = reply(&b).unwrap().header.body else {
            panic!()
        };
        let lens: Vec<_> = r
            .writes
            .chunks()
            .next()
            .unwrap()
            .segments()
            .map(|s| s.length)
            .collect();
        assert_eq!(lens, [32768, 2]);
        assert_eq!(
            encode_reply(&mut Encoder::new(&mut b), 42, 128, &c, &[32773], None),
            Err(xdr::Error::LengthOverflow)
        );
        // No room: nothing written.
        let mut small = [0xaau8; 64];
        let mut e = Encoder::new(&mut small);
        assert_eq!(
            encode_reply(&mut e, 42, 128, &c, &[1], None),
            Err(xdr::Error::Short)
        );
        assert_eq!(e.position(), 0);
        // A Reply chunk length without a Reply chunk.
        assert_eq!(
            encode_reply(&mut Encoder::new(&mut b), 42, 128, &c, &[], Some(1)),
            Err(xdr::Error::LengthOverflow)
        );
    }

    #[test]
    fn server_reply_through_reply_chunk() {
        let Body::NoMsg(c) = call(&NOMSG_REPLY_CHUNK).unwrap().header.body else {
            panic!()
        };
        let mut b = [0u8; 48];
        let mut e = Encoder::new(&mut b);
        assert_eq!(reply_header_len(&c, true), 48);
        assert_eq!(encode_reply(&mut e, 7, 64, &c, &[], Some(3000)), Ok(48));
        let expect = words(&[
            7,
            1,
            64,
            RDMA_NOMSG,
            0,
            0,
            1,
            1,
            0x6666_6666,
            3000,
            0,
            0x2000,
        ]);
        assert_eq!(b[..], expect[..]);
        let d = reply(&b).unwrap();
        assert_eq!(
            d.header.body.chunks().unwrap().reply.unwrap().length(),
            3000
        );
        assert_eq!(
            encode_reply(&mut Encoder::new(&mut b), 7, 64, &c, &[], Some(65537)),
            Err(xdr::Error::LengthOverflow)
        );
        // Inline reply despite an offered Reply chunk: RDMA_MSG without it.
        let mut b = [0u8; 28];
        assert_eq!(
            encode_reply(&mut Encoder::new(&mut b), 7, 64, &c, &[], None),
            Ok(28)
        );
        assert_eq!(reply(&b).unwrap().header.body.proc(), Proc::Msg);
    }

    #[test]
    fn encode_rejects_bad_proc_and_short_buffer() {
        let lists = Lists::default();
        let mut b = [0u8; 28];
        for p in [Proc::Msgp, Proc::Done, Proc::Error] {
            assert_eq!(
                encode(&mut Encoder::new(&mut b), 1, 1, p, &lists),
                Err(xdr::Error::BadDiscriminant(p.into()))
            );
        }
        let mut small = [0u8; 27];
        let mut e = Encoder::new(&mut small);
        assert_eq!(
            encode(&mut e, 1, 1, Proc::Msg, &lists),
            Err(xdr::Error::Short)
        );
        assert_eq!(e.position(), 0);
    }

    #[test]
    fn proc_conversions() {
        for v in 0..5u32 {
            let p = Proc::try_from(v).unwrap();
            assert_eq!(u32::from(p), v);
        }
        assert_eq!(Proc::try_from(5), Err(5));
    }
}
