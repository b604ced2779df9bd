// SPDX-License-Identifier: GPL-2.0

//! `xpo_recvfrom`: header validation, error replies, and Read chunks pulled with RDMA Read
//! (`svc_rdma_recvfrom`, `svc_rdma_process_read_list`).
//!
//! A Call without Read chunks is handed to nfsd in place, in the Receive buffer. A Call with
//! Read chunks is rebuilt in `rq_pages`, as `svc_rdma_read_multiple_chunks` does: inline
//! pieces are copied and chunks read between them at their XDR positions, each chunk followed
//! by its XDR round-up (zeroes) when its length is not a multiple of four. A Position-Zero
//! Read chunk (`RDMA_NOMSG`) is the whole Call; other Read chunks that come with it are
//! read into it at their positions, as `svc_rdma_read_call_chunk` does (no Linux client sends
//! that combination, but svcrdma accepts it), each followed by its round-up too. Positions
//! count the round-up of the chunks before them (RFC 8166, Section 3.4.4.4): svcrdma's
//! placement and its check (`pcl_check_read_chunk_positions`) forget it, this placement and
//! `v1::Call::decode`'s check do not.

#![forbid(unsafe_code)]

use kernel::{
    alloc::Flags,
    prelude::*,
    sync::atomic::Relaxed, //
};

use super::{
    conn::{
        CallReassembly,
        Chains,
        Peer,
        RecvCtxt, //
        SvcConn,
        CALL_REASSEMBLY,
    },
    VERS_STATS,
};
use crate::{
    proto::{
        backchannel::{
            self,
            Direction, //
        },
        continuation,
        negotiate::{
            self,
            Decision, //
        },
        v1::{
            self,
            Call,
            ErrorBody,
            Role,
            Segment,
            Verdict, //
        },
        v2,
        v2msg::{
            self,
            ConnProps,
            Inbound,
            Refusal, //
        },
    },
    rdma::{
        ratelimit::{
            pr_info_peer,
            pr_warn_peer, //
        },
        rw::Op,
    },
    reasm,
    sunrpc::{
        svc::{
            Arg,
            CallBuf,
            SvcRqst,
            SvcXprt, //
        },
        sysctl::SvcStat,
    },
    trace::{
        self,
        BadReq, //
    },
};

/// The allocation flags of a continued Call's reassembly buffer: the client decides how large
/// it grows (up to [`CALL_REASSEMBLY`]'s `max_len`), so a failure is no warning; it breaks the
/// sequence, counted.
fn reasm_gfp() -> Flags {
    GFP_KERNEL | __GFP_NOWARN
}

/// Why a Call with Read chunks could not be rebuilt.
pub(super) enum PullError {
    /// The chunks do not fit the message or our pages: answer `ERR_CHUNK`.
    Chunk,
    /// An RDMA or resource failure: the connection is closed.
    Fatal(Error),
}

impl From<Error> for PullError {
    fn from(e: Error) -> Self {
        Self::Fatal(e)
    }
}

impl From<kernel::alloc::AllocError> for PullError {
    fn from(_: kernel::alloc::AllocError) -> Self {
        Self::Fatal(ENOMEM)
    }
}

/// What a received version 2 message is to message continuation (draft Section 6.3.2).
enum Continued {
    /// Not part of a continued Call.
    No,
    /// Kept for the Call being reassembled, or answered with an error: nothing more to do.
    Kept,
    /// The final message of a continued Call, with the payloads of the messages before it.
    Final(KVec<u8>),
}

