// SPDX-License-Identifier: GPL-2.0

//! A reply's chunk lists checked against what its call offered.
//!
//! A responder echoes the Write chunk and the Reply chunk a requester offered, with the lengths
//! it actually wrote (RFC 8166, sections 3.4.6 and 3.4.7). Those lengths tell the requester how
//! much of its registered memory holds reply data, so a hostile or broken responder that echoes
//! more than was offered could make the requester read past its buffers or overflow its length
//! arithmetic. The C client sums the echoed lengths in a `u32` and lets the sum wrap
//! (`decode_write_chunk()`); here every echo is checked against the offer before any length is
//! used:
//!
//! - `RDMA_MSG`: no Reply chunk; at most one Write chunk, and only if one was offered, with no
//!   more segments than offered, each with the handle of the offered segment at the same place
//!   and a length no larger than that segment's. The result is the number of bytes the
//!   responder wrote, which is at most what was registered.
//! - `RDMA_NOMSG`: a Reply chunk that was offered, checked segment by segment the same way, and
//!   no data in the Write list (as `rpcrdma_decode_nomsg()`). The result is the reply length.
//!
//! A reply that fails these checks fails its RPC (`EIO`), as any reply the C client cannot
//! decode does.

use super::v1::{
    Chunks,
    Segment,
    WriteChunk, //
};

/// What the call offered for its reply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Offered<'a> {
    /// The segments of the Write chunk the call offered, if it offered one.
    pub write: Option<&'a [Segment]>,
    /// The segments of the Reply chunk the call offered, if it offered one.
    pub reply: Option<&'a [Segment]>,
}

/// How an echo differs from the offer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// A reply carries a Read list.
    ReadList,
    /// More Write chunks than the one a call can offer.
    TooManyWriteChunks,
    /// A Write chunk echoed for a call that offered none.
    WriteChunkNotOffered,
    /// Data in the Write list of an `RDMA_NOMSG` reply.
    WriteListInNomsg,
    /// A Reply chunk in an `RDMA_MSG` reply.
    ReplyChunkInMsg,
    /// An `RDMA_NOMSG` reply without a Reply chunk.
    NoReplyChunk,
    /// A Reply chunk echoed for a call that offered none.
    ReplyChunkNotOffered,
    /// A chunk echoed with more segments than were offered.
    TooManySegments,
    /// Segment `.0` of a chunk has a handle that was not offered there.
    WrongHandle(u32),
    /// Segment `.0` of a chunk is longer than the offered segment.
    TooLong(u32),
}

/// Checks the segments of an echoed chunk against the offered ones; returns the echoed length,
/// at most the offered length.
fn check_chunk(echo: &WriteChunk<'_>, offered: &[Segment]) -> Result<u32, Error> {
    let count = usize::try_from(echo.segment_count()).map_err(|_| Error::TooManySegments)?;
    if count > offered.len() {
        return Err(Error::TooManySegments);
    }
    let mut total = 0u32;
    for (i, (e, o)) in (0u32..).zip(echo.segments().zip(offered)) {
        if e.handle != o.handle {
            return Err(Error::WrongHandle(i));
        }
        if e.length > o.length {
            return Err(Error::TooLong(i));
        }
        // Cannot overflow for a registration that fits a `u32`; a larger one is refused.
        total = total.checked_add(e.length).ok_or(Error::TooLong(i))?;
    }
    Ok(total)
}

/// Checks the chunk lists of an `RDMA_MSG` reply; returns the number of bytes the responder
/// wrote into the offered Write chunk (zero if none).
pub fn check_msg(chunks: &Chunks<'_>, offered: &Offered<'_>) -> Result<u32, Error> {
    if !chunks.reads.is_empty() {
        return Err(Error::ReadList);
    }
    if chunks.reply.is_some() {
        return Err(Error::ReplyChunkInMsg);
    }
    let mut writes = chunks.writes.chunks();
    let Some(echo) = writes.next() else {
        return Ok(0);
    };
    if writes.next().is_some() {
        return Err(Error::TooManyWriteChunks);
    }
    let offer = offered.write.ok_or(Error::WriteChunkNotOffered)?;
    check_chunk(&echo, offer)
}

/// Checks the chunk lists of an `RDMA_NOMSG` reply; returns the length of the reply the
/// responder wrote into the offered Reply chunk.
pub fn check_nomsg(chunks: &Chunks<'_>, offered: &Offered<'_>) -> Result<u32, Error> {
    if !chunks.reads.is_empty() {
        return Err(Error::ReadList);
    }
    if chunks.writes.total_length() != 0 {
        return Err(Error::WriteListInNomsg);
    }
    let echo = chunks.reply.ok_or(Error::NoReplyChunk)?;
    let offer = offered.reply.ok_or(Error::ReplyChunkNotOffered)?;
    check_chunk(&echo, offer)
}

/// The length of an `RDMA_MSG` reply for sunrpc: the inline part, then the bytes written into
/// the Write chunk rounded up to XDR alignment (`rpcrdma_decode_msg()`), or `None` if that does
/// not fit a `u32`.
pub fn msg_reply_len(inline: usize, written: u32) -> Option<u32> {
    let inline = u32::try_from(inline).ok()?;
    let padded = written.checked_add(3)? & !3;
    inline.checked_add(padded)
}

#[cfg(test)]
mod tests {
    use super::super::{
        v1::{
            self,
            Body,
            Header,
            Limits,
            Lists,
            Proc, //
        },
        xdr::Encoder,
    };
    use super::*;

    const OFFER: [Segment; 2] = [
        Segment {
            handle: 0x100,
            length: 4096,
            offset: 0x1000,
        },
        Segment {
            handle: 0x200,
            length: 8192,
            offset: 0x8000,
        },
    ];

