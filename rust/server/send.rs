// SPDX-License-Identifier: GPL-2.0

//! `xpo_sendto` and `xpo_result_payload` (`svc_rdma_sendto`, `svc_rdma_result_payload`).
//!
//! The reply in `rq_res` is split into result payloads (reported by nfsd through
//! `xpo_result_payload`, one per Write chunk of the Call) and the rest, the body. Each
//! payload is written into its Write chunk with RDMA Write; its XDR round-up goes nowhere
//! (RFC 8166, section 3.4.6). When the Call offers a Reply chunk, the body is written into it
//! and the header says `RDMA_NOMSG`, whatever its size: RFC 8166, section 3.5.4 (responders
//! MUST send a Long Message then), as `svc_rdma_sendto`. Otherwise the body is sent inline
//! after the transport header when both fit the client's receive size. A body that fits
//! neither the offered Reply chunk nor, without one, the inline limit is answered with
//! `ERR_CHUNK`. All Writes are chained ahead of the Send, which uses Send With Invalidate when
//! the client allows it and the Call's chunks name exactly one rkey. Any other failure closes
//! the connection, so that the client retransmits on a new one instead of waiting out its
//! timeout.
//!
//! Nothing waits for the chain, as in `svc_rdma_sendto`: the header (and an inline body) is
//! built in a preallocated Send context ([`super::conn::SendCtxt`]), the Writes read the reply
//! through scatterlists holding references on its pages, and the Send's completion releases
//! the Writes' contexts, those pages and the Send Queue entries, and puts the context back.
//! Only a reply needing more than one chain (more than
//! [`MAX_CHAIN`](crate::rdma::rw::MAX_CHAIN) Writes, which no Linux client offers, or more work
//! requests than the Send Queue holds) waits for all but its last.

#![forbid(unsafe_code)]

use kernel::{
    prelude::*,
    sync::atomic::Relaxed, //
};

use super::{
    conn::{
        Chains,
        CmEvents,
        RecvCtxt,
        SendCtxt,
        SvcConn,
        MAX_PAYLOADS, //
    },
    VERS_STATS,
};
use crate::{
    proto::{
        continuation,
        placement::{
            Piece,
            Pieces,
            SegmentsShort, //
        },
        v1::{
            self,
            Chunks,
            ErrorBody, //
        },
        v2,
        v2msg::{
            self,
            ConnProps, //
        },
        xdr::Encoder,
    },
    rdma::{
        ratelimit::pr_warn_peer,
        rw::{
            Ctx,
            Op, //
        },
        verbs::Wr,
    },
    sunrpc::svc::{
        CallBuf,
        SvcRqst,
        SvcXprt, //
    },
    trace,
};

/// The most messages of a continued reply: what our client reassembles (its
/// `continuation::Limits`, as [`CALL_REASSEMBLY`](super::conn::CALL_REASSEMBLY) here).
const MAX_CONTINUED: u32 = 64;

/// Copies bytes `from..from + dst.len()` of the stream made of `regions` (offset, length in
/// `rq_res`) into `dst`.
fn read_regions(
    rqst: &SvcRqst<RecvCtxt>,
    regions: &[(u32, u32)],
    from: u32,
    dst: &mut [u8],
) -> Result {
    let mut at = 0u32;
    let mut done = 0usize;
    for &(off, len) in regions {
        let end = at.checked_add(len).ok_or(EINVAL)?;
        if done < dst.len() && end > from {
            let skip = from.saturating_sub(at);
            let n = ((len - skip) as usize).min(dst.len() - done);
            rqst.res_read(off + skip, &mut dst[done..done + n])?;
            done += n;
        }
        at = end;
    }
    if done == dst.len() {
        Ok(())
    } else {
        Err(EINVAL)
    }
}

/// The one rkey every segment of the Call's chunks names, if there is exactly one
/// (`svc_rdma_get_inv_rkey`).
fn single_rkey(chunks: &Chunks<'_>) -> Option<u32> {
    let reads = chunks.reads.segments().map(|r| r.segment.handle);
    let writes = chunks
        .writes
        .chunks()
        .flat_map(|c| c.segments().map(|s| s.handle));
    let reply = chunks
        .reply
        .into_iter()
        .flat_map(|c| c.segments().map(|s| s.handle));
    let mut all = Iterator::chain(Iterator::chain(reads, writes), reply);
    let first = all.next()?;
    all.all(|h| h == first).then_some(first)
}