impl SvcConn {
    /// `xpo_recvfrom`.
    pub(crate) fn recvfrom(&self, xprt: &SvcXprt, rqst: &mut SvcRqst<RecvCtxt>) -> Result<u32> {
        if self.shared.ka_due.xchg(false, Relaxed) {
            self.send_refresh();
        }
        let Some(mut ctxt) = self.dequeue() else {
            // No Call left: end the loop (as svc_rdma_recvfrom). A Receive completing
            // meanwhile sets `XPT_DATA` after queueing its Call, and its enqueue fails while
            // the transport is ours (`XPT_BUSY`): if its Call came before the check below,
            // `XPT_DATA` is set again here; if after, its own setting follows this clear.
            // Either way `received` finds it set and enqueues the transport.
            xprt.clear_data();
            if self.has_calls() {
                xprt.set_data();
            }
            xprt.received();
            return Ok(0);
        };
        // Messages of a continued Call are fed to the reassembly in the order they came,
        // before another thread may take the next one (`XPT_BUSY` is ours until
        // `received`): two threads would otherwise race to feed theirs.
        let cont = self.continued_early(ctxt.bytes());
        // Let another thread take the next Call.
        xprt.received();
        SvcStat::Recv.inc();
        if let Err(e) = self.refill() {
            trace::svcrdma_rq_post_err(self.peer.as_ref(), e);
            pr_warn_peer!("cannot replace a Receive ({e:?}): granting fewer credits\n");
        }
        match self.take_call(xprt, rqst, &mut ctxt, cont) {
            Ok(Some(arg)) => rqst.set_call(ctxt, arg),
            // Dropped or answered with an error: the Receive is kept.
            Ok(None) => {
                self.release_ctxt(ctxt);
                Ok(0)
            }
            Err(e) => {
                self.release_ctxt(ctxt);
                Err(e)
            }
        }
    }

    /// Fixes the connection's version to `vers` if it is not yet and `vers` is one we accept,
    /// or checks `vers` against it (as [`negotiate::Responder::decide`], for messages taken by
    /// several threads).
    fn decide(&self, vers: u32) -> Decision {
        let high = crate::max_version();
        let settled = match self.vers.load(Relaxed) {
            0 if (negotiate::LOWEST..=high).contains(&vers) => {
                match self.vers.cmpxchg(0, vers, Relaxed) {
                    Ok(_) => {
                        VERS_STATS.settled(vers);
                        if vers == 2 {
                            self.connprop_due.store(1, Relaxed);
                            self.shared.keepalive_start();
                        }
                        vers
                    }
                    Err(v) => v,
                }
            }
            0 => {
                return Decision::ErrVers {
                    low: negotiate::LOWEST,
                    high,
                }
            }
            v => v,
        };
        if settled == vers {
            Decision::Accept(vers)
        } else {
            Decision::ErrVers {
                low: settled,
                high: settled,
            }
        }
    }

    /// Applies the client's transport properties (`RDMA2_CONNPROP`, draft Section 6.4.4): our
    /// send threshold drops to its Receive Buffer Size if that is smaller (Section 4.3.2).
    /// Properties that cannot be honoured leave the thresholds of the RFC 8797 exchange.
    fn apply_connprop(&self, props: &ConnProps) {
        let mut was = self.inline_send.load(Relaxed);
        let r = loop {
            let Ok(t) = props.send_threshold(was) else {
                break props.send_threshold(was);
            };
            match self.inline_send.cmpxchg(was, t, Relaxed) {
                Ok(_) => break Ok(t),
                Err(now) => was = now,
            }
        };
        VERS_STATS.connprop_received(r.is_ok());
        let peer = Peer(self.peer);
        match r {
            Ok(t) => pr_info_peer!(
                "client {}: transport properties: {}; our send threshold {} (was {})\n",
                peer,
                format_args!("{props}"),
                t,
                was
            ),
            Err(e) => pr_warn_peer!(
                "client {}: RDMA2_CONNPROP not honoured ({:?}): thresholds kept\n",
                peer,
                e
            ),
        }
    }

    /// Decodes the version 2 message in `buf`: the Call to process, or `None` once it is
    /// answered with `RDMA2_ERROR` or dropped.
    fn take_v2(&self, buf: &[u8], cq_id: u32) -> Option<Call> {
        match v2msg::decode_call(buf, &self.limits) {
            Ok(Inbound::Call(c)) => Some(c),
            Ok(Inbound::CreditRefresh) => {
                self.shared.ka.lock().ka.peer_refreshed();
                VERS_STATS.ignored_v2();
                None
            }
            Ok(Inbound::ConnProp(props)) => {
                self.apply_connprop(&props);
                None
            }
            Err(r) => {
                self.bad_v2(&r);
                if let Some(fixed) = v1::peek(buf) {
                    trace::svcrdma_decode_err(BadReq::Parse, cq_id, &fixed);
                }
                if let Refusal::Answer { xid, body } = r {
                    self.reply_error_v2(xid, body);
                }
                None
            }
        }
    }