    /// Encodes a reply with `lists` and runs `f` on its decoded chunk lists; `None` if the
    /// header decoder already refuses the reply.
    fn with_reply<R>(proc: Proc, lists: &Lists<'_>, f: impl FnOnce(&Chunks<'_>) -> R) -> Option<R> {
        let mut buf = [0u8; 1024];
        let n = v1::encode(&mut Encoder::new(&mut buf), 7, 32, proc, lists).unwrap();
        let d = Header::decode_reply(&buf[..n], &Limits::UNLIMITED).ok()?;
        match d.header.body {
            Body::Msg(c) | Body::NoMsg(c) => Some(f(&c)),
            Body::Error(_) => panic!("not a message"),
        }
    }

    fn seg(handle: u32, length: u32) -> Segment {
        Segment {
            handle,
            length,
            offset: 0,
        }
    }

    fn msg(write: &[Segment], offered: &Offered<'_>) -> Result<u32, Error> {
        let chunk = [write];
        let lists = Lists {
            reads: &[],
            writes: if write.is_empty() { &[] } else { &chunk },
            reply: None,
        };
        with_reply(Proc::Msg, &lists, |c| check_msg(c, offered)).unwrap()
    }

    fn nomsg(reply: Option<&[Segment]>, offered: &Offered<'_>) -> Option<Result<u32, Error>> {
        let lists = Lists {
            reads: &[],
            writes: &[],
            reply,
        };
        with_reply(Proc::NoMsg, &lists, |c| check_nomsg(c, offered))
    }

    const WRITE: Offered<'static> = Offered {
        write: Some(&OFFER),
        reply: None,
    };
    const REPLY: Offered<'static> = Offered {
        write: None,
        reply: Some(&OFFER),
    };

    #[test]
    fn msg_within_offer() {
        assert_eq!(msg(&[], &WRITE), Ok(0));
        assert_eq!(msg(&[seg(0x100, 100)], &WRITE), Ok(100));
        assert_eq!(
            msg(&[seg(0x100, 4096), seg(0x200, 8192)], &WRITE),
            Ok(12288)
        );
        assert_eq!(msg(&[], &Offered::default()), Ok(0));
    }

    #[test]
    fn msg_longer_than_registered() {
        assert_eq!(msg(&[seg(0x100, 4097)], &WRITE), Err(Error::TooLong(0)));
        for len in [0xffff_fffc, 0xffff_fffd, 0xffff_fffe, 0xffff_ffff] {
            assert_eq!(msg(&[seg(0x100, len)], &WRITE), Err(Error::TooLong(0)));
            assert_eq!(
                msg(&[seg(0x100, 10), seg(0x200, len)], &WRITE),
                Err(Error::TooLong(1))
            );
        }
    }

    #[test]
    fn msg_segments_and_handles() {
        let three = [seg(0x100, 1), seg(0x200, 1), seg(0x300, 1)];
        assert_eq!(msg(&three, &WRITE), Err(Error::TooManySegments));
        assert_eq!(msg(&[seg(0x200, 1)], &WRITE), Err(Error::WrongHandle(0)));
        assert_eq!(
            msg(&[seg(0x100, 1), seg(0x100, 1)], &WRITE),
            Err(Error::WrongHandle(1))
        );
        assert_eq!(
            msg(&[seg(0x100, 1)], &REPLY),
            Err(Error::WriteChunkNotOffered)
        );
    }

    #[test]
    fn msg_other_lists() {
        let lists = Lists {
            reads: &[],
            writes: &[&OFFER[..1], &OFFER[1..]],
            reply: None,
        };
        let r = with_reply(Proc::Msg, &lists, |c| check_msg(c, &WRITE));
        assert_eq!(r, Some(Err(Error::TooManyWriteChunks)));
        let lists = Lists {
            reads: &[],
            writes: &[],
            reply: Some(&OFFER),
        };
        // The header decoder refuses it already; the check would too.
        let r = with_reply(Proc::Msg, &lists, |c| check_msg(c, &REPLY));
        assert_eq!(r, None);
    }

    #[test]
    fn nomsg_checks() {
        assert_eq!(nomsg(Some(&[seg(0x100, 300)]), &REPLY), Some(Ok(300)));
        // The header decoder refuses it already.
        assert_eq!(nomsg(None, &REPLY), None);
        assert_eq!(
            nomsg(Some(&[seg(0x100, 300)]), &WRITE),
            Some(Err(Error::ReplyChunkNotOffered))
        );
        assert_eq!(
            nomsg(Some(&[seg(0x100, 0xffff_ffff)]), &REPLY),
            Some(Err(Error::TooLong(0)))
        );
        assert_eq!(
            nomsg(Some(&[seg(0x999, 1)]), &REPLY),
            Some(Err(Error::WrongHandle(0)))
        );
        let lists = Lists {
            reads: &[],
            writes: &[&[seg(0x100, 4)]],
            reply: Some(&OFFER),
        };
        // The header decoder refuses it already; the check would too.
        let r = with_reply(Proc::NoMsg, &lists, |c| check_nomsg(c, &REPLY));
        assert_eq!(r, None);
    }

    #[test]
    fn reply_len() {
        assert_eq!(msg_reply_len(100, 0), Some(100));
        assert_eq!(msg_reply_len(100, 5), Some(108));
        assert_eq!(msg_reply_len(0, 0xffff_fffc), Some(0xffff_fffc));
        assert_eq!(msg_reply_len(0, 0xffff_fffd), None);
        assert_eq!(msg_reply_len(0, 0xffff_ffff), None);
        assert_eq!(msg_reply_len(4, 0xffff_fffc), None);
        assert_eq!(msg_reply_len(usize::MAX, 0), None);
    }
}