impl SvcConn {
    /// Sends an `RDMA_ERROR` answering the message in `buf` (its xid and version echoed).
    pub(super) fn reply_error(&self, buf: &[u8], body: ErrorBody) {
        let Some(fixed) = v1::peek(buf) else { return };
        self.reply_error_to(fixed.xid, fixed.vers, body);
    }

    /// Sends an `RDMA_ERROR` with `body` answering the message `xid`, whose `rdma_vers` `vers`
    /// it echoes.
    pub(super) fn reply_error_to(&self, xid: u32, vers: u32, body: ErrorBody) {
        match self.send_error(xid, vers, body) {
            // Already logged by `post_send`, or the connection is gone.
            Ok(()) | Err(EIO) | Err(ENOTCONN) => {}
            Err(e) => pr_warn_peer!("cannot send RDMA_ERROR: {e:?}\n"),
        }
    }

    /// Answers the message in `buf` with `ERR_VERS` and the range `low..=high`: in the
    /// `RDMA2_ERROR` layout when the range includes version 2, else in RFC 8166's with the
    /// message's `rdma_vers` echoed (as the C server does).
    pub(super) fn reply_err_vers(&self, buf: &[u8], low: u32, high: u32) {
        let Some(fixed) = v1::peek(buf) else { return };
        if high >= v2::VERSION {
            self.reply_error_v2(fixed.xid, v2::ErrorBody::Vers { low, high });
        } else {
            VERS_STATS.err_vers();
            self.reply_error(buf, ErrorBody::Vers { low, high });
        }
    }

    /// Sends an `RDMA2_ERROR` with `body` answering the version 2 message `xid`.
    pub(super) fn reply_error_v2(&self, xid: u32, body: v2::ErrorBody) {
        match self.send_error_v2(xid, body) {
            Ok(()) | Err(EIO) | Err(ENOTCONN) => {}
            Err(e) => pr_warn_peer!("cannot send RDMA2_ERROR: {e:?}\n"),
        }
    }

    /// Sends our transport properties (`RDMA2_CONNPROP`, draft Section 6.4.4). The client
    /// keeps a Receive for one such message beyond our credit grant (Section 4.3.1).
    fn send_connprop(&self) {
        let r = self.send_header(ConnProps::ENCODED_LEN, |b| {
            self.props()
                .encode(b, v2msg::credit_word(self.grant()))
                .map_err(|_| EINVAL)
        });
        match r {
            Ok(()) => VERS_STATS.connprop_sent(),
            Err(EIO) | Err(ENOTCONN) => {}
            Err(e) => pr_warn_peer!("cannot send RDMA2_CONNPROP: {e:?}\n"),
        }
    }

    fn send_error_v2(&self, xid: u32, body: v2::ErrorBody) -> Result {
        if let v2::ErrorBody::Vers { .. } = body {
            VERS_STATS.err_vers();
            trace::svcrdma_err_vers(xid);
        } else {
            VERS_STATS.error_v2();
            trace::svcrdma_err_chunk(xid);
        }
        self.send_header(v2msg::ERROR_MAX, |b| {
            v2msg::encode_error(b, xid, v2msg::credit_word(self.grant()), body).map_err(|_| EINVAL)
        })
    }

    fn send_error(&self, xid: u32, vers: u32, body: ErrorBody) -> Result {
        match body {
            ErrorBody::Vers { .. } => trace::svcrdma_err_vers(xid),
            ErrorBody::Chunk => trace::svcrdma_err_chunk(xid),
        }
        self.send_header(v1::HDRLEN_ERR_VERS, |b| {
            let mut e = Encoder::new(b);
            v1::encode_error(&mut e, xid, vers, self.grant(), &body).map_err(|_| EINVAL)
        })
    }