    /// Validates the message in `ctxt`, keeps its decoded header there (the only decoding of
    /// it) and places its Call: where it is, or `None` if there is none to process (dropped,
    /// answered with an `RDMA_ERROR`, or a backward Reply, handed to the backchannel).
    fn take_call(
        &self,
        xprt: &SvcXprt,
        rqst: &mut SvcRqst<RecvCtxt>,
        ctxt: &mut RecvCtxt,
        cont: Option<Continued>,
    ) -> Result<Option<Arg>> {
        let buf = ctxt.bytes();
        let vers = v1::peek(buf).map(|f| f.vers);
        if vers == Some(2) && crate::max_version() >= 2 {
            if let Decision::ErrVers { low, high } = self.decide(2) {
                self.reply_err_vers(buf, low, high);
                return Ok(None);
            }
            // A Reply to one of our backward Calls: `RDMA2_F_RESPONSE` set (the XID is ours).
            if let Direction::Reply(r) = backchannel::direction(buf) {
                self.bc_reply(xprt, &r, buf);
                return Ok(None);
            }
            let prefix = match cont.unwrap_or_else(|| self.continued_call(buf)) {
                Continued::No => None,
                Continued::Kept => return Ok(None),
                Continued::Final(p) => Some(p),
            };
            let Some(call) = self.take_v2(buf, ctxt.data().cq_id) else {
                return Ok(None);
            };
            return match prefix {
                None => self.place(rqst, ctxt, call),
                Some(p) => self.place_continued(rqst, ctxt, call, p),
            };
        }
        let call = match Call::decode(buf, &self.limits) {
            Ok(c) => c,
            Err(e @ v1::Error::Short) => {
                Self::trace_bad(&e, ctxt.data().cq_id, buf);
                self.short_message(buf);
                return Ok(None);
            }
            Err(e) => {
                self.bad_message(&e);
                Self::trace_bad(&e, ctxt.data().cq_id, buf);
                match e.verdict(Role::Responder) {
                    Verdict::ErrVers => {
                        self.reply_err_vers(buf, negotiate::LOWEST, crate::max_version())
                    }
                    Verdict::ErrChunk => self.reply_error(buf, ErrorBody::Chunk),
                    Verdict::Drop | Verdict::Fail => {}
                }
                return Ok(None);
            }
        };
        // As svc_rdma_is_reverse_direction_reply: a Reply to one of our backchannel Calls is
        // not for nfsd, whether or not a Call waits for it. A version 1 one is taken whatever
        // the connection's version.
        if let Direction::Reply(r) = backchannel::direction(buf) {
            self.bc_reply(xprt, &r, buf);
            return Ok(None);
        }
        if let Decision::ErrVers { low, high } = self.decide(v1::VERSION) {
            self.reply_err_vers(buf, low, high);
            return Ok(None);
        }
        self.place(rqst, ctxt, call)
    }

    /// [`SvcConn::continued_call`] for a version 2 message that is not a backward Reply
    /// (`F_RESPONSE`: handled first, by `take_call`) on a connection settled on version 2, or
    /// settled on it here: a connection's first messages may be a continued Call, whose
    /// fragments must be fed in order, while the transport is ours (`XPT_BUSY`). `None` for
    /// the others, which `take_call` looks at first (and answers, if the version is refused).
    fn continued_early(&self, buf: &[u8]) -> Option<Continued> {
        let fixed = v1::peek(buf)?;
        let flags = buf
            .get(16..20)
            .and_then(|w| w.try_into().ok())
            .map_or(0, u32::from_be_bytes);
        if fixed.vers != v2::VERSION
            || flags & v2::F_RESPONSE != 0
            || crate::max_version() < v2::VERSION
        {
            return None;
        }
        matches!(self.decide(v2::VERSION), Decision::Accept(_)).then(|| self.continued_call(buf))
    }

