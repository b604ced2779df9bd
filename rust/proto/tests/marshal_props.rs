// SPDX-License-Identifier: GPL-2.0

//! Property tests for the marshaling decisions.

use proptest::prelude::*;
use rpcrdma_proto::marshal::{
    self,
    Call,
    CallChunk,
    Connection,
    Error,
    Registration,
    ReplyChunk,
    Span,
    XdrBuf, //
};
use rpcrdma_proto::v1::Proc;

/// A line-by-line transcription of `frwr_map()`'s loop over an xdr_buf cursor, one page at a
/// time, as the reference for `count_segments()`.
fn frwr_map_reference(buf: &XdrBuf, span: Span, reg: &Registration) -> Result<u32, Error> {
    let page = reg.page_size;
    let depth = reg.max_fr_depth;
    let pos = match span {
        Span::Whole => 0,
        Span::Pages => buf.head_len,
    };
    let mut head_done = pos != 0;
    let mut pages_done = buf.page_len == 0;
    let mut tail_done = span == Span::Pages || buf.tail_len == 0;
    let mut page_offset = 0u32;
    let mut mrs = 0;
    loop {
        // One frwr_map() call. Entries are (offset in page, length).
        let mut sg: Vec<(u32, u32)> = Vec::new();
        'finish: {
            if !head_done {
                sg.push((0, buf.head_len));
                head_done = true;
                if !reg.sg_gaps {
                    break 'finish;
                }
            }
            if !pages_done && buf.page_len != 0 {
                let mut remaining = buf.page_len - page_offset;
                let mut page_base = (buf.page_base + page_offset) % page;
                while remaining > 0 && (sg.len() as u32) < depth {
                    let len = (page - page_base).min(remaining);
                    sg.push((page_base, len));
                    page_offset += len;
                    remaining -= len;
                    if !reg.sg_gaps && remaining > 0 && (page_base + len) % page != 0 {
                        break 'finish;
                    }
                    page_base = 0;
                }
                if remaining == 0 {
                    pages_done = true;
                }
            }
            if !tail_done && buf.tail_len != 0 && (sg.len() as u32) < depth {
                if !reg.sg_gaps {
                    if let Some(&(o, l)) = sg.last() {
                        if (o + l) % page != 0 || buf.tail_page_offset % page != 0 {
                            break 'finish;
                        }
                    }
                }
                sg.push((buf.tail_page_offset, buf.tail_len));
                tail_done = true;
            }
        }
        if sg.is_empty() {
            return Err(Error::EmptyChunk);
        }
        mrs += 1;
        if head_done && pages_done && tail_done {
            return Ok(mrs);
        }
    }
}

fn xdrbuf(max_pages: u32) -> impl Strategy<Value = XdrBuf> {
    (
        prop_oneof![Just(0u32), 1u32..8192],
        0u32..8192,
        prop_oneof![Just(0u32), 1u32..max_pages * 4096],
        prop_oneof![Just(0u32), 1u32..64],
        prop_oneof![Just(0u32), 0u32..4096],
    )
        .prop_map(
            |(head_len, page_base, page_len, tail_len, tail_page_offset)| XdrBuf {
                head_len,
                page_base,
                page_len,
                tail_len,
                tail_page_offset,
            },
        )
}

fn registration() -> impl Strategy<Value = Registration> {
    (1u32..40, any::<bool>()).prop_map(|(max_fr_depth, sg_gaps)| Registration {
        max_fr_depth,
        sg_gaps,
        page_size: 4096,
    })
}

fn connection() -> impl Strategy<Value = Connection> {
    (
        1024u32..=65536,
        1024u32..=65536,
        1u32..=16,
        // Half the time no call total (version 1), else a responder's Maximum RDMA Segment
        // Count.
        prop_oneof![Just(u32::MAX), 2u32..=32],
        3u32..=32,
        0u32..=65536,
        registration(),
    )
        .prop_map(
            |(
                inline_send,
                inline_recv,
                max_rdma_segs,
                max_call_segs,
                max_send_sge,
                send_buf_len,
                reg,
            )| {
                Connection {
                    inline_send,
                    inline_recv,
                    max_rdma_segs,
                    max_call_segs,
                    max_send_sge,
                    send_buf_len,
                    reg,
                }
            },
        )
}