    /// Sends a credit refresh granting our credits (draft Section 6.4.2), the keep-alive of an
    /// idle version 2 connection.
    pub(super) fn send_refresh(&self) {
        let credit = v2msg::credit_word(self.grant());
        let r = self.send_header(v2msg::LISTS_AT + 12, |b| {
            v2msg::encode_refresh(&mut Encoder::new(b), credit).map_err(|_| EINVAL)
        });
        match r {
            Ok(()) => {
                // The refresh itself does not make the next interval a busy one.
                self.shared.ka_sent.fetch_sub(1, Relaxed);
                VERS_STATS.refresh_sent();
            }
            Err(e) => pr_warn_peer!("cannot send a keep-alive refresh: {:?}\n", e),
        }
    }

    /// Sends a transport header alone, of at most `max` bytes, that `encode` writes into a
    /// Send context's buffer (returning its length).
    fn send_header(&self, max: usize, encode: impl FnOnce(&mut [u8]) -> Result<usize>) -> Result {
        let mut sc = self.send_ctxt(max)?;
        let encoded = sc
            .buf_mut(0)
            .ok_or(EINVAL)
            .and_then(|b| encode(b.as_mut_slice()));
        match encoded {
            Ok(len) => self.post_send(KVec::new(), sc, len, None),
            Err(e) => {
                self.put_send_ctxt(sc);
                Err(e)
            }
        }
    }

    /// Posts `ctxs` (RDMA Writes over tables holding references on the reply's pages) and a
    /// Send of the first `len` bytes of `sc`'s buffer as one chain, and returns: the Send's
    /// completion gives the Send Queue entries and `sc` back and releases the Writes.
    pub(super) fn post_send(
        &self,
        ctxs: KVec<Ctx<'_, 'static, CmEvents>>,
        mut sc: KBox<Wr<SendCtxt>>,
        len: usize,
        inv: Option<u32>,
    ) -> Result {
        let wrs = ctxs.iter().fold(1u32, |n, c| n.saturating_add(c.wrs()));
        if let Err(e) = sc.set_len(0, len).and_then(|()| self.sq_reserve(wrs)) {
            self.put_send_ctxt(sc);
            return Err(e);
        }
        let _order = self.shared.send_order.lock();
        self.post_reserved(ctxs, sc, wrs, inv)
    }

    /// Posts the chain of [`SvcConn::post_send`] whose `wrs` Send Queue entries are reserved,
    /// `sc`'s length set, and [`Shared::send_order`](super::conn::Shared) held.
    fn post_reserved(
        &self,
        ctxs: KVec<Ctx<'_, 'static, CmEvents>>,
        mut sc: KBox<Wr<SendCtxt>>,
        wrs: u32,
        inv: Option<u32>,
    ) -> Result {
        sc.data_mut().sqes = wrs;
        self.shared.ka_sent.add(1, Relaxed);
        match self.qp.post_rw_send(ctxs, sc, inv) {
            Ok(()) => Ok(()),
            Err((e, mut sc)) => {
                self.sq_post_err(e);
                // Nothing of the chain is in flight any more: the entries come back now.
                sc.data_mut().sqes = 0;
                self.put_send_ctxt(sc);
                self.sq_release(wrs);
                Err(e)
            }
        }
    }