    /// Message continuation of Calls (draft Section 6.3.2): a message with `F_MORE` has its
    /// payload appended to the Call being reassembled and is done with (`Kept`); the final
    /// message of a sequence (`Final`) is decoded as any Call and takes the payloads before it
    /// along. A message that breaks the sequence's rules (another XID or header type in the
    /// middle, interleaving included; chunks before the final message) or its bounds
    /// ([`CALL_REASSEMBLY`]) is answered with the draft's
    /// `RDMA2_ERROR` (`INVAL_FLAG`, or `SYSTEM` for our bounds), and so is the XID of the sequence
    /// it broke, which is dropped.
    fn continued_call(&self, buf: &[u8]) -> Continued {
        let flags = buf
            .get(16..20)
            .and_then(|w| w.try_into().ok())
            .map_or(0, u32::from_be_bytes);
        let more = flags & v2::F_MORE != 0;
        // The common case, without the lock: no sequence in progress.
        if !more && !self.shared.reasm_active.load(Relaxed) {
            return Continued::No;
        }
        let mut r = self.shared.reasm.lock();
        if !more && !r.seq.in_progress() {
            self.shared.reasm_active.store(false, Relaxed);
            return Continued::No;
        }
        let (frag, at) = match v2msg::call_fragment(buf, &self.limits) {
            Ok(x) => x,
            Err(refusal) => {
                // Refused as it stands (answered by `take_v2`); a sequence it broke goes too.
                let broken = self.break_sequence(&mut r);
                self.shared.reasm_active.store(r.seq.in_progress(), Relaxed);
                drop(r);
                // The sequence it broke is answered, unless the refusal answers that XID (a
                // message refused by dropping it breaks one too).
                if let Some(xid) = broken {
                    if !matches!(&refusal, Refusal::Answer { xid: x, .. } if *x == xid) {
                        self.reply_error_v2(xid, v2::ErrorBody::InvalFlag);
                    }
                }
                return Continued::No;
            }
        };
        match r.seq.feed(frag) {
            Ok(p) if p.complete => {
                let prefix = core::mem::take(&mut r.buf);
                self.shared.reasm_active.store(r.seq.in_progress(), Relaxed);
                drop(r);
                VERS_STATS.continued(p.index.saturating_add(1));
                Continued::Final(prefix)
            }
            Ok(_) => {
                let payload = buf.get(at..).unwrap_or(&[]);
                if r.buf.capacity() == 0 {
                    r.buf = core::mem::take(&mut r.spare);
                }
                if reasm::append(&mut r.buf, payload, CALL_REASSEMBLY.max_len, reasm_gfp()).is_ok()
                {
                    self.shared.reasm_active.store(true, Relaxed);
                    return Continued::Kept;
                }
                let _ = self.break_sequence(&mut r);
                self.shared.reasm_active.store(r.seq.in_progress(), Relaxed);
                drop(r);
                self.bad_v2_continued(frag.xid, v2::ErrorBody::System);
                Continued::Kept
            }
            Err(e) => {
                let seq_xid = match e {
                    continuation::Error::Mismatch { xid, .. } => Some(xid),
                    _ => None,
                };
                let old = core::mem::take(&mut r.buf);
                self.shared.reasm_active.store(r.seq.in_progress(), Relaxed);
                drop(r);
                drop(old);
                let body = if e.code() == v2::ERR_SYSTEM {
                    v2::ErrorBody::System
                } else {
                    v2::ErrorBody::InvalFlag
                };
                // The message that broke it first, then the sequence's own XID.
                self.bad_v2_continued(frag.xid, body);
                if let Some(x) = seq_xid.filter(|&x| x != frag.xid) {
                    self.reply_error_v2(x, v2::ErrorBody::InvalFlag);
                }
                Continued::Kept
            }
        }
    }