fn call() -> impl Strategy<Value = Call> {
    (
        xdrbuf(300),
        xdrbuf(300),
        any::<u32>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(snd, rcv, rcv_buflen, ddp_allowed, write_payload, read_payload)| Call {
                snd,
                rcv,
                rcv_buflen,
                ddp_allowed,
                write_payload,
                read_payload,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// The arithmetic segment count equals a page-by-page transcription of frwr_map().
    #[test]
    fn count_matches_frwr_map(b in xdrbuf(64), reg in registration(), whole in any::<bool>()) {
        let span = if whole { Span::Whole } else { Span::Pages };
        prop_assert_eq!(
            marshal::count_segments(&b, span, &reg, u32::MAX),
            frwr_map_reference(&b, span, &reg)
        );
    }

    /// With a limit, the count is either the unlimited count or TooManySegments.
    #[test]
    fn count_respects_limit(b in xdrbuf(300), reg in registration(), limit in 0u32..20) {
        let full = marshal::count_segments(&b, Span::Whole, &reg, u32::MAX);
        match marshal::count_segments(&b, Span::Whole, &reg, limit) {
            Ok(n) => prop_assert_eq!(Ok(n), full),
            Err(Error::TooManySegments { needed, max }) => {
                prop_assert_eq!(max, limit);
                prop_assert_eq!(needed, limit + 1);
                prop_assert!(full.unwrap() > limit);
            }
            Err(e) => prop_assert_eq!(Err(e), full),
        }
    }

    /// Every plan is self-consistent and within the connection's limits.
    #[test]
    fn plans_are_consistent(c in call(), conn in connection(), calls in 0u32..24, cont in 0u32..24) {
        // Above 1: a version 2 connection with that many credits free for a call's messages,
        // and Receives kept for that many of a reply's.
        let budget = marshal::Continuation { call: calls, reply: cont };
        let plan = marshal::plan_with(&c, &conn, marshal::Force::default(), budget);
        if cont <= 1 && calls <= 1 {
            prop_assert_eq!(plan, marshal::plan(&c, &conn));
        }
        let Ok(p) = plan else {
            return Ok(());
        };
        prop_assert!(p.header_len <= marshal::header_buffer_size(conn.max_rdma_segs));
        prop_assert!(p.read_segments <= conn.max_rdma_segs);
        prop_assert!(p.write_segments <= conn.max_rdma_segs + 1);
        prop_assert!(p.reply_segments <= conn.max_rdma_segs);
        prop_assert!(
            u64::from(p.read_segments) + u64::from(p.write_segments) + u64::from(p.reply_segments)
                <= u64::from(conn.max_call_segs)
        );
        match p.call {
            CallChunk::Inline { .. } => {
                prop_assert_eq!(p.proc, Proc::Msg);
                prop_assert!(c.snd.len() <= u64::from(conn.max_inline_send()));
                prop_assert_eq!(p.read_segments, 0);
                prop_assert!(p.send_sges <= u64::from(conn.max_send_sge));
            }
            CallChunk::ReadChunk { position } => {
                prop_assert!(c.ddp_allowed && c.write_payload);
                prop_assert_eq!(p.proc, Proc::Msg);
                prop_assert_eq!(position, c.snd.head_len);
                prop_assert!(p.read_segments >= 1);
            }
            CallChunk::PositionZero => {
                prop_assert_eq!(p.proc, Proc::NoMsg);
                prop_assert_eq!(p.inline_len, 0);
                prop_assert!(p.read_segments >= 1);
            }
            CallChunk::Continued { messages } => {
                // Only a call too large for one message, within the credits, whose reply
                // needs no chunk; every message carries a header and part of the call.
                prop_assert!(c.snd.len() > u64::from(conn.max_inline_send()));
                prop_assert!(messages >= 1 && messages <= calls);
                prop_assert_eq!(p.proc, Proc::Msg);
                prop_assert_eq!(p.read_segments + p.write_segments + p.reply_segments, 0);
                let per = u64::from(conn.inline_send - 28);
                prop_assert!(u64::from(messages) * per >= c.snd.len());
                prop_assert!(u64::from(messages - 1) * per < c.snd.len());
            }
        }
        match p.reply {
            ReplyChunk::Inline => {
                prop_assert!(c.rcv_buflen <= conn.max_inline_recv());
                prop_assert_eq!(p.write_segments + p.reply_segments, 0);
            }
            ReplyChunk::WriteChunk => {
                prop_assert!(c.ddp_allowed && c.read_payload);
                prop_assert!(p.write_segments >= 1);
                prop_assert_eq!(p.reply_segments, 0);
            }
            ReplyChunk::ReplyChunk => {
                prop_assert!(p.reply_segments >= 1);
                prop_assert_eq!(p.write_segments, 0);
            }
            ReplyChunk::Continued { messages } => {
                // Only when no single message would do, and within the Receives kept.
                prop_assert!(c.rcv_buflen > conn.max_inline_recv());
                prop_assert!(messages > 1 && messages <= cont);
                prop_assert_eq!(p.write_segments + p.reply_segments, 0);
                // Enough messages for the largest reply, with a header in each.
                let per = conn.inline_recv - 28;
                prop_assert!(u64::from(messages) * u64::from(per) >= u64::from(c.rcv_buflen));
                prop_assert!(u64::from(messages - 1) * u64::from(per) < u64::from(c.rcv_buflen));
            }
        }
    }

    /// Nothing panics on arbitrary values, including zero page sizes and depths.
    #[test]
    fn never_panics(
        snd in (any::<u32>(), any::<u32>(), any::<u32>(), any::<u32>(), any::<u32>()),
        conn in (any::<u32>(), any::<u32>(), any::<u32>(), any::<u32>(), any::<u32>(),
                 0u32..4, any::<bool>(), prop_oneof![Just(0u32), Just(1), Just(4096), any::<u32>()]),
        flags in any::<(bool, bool, bool)>(),
        rcv_buflen in any::<u32>(),
    ) {
        let b = XdrBuf {
            head_len: snd.0,
            page_base: snd.1,
            page_len: snd.2 % (1 << 24),
            tail_len: snd.3,
            tail_page_offset: snd.4,
        };
        let conn = Connection {
            inline_send: conn.0,
            inline_recv: conn.1,
            max_rdma_segs: conn.2 % 64,
            max_call_segs: u32::MAX,
            max_send_sge: conn.3,
            send_buf_len: conn.4,
            reg: Registration { max_fr_depth: conn.5, sg_gaps: conn.6, page_size: conn.7 },
        };
        let c = Call {
            snd: b,
            rcv: b,
            rcv_buflen,
            ddp_allowed: flags.0,
            write_payload: flags.1,
            read_payload: flags.2,
        };
        let _ = marshal::plan(&c, &conn);
        let _ = marshal::count_segments(&b, Span::Whole, &conn.reg, conn.max_rdma_segs);
        let _ = marshal::max_rdma_segs(conn.reg.max_fr_depth, conn.reg.page_size);
        let _ = marshal::max_fr_depth(conn.inline_send, conn.inline_recv, conn.reg.page_size);
        let _ = marshal::header_buffer_size(rcv_buflen);
    }
}