    /// RDMA Write contexts for `pieces` of the reply, over tables holding references on its
    /// pages, in [`Chains`]: all but the last are posted here and waited for; the last is
    /// returned for the Send's chain. A single context larger than the Send Queue is refused
    /// (`E2BIG`, the connection closed), as C refuses it, and so is one of exactly its depth
    /// that is the reply's last (one entry is kept for the Send).
    fn write_ctxs<'a>(
        &'a self,
        rqst: &SvcRqst<RecvCtxt>,
        pieces: impl Iterator<Item = core::result::Result<Piece, SegmentsShort>>,
    ) -> Result<KVec<Ctx<'a, 'static, CmEvents>>> {
        let mut chains = Chains::new(self, Op::Write, 0)?;
        for p in pieces {
            // The segments were checked to hold the stream: ours to fix, and the connection
            // is closed.
            let p = p.map_err(|SegmentsShort| EINVAL)?;
            chains.push(p.remote, p.rkey, || {
                rqst.res_sgt_owned(&self.rw, p.res_off, p.len)
            })?;
        }
        Ok(chains.into_last())
    }

    /// Sends the reply body made of `regions` of `rq_res` as `split.messages` messages (draft
    /// Section 6.3.2): all but the last with [`v2::F_MORE`] and empty chunk lists, the last
    /// with the reply header (no chunk: the Call offered none) and Send With Invalidate of
    /// `inv`. The Send Queue entries of all of them are reserved first, the Send contexts
    /// filled, and then they are posted back to back under
    /// [`Shared::send_order`](super::conn::Shared), so that no other message comes between.
    fn send_continued(
        &self,
        rqst: &SvcRqst<RecvCtxt>,
        (xid, credit): (u32, u32),
        regions: &[(u32, u32)],
        split: continuation::Split,
        inv: Option<u32>,
    ) -> Result {
        let mut scs: KVec<KBox<Wr<SendCtxt>>> =
            KVec::with_capacity(split.messages as usize, GFP_KERNEL)?;
        let filled = (0..split.messages).try_for_each(|i| {
            let (off, len) = split.piece(i).ok_or(EINVAL)?;
            let last = i + 1 == split.messages;
            let hdr = v2msg::MORE_HEADER_LEN;
            let total = hdr + len as usize;
            let mut sc = self.send_ctxt(total)?;
            let built = sc.buf_mut(0).ok_or(EINVAL).and_then(|b| {
                let out = b.as_mut_slice();
                let mut e = Encoder::new(out);
                // The final header echoes no chunk (the Call offered none): as long as the
                // others.
                let encoded = if last {
                    let none = v1::Chunks::default();
                    v2msg::encode_reply(&mut e, xid, credit, &none, &[], None)
                } else {
                    v2msg::encode_more(&mut e, xid, credit, true)
                };
                if encoded != Ok(hdr) {
                    return Err(EINVAL);
                }
                let dst = out.get_mut(hdr..total).ok_or(EINVAL)?;
                read_regions(rqst, regions, off, dst)
            });
            let r = built.and_then(|()| sc.set_len(0, total));
            // Pushed even on failure: every context goes back below.
            scs.push(sc, GFP_KERNEL)?;
            r
        });
        if let Err(e) = filled.and_then(|()| self.sq_reserve(split.messages)) {
            for sc in scs.drain_all() {
                self.put_send_ctxt(sc);
            }
            return Err(e);
        }
        let _order = self.shared.send_order.lock();
        let n = scs.len();
        for (i, sc) in scs.drain_all().enumerate() {
            let inv = if i + 1 == n { inv } else { None };
            if let Err(e) = self.post_reserved(KVec::new(), sc, 1, inv) {
                // That Send's entry is back; the later ones were never used.
                self.sq_release((n - i - 1) as u32);
                return Err(e);
            }
        }
        Ok(())
    }

    /// `xpo_result_payload`: records where the next Write chunk's payload is in the reply.
    pub(crate) fn result_payload(
        &self,
        rqst: &mut SvcRqst<RecvCtxt>,
        offset: u32,
        length: u32,
    ) -> Result {
        if length == 0 {
            return Ok(());
        }
        let Some(ctxt) = rqst.ctxt_mut() else {
            return Ok(());
        };
        let ctxt = ctxt.data_mut();
        let next = ctxt.next_payload;
        let Some(call) = ctxt.call.as_ref() else {
            return Ok(());
        };
        let Some(chunk_len) = call.write_len(next) else {
            // No Write chunk left: the payload stays inline.
            return Ok(());
        };
        // The chunk is used up even when the payload does not fit it (as
        // svc_rdma_result_payload): the next payload goes to the next chunk, and this one
        // is returned empty.
        ctxt.next_payload = next + 1;
        if u64::from(length) > chunk_len || next >= MAX_PAYLOADS {
            // Version 2 names the first such chunk in its answer (draft Section 6.4.3);
            // version 1 has no such error: the payload goes inline or in the Reply chunk, as
            // svcrdma does.
            if call.vers == v2::VERSION && ctxt.write_short.is_none() {
                let index = u32::try_from(next).map_or(0, |i| i.saturating_add(1));
                ctxt.write_short = Some((index, length));
            }
            return Err(E2BIG);
        }
        ctxt.payloads[next] = Some((offset, length));
        Ok(())
    }

    /// `xpo_sendto`.
    pub(crate) fn sendto(&self, _xprt: &SvcXprt, rqst: &mut SvcRqst<RecvCtxt>) -> Result {
        match self.send_reply(rqst) {
            // Sent, or answered with ERR_CHUNK and the connection stays.
            Ok(()) | Err(EMSGSIZE) => Ok(()),
            Err(e) => {
                let xid = rqst.ctxt().and_then(|c| c.data().call).map_or(0, |c| c.xid);
                trace::svcrdma_send_err(self.peer.as_ref(), xid, e);
                // Logged where it happened (EIO), or the connection is gone (ENOTCONN).
                if e != EIO && e != ENOTCONN {
                    pr_warn_peer!("cannot send a reply ({e:?}): closing the connection\n");
                }
                // As svc_rdma_sendto's drop_connection: the call would stay unanswered.
                self.fail();
                Err(ENOTCONN)
            }
        }
    }

    /// Sends the reply of `rqst`: `EMSGSIZE` if it was answered with `ERR_CHUNK` (or
    /// `RDMA2_ERR_REPLY_RESOURCE`, `RDMA2_ERR_WRITE_RESOURCE`) instead, which keeps the
    /// connection; any other error closes it ([`SvcConn::sendto`]).
    fn send_reply(&self, rqst: &SvcRqst<RecvCtxt>) -> Result {
        let rc = rqst.ctxt().ok_or(EINVAL)?;
        let ctxt = rc.data();
        let call = ctxt.call.as_ref().ok_or(EINVAL)?;
        let xid = call.xid;
        let chunks = &call.chunks(rc.bytes());
        let res_len = rqst.res_len();

        // Payloads (to Write chunks) and the regions of the body around them: one before each
        // payload at most, and the rest.
        let mut payload_lens = [0u32; MAX_PAYLOADS];
        let mut region_buf = [(0u32, 0u32); MAX_PAYLOADS + 1];
        let mut nregions = 0;
        let mut add_region = |r: (u32, u32)| -> Result {
            *region_buf.get_mut(nregions).ok_or(EINVAL)? = r;
            nregions += 1;
            Ok(())
        };
        let mut start = 0u32;
        for (i, _) in chunks.writes.chunks().enumerate().take(MAX_PAYLOADS) {
            let Some((pos, len)) = ctxt.payloads[i] else {
                continue;
            };
            let end = pos.checked_add(len).ok_or(EINVAL)?;
            if pos < start || end > res_len {
                return Err(EINVAL);
            }
            if pos > start {
                add_region((start, pos - start))?;
            }
            payload_lens[i] = len;
            start = end.saturating_add(3) & !3;
        }
        if start < res_len {
            add_region((start, res_len - start))?;
        }
        let regions = &region_buf[..nregions];
        let body_len: u32 = regions.iter().map(|r| r.1).sum();

        let v2 = call.vers == v2::VERSION;
        // Version 2: a Write chunk too short for its result is answered with
        // `RDMA2_ERR_WRITE_RESOURCE`, not the reply (draft Section 6.4.3: the requester may
        // send the call again with more room).
        if let Some((chunk_index, length_needed)) = ctxt.write_short.filter(|_| v2) {
            pr_warn_peer!(
                "result of {length_needed} bytes over Write chunk {chunk_index}: WRITE_RESOURCE\n"
            );
            self.send_error_v2(
                xid,
                v2::ErrorBody::WriteResource {
                    chunk_index,
                    length_needed,
                },
            )?;
            return Err(EMSGSIZE);
        }
        // Version 2: the Call names the one handle it allows us to invalidate, if any (draft
        // Section 6.3.3); version 1: RFC 8797's rule.
        let inv = match (self.send_inv, v2) {
            (false, _) => None,
            (true, true) => (call.inv_handle != 0).then_some(call.inv_handle),
            (true, false) => single_rkey(chunks),
        };
        let reply_header_len = |used: bool| {
            if v2 {
                v2msg::reply_header_len(chunks, used)
            } else {
                v1::reply_header_len(chunks, used)
            }
        };
        let nwrites = chunks.writes.len() as usize;
        let payloads = &payload_lens[..nwrites.min(MAX_PAYLOADS)];
        let hdr_inline = reply_header_len(false);
        let inline_ok =
            hdr_inline.saturating_add(body_len as usize) <= self.inline_send.load(Relaxed) as usize;
        let fits = call.reply_len().is_some_and(|l| u64::from(body_len) <= l);
        let reply_chunk = chunks.reply.filter(|_| fits);
        // Version 2, a reply too large to go inline and no chunk offered for it: continued
        // (draft Section 6.3.2: the responder "SHOULD use Message Continuation" then), in
        // messages of the client's inline size, as many as it reassembles.
        let continued = (v2 && !inline_ok && chunks.reply.is_none() && chunks.writes.is_empty())
            .then(|| {
                let inline = self.inline_send.load(Relaxed);
                continuation::split(
                    body_len,
                    inline,
                    v2msg::MORE_HEADER_LEN as u32,
                    u32::try_from(hdr_inline).ok()?,
                )
            })
            .flatten()
            .filter(|s| s.messages <= MAX_CONTINUED && s.messages < self.sq_depth);
        if let Some(split) = continued {
            let credit = v2msg::credit_word(self.grant());
            self.send_continued(rqst, (xid, credit), regions, split, inv)?;
            VERS_STATS.sent_continued(split.messages);
            if inv.is_some() {
                VERS_STATS.reminv_v2();
            }
            if self.connprop_due.xchg(0, Relaxed) == 1 {
                self.send_connprop();
            }
            return Ok(());
        }
        if chunks.reply.is_some() != reply_chunk.is_some() || (reply_chunk.is_none() && !inline_ok)
        {
            pr_warn_peer!(
                "reply of {body_len} bytes fits neither inline nor the Reply chunk: ERR_CHUNK\n"
            );
            if v2 {
                // Draft Section 6.4.3: the Reply chunk bytes needed.
                let needed = v2::ErrorBody::ReplyResource {
                    length_needed: body_len,
                };
                self.send_error_v2(xid, needed)?;
            } else {
                self.send_error(xid, v1::VERSION, ErrorBody::Chunk)?;
            }
            return Err(EMSGSIZE);
        }

        // The payloads into their Write chunks (`result_payload` checked that each fits its
        // chunk), then the body into the Reply chunk (checked above).
        let payload_pieces = chunks
            .writes
            .chunks()
            .zip(ctxt.payloads.iter())
            .filter_map(|(c, p)| {
                p.as_ref()
                    .map(|p| Pieces::new(core::slice::from_ref(p), c.segments()))
            })
            .flatten();
        let reply_pieces = reply_chunk
            .into_iter()
            .flat_map(|rc| Pieces::new(regions, rc.segments()));
        let ctxs = self.write_ctxs(rqst, Iterator::chain(payload_pieces, reply_pieces))?;

        let hdr_len = reply_header_len(reply_chunk.is_some());
        let total = if reply_chunk.is_some() {
            hdr_len
        } else {
            hdr_len + body_len as usize
        };
        let mut sc = self.send_ctxt(total)?;
        let built = sc.buf_mut(0).ok_or(EINVAL).and_then(|b| {
            let out = b.as_mut_slice();
            let mut e = Encoder::new(out);
            let reply_len = reply_chunk.map(|_| body_len);
            if v2 {
                let credit = v2msg::credit_word(self.grant());
                v2msg::encode_reply(&mut e, xid, credit, chunks, payloads, reply_len)
            } else {
                v1::encode_reply(&mut e, xid, self.grant(), chunks, payloads, reply_len)
            }
            .map_err(|_| EINVAL)?;
            if reply_chunk.is_none() {
                let mut at = hdr_len;
                for &(off, len) in regions.iter() {
                    let dst = out.get_mut(at..at + len as usize).ok_or(EINVAL)?;
                    rqst.res_read(off, dst)?;
                    at += len as usize;
                }
            }
            Ok(())
        });
        if let Err(e) = built {
            self.put_send_ctxt(sc);
            return Err(e);
        }
        self.post_send(ctxs, sc, total, inv)?;
        if v2 && inv.is_some() {
            VERS_STATS.reminv_v2();
        }
        // Our properties follow the first reply of a version 2 connection: the client reads
        // them once that reply has settled its version.
        if v2 && self.connprop_due.xchg(0, Relaxed) == 1 {
            self.send_connprop();
        }
        Ok(())
    }
}