    /// Ends the sequence in progress, if any, and returns its XID.
    fn break_sequence(&self, r: &mut CallReassembly) -> Option<u32> {
        let xid = r.seq.xid();
        r.seq.reset();
        r.buf = KVec::new();
        xid
    }

    /// Answers `xid` with `body` for breaking message continuation, and logs it.
    fn bad_v2_continued(&self, xid: u32, body: v2::ErrorBody) {
        self.bad_v2(&Refusal::Answer { xid, body });
        self.reply_error_v2(xid, body);
    }

    /// Places a reassembled Call: the payloads of its earlier messages (`prefix`), then the
    /// final message's, in `rq_pages`. Read chunks with a continued Call are not supported
    /// (their positions would count in the whole message): `RDMA2_ERR_BAD_XDR`.
    fn place_continued(
        &self,
        rqst: &mut SvcRqst<RecvCtxt>,
        ctxt: &mut RecvCtxt,
        call: Call,
        prefix: KVec<u8>,
    ) -> Result<Option<Arg>> {
        if call.has_reads() {
            self.bad_v2_continued(call.xid, v2::ErrorBody::BadXdr);
            return Ok(None);
        }
        let last = ctxt.bytes().get(call.payload_offset..).unwrap_or(&[]);
        let total = prefix
            .len()
            .checked_add(last.len())
            .and_then(|t| u32::try_from(t).ok())
            .filter(|&t| t <= rqst.arg_capacity());
        let Some(total) = total else {
            self.bad_v2_continued(call.xid, v2::ErrorBody::System);
            return Ok(None);
        };
        let at = u32::try_from(prefix.len()).map_err(|_| EINVAL)?;
        rqst.fill_pages(0, Some(&prefix), 0)?;
        rqst.fill_pages(at, Some(last), 0)?;
        self.recycle_reasm(prefix);
        VERS_STATS.call(call.vers);
        ctxt.data_mut().call = Some(call);
        Ok(Some(Arg::Pages(total)))
    }

    /// Keeps the buffer of a reassembled Call, emptied, for the next continued Call (see
    /// `CallReassembly::spare`), unless a larger one is kept already.
    fn recycle_reasm(&self, mut buf: KVec<u8>) {
        buf.clear();
        let mut r = self.shared.reasm.lock();
        if r.spare.capacity() < buf.capacity() {
            core::mem::swap(&mut r.spare, &mut buf);
        }
    }

    /// Keeps the accepted `call` in `ctxt` and places it: where it is, or rebuilt with its
    /// Read chunks in `rq_pages`; `None` once answered with an error.
    fn place(
        &self,
        rqst: &mut SvcRqst<RecvCtxt>,
        ctxt: &mut RecvCtxt,
        call: Call,
    ) -> Result<Option<Arg>> {
        VERS_STATS.call(call.vers);
        ctxt.data_mut().call = Some(call);
        let buf = ctxt.bytes();
        let off = call.payload_offset;
        if !call.has_reads() {
            let len = buf.len() - off;
            return Ok(Some(Arg::Inline { offset: off, len }));
        }
        match self.pull(rqst, buf, &call) {
            Ok(total) => Ok(Some(Arg::Pages(total))),
            Err(PullError::Chunk) => {
                self.bad_message(&v1::Error::Chunk(v1::ChunkError::TooLong));
                if call.vers == 2 {
                    self.reply_error_v2(call.xid, v2::ErrorBody::BadXdr);
                } else {
                    self.reply_error(buf, ErrorBody::Chunk);
                }
                Ok(None)
            }
            Err(PullError::Fatal(e)) => {
                pr_warn_peer!("pulling Read chunks failed ({e:?}): closing the connection\n");
                self.fail();
                Err(e)
            }
        }
    }

    /// Traces a Call whose header `buf`, received on the CQ `cq_id`, was rejected with `e`
    /// (`svcrdma_decode_*_err`).
    fn trace_bad(e: &v1::Error, cq_id: u32, buf: &[u8]) {
        let Some(fixed) = v1::peek(buf) else {
            trace::svcrdma_decode_short_err(cq_id, u32::try_from(buf.len()).unwrap_or(u32::MAX));
            return;
        };
        let kind = match e {
            v1::Error::Short => {
                trace::svcrdma_decode_short_err(cq_id, u32::try_from(buf.len()).unwrap_or(0));
                return;
            }
            v1::Error::BadVersion(_) => BadReq::BadVers,
            v1::Error::BadProc(_) | v1::Error::Msgp => BadReq::BadProc,
            v1::Error::Done | v1::Error::UnexpectedError => BadReq::Drop,
            v1::Error::Xdr(_) | v1::Error::Chunk(_) => BadReq::Parse,
        };
        trace::svcrdma_decode_err(kind, cq_id, &fixed);
    }

    /// A message shorter than the fixed header (RFC 8166 Section 4.2: XID, version, credits,
    /// type). With its XID it is answered as svcrdma answers it (`svc_rdma_send_error`):
    /// `ERR_CHUNK` (Section 5.5.2) echoing the XID and the version word, or version 1 if that
    /// is missing too; but a version 2 one, on a server taking version 2, is dropped, as the
    /// version 2 decoder drops a message without its header type. Without an XID (fewer than 4
    /// bytes, a zero-length Send among them) there is nothing to answer (C echoes whatever
    /// stale bytes its Receive buffer holds): dropped. The dropped ones are counted
    /// (`server_short_dropped`, debugfs `rpcrdma_rs/versions`) and logged, rate-limited.
    fn short_message(&self, buf: &[u8]) {
        let word = |at: usize| {
            buf.get(at..at + 4)
                .and_then(|w| w.try_into().ok())
                .map(u32::from_be_bytes)
        };
        let vers = word(4);
        match word(0) {
            Some(xid) if vers != Some(v2::VERSION) || crate::max_version() < v2::VERSION => {
                self.bad_message(&v1::Error::Short);
                self.reply_error_to(xid, vers.unwrap_or(v1::VERSION), ErrorBody::Chunk);
            }
            _ => {
                self.bad_msgs.fetch_add(1, Relaxed);
                VERS_STATS.short_dropped();
                pr_warn_peer!(
                    "message of {} bytes, too short to answer: dropped\n",
                    buf.len()
                );
            }
        }
    }

    /// Logs the first malformed message of the connection; counts the others.
    fn bad_message(&self, e: &v1::Error) {
        if self.bad_msgs.fetch_add(1, Relaxed) == 0 {
            pr_warn_peer!("malformed RPC-over-RDMA message: {e:?} (further ones not logged)\n");
        }
    }

    /// [`SvcConn::bad_message`] for a refused version 2 message.
    fn bad_v2(&self, r: &Refusal) {
        if self.bad_msgs.fetch_add(1, Relaxed) == 0 {
            pr_warn_peer!(
                "malformed RPC-over-RDMA version 2 message: {r:?} (further ones not logged)\n"
            );
        }
    }

    /// Rebuilds the Call received in `buf` (its header decoded into `hdr`) and its Read chunks
    /// in `rq_pages`; returns its length.
    fn pull(
        &self,
        rqst: &mut SvcRqst<RecvCtxt>,
        buf: &[u8],
        hdr: &Call,
    ) -> core::result::Result<u32, PullError> {
        let inline = buf.get(hdr.payload_offset..).ok_or(PullError::Chunk)?;
        let cap = rqst.arg_capacity();
        let mut plan: KVec<(u32, Segment)> = KVec::new();
        let mut stream = 0u32;
        let add = |stream: &mut u32, n: u64| -> core::result::Result<u32, PullError> {
            let at = *stream;
            let end = u64::from(at).saturating_add(n);
            if end > u64::from(cap) {
                return Err(PullError::Chunk);
            }
            *stream = u32::try_from(end).map_err(|_| PullError::Chunk)?;
            Ok(at)
        };
        if let Some(pz) = hdr.position_zero(buf) {
            // As svc_rdma_read_call_chunk: the message is the Position-Zero Read chunk, with
            // every other Read chunk inserted at its position (positions count the message
            // being rebuilt). `call` is how much of the Position-Zero chunk is placed so far.
            let mut call = 0u64;
            // Places bytes `call..call + len` of the Position-Zero chunk next in the stream.
            let take_call = |stream: &mut u32,
                             call: &mut u64,
                             len: u64,
                             plan: &mut KVec<(u32, Segment)>|
             -> core::result::Result<(), PullError> {
                let (mut skip, mut left) = (*call, len);
                for s in pz.segments() {
                    let seg_len = u64::from(s.length);
                    if skip >= seg_len {
                        skip -= seg_len;
                        continue;
                    }
                    if left == 0 {
                        break;
                    }
                    let n = (seg_len - skip).min(left);
                    let at = add(stream, n)?;
                    let piece = Segment {
                        handle: s.handle,
                        length: u32::try_from(n).map_err(|_| PullError::Chunk)?,
                        offset: s.offset.checked_add(skip).ok_or(PullError::Chunk)?,
                    };
                    plan.push((at, piece), GFP_KERNEL)?;
                    left -= n;
                    skip = 0;
                }
                if left != 0 {
                    return Err(PullError::Chunk);
                }
                *call += len;
                Ok(())
            };
            for chunk in hdr.read_chunks(buf) {
                let n = u64::from(chunk.position())
                    .checked_sub(u64::from(stream))
                    .ok_or(PullError::Chunk)?;
                take_call(&mut stream, &mut call, n, &mut plan)?;
                for s in chunk.segments() {
                    let at = add(&mut stream, u64::from(s.length))?;
                    plan.push((at, s), GFP_KERNEL)?;
                }
                // Its XDR round-up, which later positions count (RFC 8166; C forgets it).
                let pad = (4 - (chunk.length() % 4) as u32) % 4;
                let at = add(&mut stream, u64::from(pad))?;
                rqst.fill_pages(at, None, pad)?;
            }
            let rest = pz.length().checked_sub(call).ok_or(PullError::Chunk)?;
            take_call(&mut stream, &mut call, rest, &mut plan)?;
        } else {
            let mut used = 0usize;
            for chunk in hdr.read_chunks(buf) {
                let pos = chunk.position();
                let n = pos.checked_sub(stream).ok_or(PullError::Chunk)?;
                let piece = inline
                    .get(used..used.saturating_add(n as usize))
                    .ok_or(PullError::Chunk)?;
                let at = add(&mut stream, u64::from(n))?;
                rqst.fill_pages(at, Some(piece), n)?;
                used += n as usize;
                for s in chunk.segments() {
                    let at = add(&mut stream, u64::from(s.length))?;
                    plan.push((at, s), GFP_KERNEL)?;
                }
                let pad = (4 - (chunk.length() % 4) as u32) % 4;
                let at = add(&mut stream, u64::from(pad))?;
                rqst.fill_pages(at, None, pad)?;
            }
            let rest = inline.get(used..).ok_or(PullError::Chunk)?;
            let n = u32::try_from(rest.len()).map_err(|_| PullError::Chunk)?;
            let at = add(&mut stream, u64::from(n))?;
            rqst.fill_pages(at, Some(rest), n)?;
        }
        self.read_plan(rqst, &plan)?;
        Ok(stream)
    }

    /// RDMA Reads of `plan` (offset in `rq_pages`, remote segment), in [`Chains`] each waited
    /// for. Only a single context larger than the Send Queue is refused (`E2BIG`, the connection
    /// closed), as C refuses it.
    fn read_plan(&self, rqst: &SvcRqst<RecvCtxt>, plan: &[(u32, Segment)]) -> Result {
        let mut chains = Chains::new(self, Op::Read, plan.len())?;
        for &(at, s) in plan {
            if s.length == 0 {
                continue;
            }
            chains.push(s.offset, s.handle, || rqst.arg_sgt(&self.rw, at, s.length))?;
        }
        chains.post_last()
    }
}
