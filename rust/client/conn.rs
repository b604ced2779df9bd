// SPDX-License-Identifier: GPL-2.0

//! The data path of one client connection: calls out, replies in.
//!
//! A [`Conn`] owns the QP of a connection and everything posted on it: Send buffers (one per
//! request the server may have outstanding), Receive buffers, and a pool of FRWR memory
//! regions. [`Conn::send`] follows `rpcrdma_marshal_req` and `frwr_send`: the plan comes from
//! [`marshal::plan`], chunks are registered (REG_MR chained ahead of the Send), the transport
//! header is encoded with [`v1::encode`] into the Send buffer and the inline part of the call
//! is copied after it. A Receive completion is handled as `rpcrdma_reply_handler`: the header
//! is decoded with [`Header::decode_reply`], the XID matched against sunrpc's queue, the credit
//! grant applied to the congestion window, the echoed chunks checked against what the call
//! offered ([`echo`]), the request's memory regions invalidated (remotely by the server's Send
//! With Invalidate, or by a chain of LOCAL_INV whose completion completes the RPC) and
//! unmapped, and only then the inline part of the reply copied into the request's buffer, as
//! `rpcrdma_complete_rqst` does: with bounce buffers (`swiotlb=force`) or a non-coherent
//! device, unmapping copies the device's view of the mapped pages over them, which would undo
//! a copy made before. Until the reply is placed the Receive holding it is not re-posted; it
//! travels with the LOCAL_INV chain ([`Job::Reply`]).
//!
//! # Ownership of the memory regions
//!
//! Each MR of the pool is free, registered for a request, or being invalidated for it (the
//! request is known by its [`Rqst::id`]). A registration ends, and the MR returns to the pool
//! unmapped, when the reply's invalidation completes, when sunrpc releases the request
//! (`buf_free`, which invalidates synchronously), or when the connection is shut down (the
//! QP is drained first, so the peer cannot reach the memory any more).
//!
//! # Teardown
//!
//! Posted work requests hold an `Arc<Conn>`. [`Conn::shutdown`] marks the connection closing
//! (nothing is posted any more), drains the QP (every posted request comes back), unmaps every
//! MR and empties the pools, which ends those references.

#![forbid(unsafe_code)]

use kernel::{
    new_spinlock,
    prelude::*,
    sync::{
        atomic::{
            Atomic,
            Relaxed, //
        },
        Arc,
        Completion,
        SpinLock, //
    }, //
};

use super::endpoint::CmEvents;
use crate::{
    proto::{
        credits, echo,
        marshal::{
            self,
            CallChunk,
            ReplyChunk, //
        },
        v1::{
            self,
            Body,
            ErrorBody,
            Fixed,
            Header,
            Limits,
            ReadSegment,
            Segment, //
        },
        xdr::Encoder,
    },
    rdma::{
        cm::SockAddr,
        mr::{
            Buf,
            Mr, //
        },
        ratelimit::{
            pr_info_peer,
            pr_warn_peer, //
        },
        verbs::{
            Done,
            Qp,
            Wc,
            Wr,
            MAX_CHAIN, //
        },
    },
    sunrpc::xprt::{
        Link,
        Pinned,
        Rqst,
        RqstInfo,
        Stats, //
    },
    trace::{
        self,
        BadReply, //
    },
};

/// The transport's counters (`struct rpcrdma_stats`), kept across reconnects.
pub(crate) struct Counters {
    read_chunk_count: Atomic<u64>,
    write_chunk_count: Atomic<u64>,
    reply_chunk_count: Atomic<u64>,
    total_rdma_request: Atomic<u64>,
    total_rdma_reply: Atomic<u64>,
    pullup_copy_count: Atomic<u64>,
    fixup_copy_count: Atomic<u64>,
    failed_marshal_count: Atomic<u64>,
    bad_reply_count: Atomic<u64>,
    nomsg_call_count: Atomic<u64>,
    mrs_allocated: Atomic<u64>,
    local_inv_needed: Atomic<u64>,
    empty_sendctx_q: Atomic<u64>,
}

impl Counters {
    /// New counters, all zero.
    pub(crate) fn new() -> Self {
        Self {
            read_chunk_count: Atomic::new(0),
            write_chunk_count: Atomic::new(0),
            reply_chunk_count: Atomic::new(0),
            total_rdma_request: Atomic::new(0),
            total_rdma_reply: Atomic::new(0),
            pullup_copy_count: Atomic::new(0),
            fixup_copy_count: Atomic::new(0),
            failed_marshal_count: Atomic::new(0),
            bad_reply_count: Atomic::new(0),
            nomsg_call_count: Atomic::new(0),
            mrs_allocated: Atomic::new(0),
            local_inv_needed: Atomic::new(0),
            empty_sendctx_q: Atomic::new(0),
        }
    }

    /// The counters as mountstats prints them.
    pub(crate) fn snapshot(&self) -> Stats {
        Stats {
            read_chunk_count: self.read_chunk_count.load(Relaxed),
            write_chunk_count: self.write_chunk_count.load(Relaxed),
            reply_chunk_count: self.reply_chunk_count.load(Relaxed),
            total_rdma_request: self.total_rdma_request.load(Relaxed),
            total_rdma_reply: self.total_rdma_reply.load(Relaxed),
            pullup_copy_count: self.pullup_copy_count.load(Relaxed),
            fixup_copy_count: self.fixup_copy_count.load(Relaxed),
            hardway_register_count: 0,
            failed_marshal_count: self.failed_marshal_count.load(Relaxed),
            bad_reply_count: self.bad_reply_count.load(Relaxed),
            nomsg_call_count: self.nomsg_call_count.load(Relaxed),
            mrs_recycled: 0,
            mrs_orphaned: 0,
            mrs_allocated: self.mrs_allocated.load(Relaxed),
            local_inv_needed: self.local_inv_needed.load(Relaxed),
            empty_sendctx_q: self.empty_sendctx_q.load(Relaxed),
        }
    }
}

/// Who holds a memory region of the pool.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Owner {
    /// Nobody: unmapped, ready for [`Mr::map`].
    Free,
    /// Registered for the request of this id, advertised to the server.
    Registered(usize),
    /// Registered for the request of this id, a LOCAL_INV posted.
    Invalidating(usize),
}

/// What a registered memory region was offered to the server as.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// A segment of the call's Read chunk.
    Read,
    /// A segment of the Write chunk.
    Write,
    /// A segment of the Reply chunk.
    Reply,
}

/// A memory region of the pool.
struct Slot {
    mr: Mr,
    owner: Owner,
    /// While registered: what it was offered as, its index in that chunk, and the segment as
    /// advertised (what the server's echo is checked against).
    offer: (Role, usize, Segment),
}

/// Where a checked reply's RPC message is.
#[derive(Clone, Copy)]
enum Placement {
    /// `RDMA_MSG`: bytes `start..end` of the received message are the inline part, and
    /// `written` bytes were written into the Write chunk.
    Inline {
        start: usize,
        end: usize,
        written: u32,
    },
    /// `RDMA_NOMSG`: the server wrote a reply of this length into the Reply chunk.
    ReplyChunk(u32),
}

/// Why a LOCAL_INV chain was posted, and what its completion ends.
enum Job {
    /// The reply of a request, in the Receive `recv`: placed and completed once the request's
    /// memory regions are unmapped; the Receive is re-posted after.
    Reply {
        pinned: Pinned,
        result: Result<Placement>,
        recv: KBox<Wr<RecvCtx>>,
    },
    /// `buf_free` of a request waits for it.
    Release(Arc<Completion>),
}

/// The context of a LOCAL_INV chain's signaled work request.
struct InvCtx {
    conn: Arc<Conn>,
    /// The request whose MRs are being invalidated.
    id: usize,
    job: Option<Job>,
}

/// The context of a Send: the buffer returns to the pool on completion.
struct SendCtx {
    conn: Arc<Conn>,
}

/// The context of a Receive.
pub(crate) struct RecvCtx {
    conn: Arc<Conn>,
}

/// The mutable state of a [`Conn`].
struct State {
    /// Set by [`Conn::shutdown`]: nothing is posted any more.
    closing: bool,
    /// A completion error ended the connection (logged once).
    lost: bool,
    /// Free Send work requests, each with its buffer.
    sends: KVec<KBox<Wr<SendCtx>>>,
    /// Free LOCAL_INV signal work requests.
    invs: KVec<KBox<Wr<InvCtx>>>,
    /// The memory regions.
    mrs: KVec<Slot>,
    /// The server's current credit grant.
    credits: u32,
    /// The connection's marshaling parameters, set once it is established.
    params: Option<marshal::Connection>,
}

/// The data path of one connection.
#[pin_data]
pub(crate) struct Conn {
    qp: Qp<CmEvents>,
    link: Link,
    counters: Arc<Counters>,
    /// The server's address (for the tracepoints).
    peer: SockAddr,
    /// Requests we provisioned for; also the credits we ask for.
    max_requests: u32,
    #[pin]
    state: SpinLock<State>,
    /// Completed once [`Conn::shutdown`] has drained the QP and unmapped every MR.
    #[pin]
    drained: Completion,
}

/// Limits on what a reply header may describe: we offer at most one Write chunk.
const REPLY_LIMITS: Limits = Limits {
    max_segments: marshal::MAX_HDR_SEGS,
    max_read_chunks: 0,
    max_write_chunks: 1,
    max_read_bytes: 0,
    max_write_bytes: u32::MAX as u64,
};

/// A marshaling failure: the errno for sunrpc (`EIO` fails the RPC, `ENOBUFS` retries it,
/// `ENOTCONN` reconnects).
fn marshal_errno(e: marshal::Error) -> Error {
    Error::from_errno(e.errno())
}

impl Conn {
    /// A connection's data path over `qp` to the server at `peer`, for `max_requests`
    /// requests. May sleep.
    pub(crate) fn new(
        qp: Qp<CmEvents>,
        link: Link,
        counters: Arc<Counters>,
        max_requests: u32,
        peer: SockAddr,
    ) -> Result<Arc<Self>> {
        let n = usize::try_from(max_requests).map_err(|_| EINVAL)?;
        Arc::pin_init(
            try_pin_init!(Self {
                qp,
                link,
                counters,
                peer,
                max_requests,
                state <- new_spinlock!(
                    State {
                        closing: false,
                        lost: false,
                        sends: KVec::with_capacity(n, GFP_KERNEL)?,
                        invs: KVec::with_capacity(n, GFP_KERNEL)?,
                        mrs: KVec::new(),
                        credits: 1,
                        params: None,
                    },
                    "rpcrdma_rs_conn"
                ),
                drained <- Completion::new(),
            }),
            GFP_KERNEL,
        )
    }

    /// Fills the pools: `max_requests` Send buffers of `send_len` bytes and LOCAL_INV requests,
    /// `nmrs` memory regions of `depth` pages, and `nrecv` Receives of `recv_len` bytes.
    pub(crate) fn provision(
        this: &Arc<Self>,
        send_len: usize,
        recv_len: usize,
        nrecv: u32,
        nmrs: u32,
        depth: u32,
    ) -> Result {
        use crate::rdma::verbs::{
            Direction,
            DmaBuf, //
        };
        let dev = this.qp.device();
        for _ in 0..this.max_requests {
            let mut bufs = KVec::with_capacity(1, GFP_KERNEL)?;
            bufs.push(
                DmaBuf::new(dev, send_len, Direction::ToDevice, GFP_KERNEL)?,
                GFP_KERNEL,
            )?;
            let send = Wr::send(bufs, SendCtx { conn: this.clone() }, GFP_KERNEL)?;
            let inv = Wr::signal(
                InvCtx {
                    conn: this.clone(),
                    id: 0,
                    job: None,
                },
                GFP_KERNEL,
            )?;
            let mut st = this.state.lock();
            st.sends.push(send, GFP_ATOMIC)?;
            st.invs.push(inv, GFP_ATOMIC)?;
        }
        let mut mrs = KVec::with_capacity(nmrs as usize, GFP_KERNEL)?;
        for _ in 0..nmrs {
            let mr = Mr::new(this.qp.pd(), depth, false)?;
            mrs.push(
                Slot {
                    mr,
                    owner: Owner::Free,
                    offer: (Role::Read, 0, Segment::default()),
                },
                GFP_KERNEL,
            )?;
        }
        this.counters.mrs_allocated.add(u64::from(nmrs), Relaxed);
        this.state.lock().mrs = mrs;
        for _ in 0..nrecv {
            let buf = DmaBuf::new(dev, recv_len, Direction::FromDevice, GFP_KERNEL)?;
            let wr = Wr::recv(buf, RecvCtx { conn: this.clone() }, GFP_KERNEL)?;
            this.qp.post_recv(wr)?;
        }
        Ok(())
    }

    /// Sets the parameters negotiated when the connection was established.
    pub(crate) fn set_params(&self, params: marshal::Connection) {
        self.state.lock().params = Some(params);
    }

    /// Stops posting, drains the QP and ends every registration. May sleep.
    pub(crate) fn shutdown(&self) {
        self.state.lock().closing = true;
        self.qp.drain();
        let (sends, invs) = {
            let mut st = self.state.lock();
            for s in st.mrs.iter_mut() {
                s.mr.unmap();
                s.owner = Owner::Free;
            }
            (
                core::mem::take(&mut st.sends),
                core::mem::take(&mut st.invs),
            )
        };
        // Outside the lock: these hold references to `self`.
        drop(sends);
        drop(invs);
        self.drained.complete_all();
    }

    /// Marshals and sends the call `rqst` (`rpcrdma_marshal_req` + `frwr_send`).
    pub(crate) fn send(&self, rqst: &Rqst) -> Result {
        let info = rqst.info();
        let mut st = self.state.lock();
        if st.closing {
            return Err(ENOTCONN);
        }
        let params = st.params.ok_or(ENOTCONN)?;
        let call = marshal::Call {
            snd: info.snd.buf,
            rcv: info.rcv.buf,
            rcv_buflen: info.rcv.buflen,
            ddp_allowed: info.ddp_allowed,
            write_payload: info.write_payload,
            read_payload: info.read_payload,
        };
        let plan = match marshal::plan(&call, &params) {
            Ok(p) => p,
            Err(e) => {
                drop(st);
                self.counters.failed_marshal_count.add(1, Relaxed);
                trace::xprtrdma_marshal_failed(rqst, info.xid, marshal_errno(e));
                pr_warn_peer!("xid {:08x}: cannot marshal the call: {:?}\n", info.xid, e);
                return Err(marshal_errno(e));
            }
        };
        let Some(mut wr) = st.sends.pop() else {
            drop(st);
            self.counters.empty_sendctx_q.add(1, Relaxed);
            return Err(ENOBUFS);
        };
        // Registrations are recorded (`Owner::Registered`) before the Send is posted, so a
        // reply cannot overtake them.
        let mut used = [0usize; MAX_CHAIN];
        let mut nused = 0usize;
        match self.build(
            &mut st, rqst, &info, &plan, &params, &mut wr, &mut used, &mut nused,
        ) {
            Ok(()) => {}
            Err(e) => {
                Self::release_slots(&mut st, &used[..nused]);
                // Cannot fail: the pool had room for it before.
                let _ = st.sends.push(wr, GFP_ATOMIC);
                drop(st);
                if e == ENOBUFS {
                    // No free memory region (the only ENOBUFS of `build`): sunrpc retries.
                    trace::xprtrdma_nomrs_err(&self.peer, rqst);
                } else {
                    self.counters.failed_marshal_count.add(1, Relaxed);
                    trace::xprtrdma_marshal_failed(rqst, info.xid, e);
                    pr_warn_peer!("xid {:08x}: cannot marshal the call: {:?}\n", info.xid, e);
                }
                return Err(e);
            }
        }
        let mrs = &st.mrs;
        let r = self
            .qp
            .post_send_reg(wr, used[..nused].iter().map(|&i| &mrs[i].mr));
        if let Err(e) = r {
            Self::release_slots(&mut st, &used[..nused]);
            drop(st);
            trace::xprtrdma_post_send_err(rqst, e);
            pr_warn_peer!("xid {:08x}: ib_post_send failed: {:?}\n", info.xid, e);
            return Err(ENOTCONN);
        }
        Ok(())
    }

    /// Registers the chunks of `plan`, encodes the header and copies the inline part into the
    /// Send buffer of `wr`. The MRs used are recorded in `used`, owned by `rqst`.
    #[expect(clippy::too_many_arguments)]
    fn build(
        &self,
        st: &mut State,
        rqst: &Rqst,
        info: &RqstInfo,
        plan: &marshal::Plan,
        params: &marshal::Connection,
        wr: &mut KBox<Wr<SendCtx>>,
        used: &mut [usize; MAX_CHAIN],
        nused: &mut usize,
    ) -> Result {
        let id = rqst.id();
        let snd = &info.snd.buf;
        let rcv = &info.rcv.buf;

        // The Read list: the call's pages at the head's end, or the whole call at zero.
        let mut reads = [ReadSegment::default(); marshal::MAX_HDR_SEGS as usize];
        let mut nreads = 0;
        let read = match plan.call {
            CallChunk::Inline { .. } => None,
            CallChunk::ReadChunk { position } => Some((position, snd.head_len, snd.page_len)),
            CallChunk::PositionZero => Some((0, 0, info.snd.len)),
        };
        if let Some((position, offset, len)) = read {
            let mut segs = [Segment::default(); marshal::MAX_HDR_SEGS as usize];
            let n = self.register(
                st,
                rqst,
                id,
                (Buf::Call, Role::Read),
                offset,
                len,
                &mut segs,
                used,
                nused,
            )?;
            for (r, s) in reads.iter_mut().zip(&segs[..n]) {
                *r = ReadSegment {
                    position,
                    segment: *s,
                };
            }
            nreads = n;
            // As `rpcrdma_encode_read_list`: one per segment (MR) offered.
            self.counters.read_chunk_count.add(n as u64, Relaxed);
        }

        // The Write chunk (the reply's pages) or the Reply chunk (the whole reply buffer).
        let mut segs = [Segment::default(); marshal::MAX_HDR_SEGS as usize];
        let mut nsegs = 0;
        let reply = match plan.reply {
            ReplyChunk::Inline => None,
            ReplyChunk::WriteChunk => Some((rcv.head_len, rcv.page_len)),
            ReplyChunk::ReplyChunk => Some((0, info.rcv.buf.len().try_into().map_err(|_| EINVAL)?)),
        };
        if let Some((offset, len)) = reply {
            let role = if plan.reply == ReplyChunk::WriteChunk {
                Role::Write
            } else {
                Role::Reply
            };
            nsegs = self.register(
                st,
                rqst,
                id,
                (Buf::Reply, role),
                offset,
                len,
                &mut segs,
                used,
                nused,
            )?;
            // As `rpcrdma_encode_write_list` and `rpcrdma_encode_reply_chunk`: one per
            // segment (MR) offered, and the bytes offered for the server's RDMA Writes.
            if plan.reply == ReplyChunk::WriteChunk {
                self.counters.write_chunk_count.add(nsegs as u64, Relaxed);
            } else {
                self.counters.reply_chunk_count.add(nsegs as u64, Relaxed);
            }
            self.counters
                .total_rdma_request
                .add(u64::from(len), Relaxed);
        }
        let write = [&segs[..nsegs]];
        let lists = v1::Lists {
            reads: &reads[..nreads],
            writes: if plan.reply == ReplyChunk::WriteChunk {
                &write
            } else {
                &[]
            },
            reply: (plan.reply == ReplyChunk::ReplyChunk).then_some(&segs[..nsegs]),
        };

        // The header, then the inline part of the call, into the Send buffer.
        let limit = params.inline_send as usize;
        let buf = wr.buf_mut(0).ok_or(EINVAL)?.as_mut_slice();
        let limit = limit.min(buf.len());
        let hdr = v1::encode(
            &mut Encoder::new(&mut buf[..limit]),
            info.xid,
            self.max_requests,
            plan.proc,
            &lists,
        )
        .map_err(|_| EMSGSIZE)?;
        let mut len = hdr;
        let mut copy = |offset: u32, n: u32| -> Result {
            let end = len.checked_add(n as usize).ok_or(EMSGSIZE)?;
            if end > limit {
                return Err(EMSGSIZE);
            }
            rqst.copy_call(offset, &mut buf[len..end])?;
            len = end;
            Ok(())
        };
        match plan.call {
            CallChunk::Inline { .. } => copy(0, info.snd.len)?,
            CallChunk::ReadChunk { .. } => {
                copy(0, snd.head_len)?;
                // A tail that is only the pad of the page list is not sent; otherwise its
                // content follows the head, without the pad (`rpcrdma_prepare_readch`).
                if snd.tail_len > 3 {
                    let pad = snd.tail_len & 3;
                    copy(snd.head_len + snd.page_len + pad, snd.tail_len - pad)?;
                }
            }
            CallChunk::PositionZero => self.counters.nomsg_call_count.add(1, Relaxed),
        }
        // As `rpcrdma_pullup_pagelist` and `rpcrdma_pullup_tail_iov`: the bytes of the page
        // list and the tail copied into the Send buffer (C's head is the buffer already).
        let head = match plan.call {
            CallChunk::PositionZero => 0,
            _ => snd.head_len as usize,
        };
        self.counters
            .pullup_copy_count
            .add((len - hdr).saturating_sub(head) as u64, Relaxed);
        wr.set_len(0, len)
    }

    /// Registers bytes `offset..offset + len` of `buf` of `rqst` with as many MRs as needed
    /// (at most `out.len()`), offered as `role`; returns the number of segments written to
    /// `out`.
    #[expect(clippy::too_many_arguments)]
    fn register(
        &self,
        st: &mut State,
        rqst: &Rqst,
        id: usize,
        (buf, role): (Buf, Role),
        mut offset: u32,
        mut len: u32,
        out: &mut [Segment; marshal::MAX_HDR_SEGS as usize],
        used: &mut [usize; MAX_CHAIN],
        nused: &mut usize,
    ) -> Result<usize> {
        let mut n = 0;
        if len == 0 {
            return Err(EINVAL);
        }
        while len > 0 {
            if n == out.len() || *nused == used.len() {
                return Err(EMSGSIZE);
            }
            let i = st
                .mrs
                .iter()
                .position(|s| s.owner == Owner::Free)
                .ok_or(ENOBUFS)?;
            let slot = &mut st.mrs[i];
            let (covered, seg) = slot.mr.map(rqst, buf, offset, len)?;
            slot.owner = Owner::Registered(id);
            slot.offer = (role, n, seg);
            used[*nused] = i;
            *nused += 1;
            out[n] = seg;
            n += 1;
            offset += covered;
            len -= covered.min(len);
        }
        Ok(n)
    }

    /// Ends registrations that were never advertised (or whose QP is gone).
    fn release_slots(st: &mut State, used: &[usize]) {
        for &i in used {
            if let Some(s) = st.mrs.get_mut(i) {
                s.mr.unmap();
                s.owner = Owner::Free;
            }
        }
    }

    /// The indices of the MRs held by request `id` in state `from`, moved to state `to`.
    fn take_slots(st: &mut State, from: Owner, to: Owner, out: &mut [usize; MAX_CHAIN]) -> usize {
        let mut n = 0;
        for (i, s) in st.mrs.iter_mut().enumerate() {
            if s.owner == from && n < out.len() {
                s.owner = to;
                out[n] = i;
                n += 1;
            }
        }
        n
    }

    /// Posts a LOCAL_INV chain for MRs `idx` (now [`Owner::Invalidating`]) of request `id`.
    ///
    /// If the chain cannot be posted, the MRs are still registered with the server, so they
    /// are neither unmapped nor returned to the pool: the connection is closed instead
    /// (`frwr_unmap_async`) and [`Conn::shutdown`] unmaps them once the QP is drained. The job
    /// is then handed back unfinished.
    fn post_inv(
        this: &Arc<Self>,
        st: &mut State,
        id: usize,
        idx: &[usize],
        job: Job,
    ) -> core::result::Result<(), Job> {
        if st.closing {
            // `shutdown` may have drained the Send Queue already: a LOCAL_INV posted now would
            // complete after it, keeping the connection (and its QP, CQs and MRs) alive past
            // the transport's teardown. `shutdown` unmaps the MRs once the QP is drained.
            return Err(job);
        }
        let wr = if super::inject_local_inv_failure() {
            None
        } else {
            st.invs.pop().or_else(|| {
                Wr::signal(
                    InvCtx {
                        conn: this.clone(),
                        id: 0,
                        job: None,
                    },
                    GFP_ATOMIC,
                )
                .ok()
            })
        };
        let Some(mut wr) = wr else {
            pr_warn_peer!("no memory to invalidate a request's MRs: closing the connection\n");
            this.link.force_disconnect();
            return Err(job);
        };
        wr.data_mut().id = id;
        wr.data_mut().job = Some(job);
        let mrs = &st.mrs;
        match this.qp.post_local_inv(wr, idx.iter().map(|&i| &mrs[i].mr)) {
            Ok(()) => Ok(()),
            Err((e, mut wr)) => {
                pr_warn_peer!("LOCAL_INV post failed: {:?}: closing the connection\n", e);
                let job = wr.data_mut().job.take();
                drop(wr);
                this.link.force_disconnect();
                job.map_or(Ok(()), Err)
            }
        }
    }

    /// `buf_free` of `rqst`: ends its registrations, waiting for their invalidation. May sleep.
    pub(crate) fn release(this: &Arc<Self>, rqst: &Rqst) {
        let id = rqst.id();
        let mut idx = [0usize; MAX_CHAIN];
        let mut st = this.state.lock();
        if st.closing {
            drop(st);
            // `shutdown` unmaps everything once the QP is drained.
            this.drained.wait_for_completion();
            return;
        }
        let n = Self::take_slots(
            &mut st,
            Owner::Registered(id),
            Owner::Invalidating(id),
            &mut idx,
        );
        if n == 0 {
            // MRs still invalidating for a request that no reply completes were left by a
            // LOCAL_INV that could not be posted: only the drain of the closing connection
            // ends them.
            let stuck = st.mrs.iter().any(|s| s.owner == Owner::Invalidating(id));
            drop(st);
            if stuck {
                this.drained.wait_for_completion();
            }
            return;
        }
        let Ok(done) = Arc::pin_init(Completion::new(), GFP_ATOMIC) else {
            // No memory to wait with: the connection must go to stop the peer.
            drop(st);
            this.link.force_disconnect();
            this.drained.wait_for_completion();
            return;
        };
        let r = Self::post_inv(this, &mut st, id, &idx[..n], Job::Release(done.clone()));
        drop(st);
        if r.is_ok() {
            done.wait_for_completion();
        } else {
            this.drained.wait_for_completion();
        }
    }

    /// Handles a received message (`rpcrdma_reply_handler`). Hands the Receive back to be
    /// re-posted now, or keeps it (in the LOCAL_INV chain's job) until the reply it holds has
    /// been placed.
    fn receive(this: &Arc<Self>, recv: KBox<Wr<RecvCtx>>, wc: &Wc) -> Option<KBox<Wr<RecvCtx>>> {
        let Some(buf) = recv.buf(0) else {
            return Some(recv);
        };
        let len = (wc.byte_len() as usize).min(buf.len());
        let msg = &buf.as_slice()[..len];
        let Some(fixed) = v1::peek(msg) else {
            this.counters.bad_reply_count.add(1, Relaxed);
            trace::xprtrdma_reply_err(BadReply::Short, &this.peer, None);
            pr_warn_peer!("short reply ({} bytes) dropped\n", msg.len());
            return Some(recv);
        };
        if fixed.vers != v1::VERSION {
            this.counters.bad_reply_count.add(1, Relaxed);
            trace::xprtrdma_reply_err(BadReply::Vers, &this.peer, Some(&fixed));
            pr_warn_peer!(
                "xid {:08x}: reply of version {} dropped\n",
                fixed.xid,
                fixed.vers
            );
            return Some(recv);
        }
        let credits = credits::sanitize_grant(fixed.credits, this.max_requests);
        let Some(Some(pinned)) = this.link.with(|x| {
            x.reply_seen();
            x.lookup(fixed.xid)
        }) else {
            // No request waits for it (late, duplicate or bogus XID): dropped.
            trace::xprtrdma_reply_err(BadReply::Rqst, &this.peer, Some(&fixed));
            return Some(recv);
        };
        trace::xprtrdma_reply(pinned.rqst(), fixed.xid, credits);
        {
            let mut st = this.state.lock();
            if st.credits != credits {
                st.credits = credits;
                drop(st);
                pinned.xprt().set_credits(credits);
            }
        }

        let id = pinned.rqst().id();
        let mut idx = [0usize; MAX_CHAIN];
        let mut st = this.state.lock();
        let result = this.check(&st, pinned.rqst(), msg, &fixed);
        if let Some(rkey) = wc.invalidated_rkey() {
            // The server invalidated one MR with its Send (`frwr_reminv`).
            if let Some(s) = st
                .mrs
                .iter_mut()
                .find(|s| s.owner == Owner::Registered(id) && s.mr.rkey() == rkey)
            {
                s.mr.unmap();
                s.owner = Owner::Free;
            }
        }
        let n = Self::take_slots(
            &mut st,
            Owner::Registered(id),
            Owner::Invalidating(id),
            &mut idx,
        );
        if n == 0 {
            // Every MR of the request is unmapped: the reply can be placed now.
            drop(st);
            this.complete_reply(pinned, result, &recv);
            return Some(recv);
        }
        // As `frwr_unmap_async`: one per MR to invalidate.
        this.counters.local_inv_needed.add(n as u64, Relaxed);
        // The LOCAL_INV completion places the reply and completes the RPC.
        let job = Job::Reply {
            pinned,
            result,
            recv,
        };
        match Self::post_inv(this, &mut st, id, &idx[..n], job) {
            Ok(()) => None,
            Err(Job::Reply { pinned, recv, .. }) => {
                drop(st);
                // The connection is closing: as `frwr_unmap_async`, the request is unpinned
                // without a reply, to be retransmitted on the next connection.
                drop(pinned);
                Some(recv)
            }
            Err(job @ Job::Release(_)) => {
                drop(st);
                job.finish(this);
                None
            }
        }
    }

    /// Checks a reply to request `id` (`rpcrdma_decode_msg` and friends): its header, and its
    /// chunks against what the call offered. The result is where the RPC message is, or the
    /// errno the RPC fails with.
    fn check(&self, st: &State, rqst: &Rqst, msg: &[u8], fixed: &Fixed) -> Result<Placement> {
        let (id, xid) = (rqst.id(), fixed.xid);
        let d = match Header::decode_reply(msg, &REPLY_LIMITS) {
            Ok(d) => d,
            Err(e) => {
                self.counters.bad_reply_count.add(1, Relaxed);
                trace::xprtrdma_reply_err(BadReply::Hdr, &self.peer, Some(fixed));
                pr_warn_peer!("xid {:08x}: bad reply header: {:?}\n", xid, e);
                return Err(EIO);
            }
        };
        // What the call offered for its reply, segment by segment.
        let mut write = [Segment::default(); marshal::MAX_HDR_SEGS as usize];
        let mut reply = [Segment::default(); marshal::MAX_HDR_SEGS as usize];
        let (mut nwrite, mut nreply) = (0, 0);
        for s in st.mrs.iter().filter(|s| s.owner == Owner::Registered(id)) {
            let (role, i, seg) = s.offer;
            let (segs, n) = match role {
                Role::Write => (&mut write, &mut nwrite),
                Role::Reply => (&mut reply, &mut nreply),
                Role::Read => continue,
            };
            if let Some(slot) = segs.get_mut(i) {
                *slot = seg;
                *n = (*n).max(i + 1);
            }
        }
        let offered = echo::Offered {
            write: (nwrite > 0).then_some(&write[..nwrite]),
            reply: (nreply > 0).then_some(&reply[..nreply]),
        };
        let bad_echo = |e: echo::Error| {
            self.counters.bad_reply_count.add(1, Relaxed);
            trace::xprtrdma_reply_err(BadReply::Hdr, &self.peer, Some(fixed));
            pr_warn_peer!(
                "xid {:08x}: reply does not match the chunks of the call: {:?}\n",
                xid,
                e
            );
            EIO
        };
        match d.header.body {
            Body::Msg(chunks) => {
                let written = echo::check_msg(&chunks, &offered).map_err(bad_echo)?;
                if d.payload_offset > msg.len() {
                    return Err(EIO);
                }
                Ok(Placement::Inline {
                    start: d.payload_offset,
                    end: msg.len(),
                    written,
                })
            }
            Body::NoMsg(chunks) => Ok(Placement::ReplyChunk(
                echo::check_nomsg(&chunks, &offered).map_err(bad_echo)?,
            )),
            Body::Error(ErrorBody::Vers { low, high }) => {
                trace::xprtrdma_err_vers(rqst, xid, low, high);
                pr_warn_peer!(
                    "xid {:08x}: server replied RDMA_ERROR ERR_VERS (it supports versions {}-{})\n",
                    xid,
                    low,
                    high
                );
                Err(EIO)
            }
            Body::Error(ErrorBody::Chunk) => {
                trace::xprtrdma_err_chunk(rqst, xid);
                pr_warn_peer!("xid {:08x}: server replied RDMA_ERROR ERR_CHUNK\n", xid);
                Err(EIO)
            }
        }
    }

    /// Places a checked reply, held by the Receive `recv`, into the request's buffer and
    /// completes the RPC (`rpcrdma_complete_rqst`). Every MR of the request must be unmapped
    /// already, so that no unmap can overwrite what is copied here.
    fn complete_reply(&self, mut pinned: Pinned, result: Result<Placement>, recv: &Wr<RecvCtx>) {
        let r = result.and_then(|p| match p {
            Placement::Inline {
                start,
                end,
                written,
            } => {
                let inline = recv
                    .buf(0)
                    .and_then(|b| b.as_slice().get(start..end))
                    .ok_or(EIO)?;
                let len = echo::msg_reply_len(inline.len(), written).ok_or(EIO)?;
                let copied = pinned.place_reply(inline, written);
                self.counters
                    .fixup_copy_count
                    .add(u64::from(copied), Relaxed);
                self.counters
                    .total_rdma_reply
                    .add(u64::from(written), Relaxed);
                Ok(len)
            }
            Placement::ReplyChunk(len) => {
                self.counters.total_rdma_reply.add(u64::from(len), Relaxed);
                Ok(len)
            }
        });
        pinned.complete(r);
    }

    /// Re-posts a Receive, unless the connection is closing.
    fn repost(this: &Arc<Self>, recv: KBox<Wr<RecvCtx>>) {
        let st = this.state.lock();
        if !st.closing {
            if let Err(e) = this.qp.post_recv(recv) {
                drop(st);
                pr_warn_peer!("ib_post_recv failed: {:?}\n", e);
                this.link.force_disconnect();
            }
        }
    }
}

impl Job {
    /// Ends the job once its MRs are released.
    fn finish(self, conn: &Arc<Conn>) {
        match self {
            Job::Reply {
                pinned,
                result,
                recv,
            } => {
                conn.complete_reply(pinned, result, &recv);
                Conn::repost(conn, recv);
            }
            Job::Release(done) => done.complete_all(),
        }
    }
}

impl Conn {
    /// A work request completed in error: the connection is unusable. Unless we are closing it
    /// already, sunrpc closes and reconnects it (`rpcrdma_flush_disconnect`). The first error
    /// of a live connection is logged (a flush there means something else, e.g. the device,
    /// moved the QP to the error state); later flushes are its consequence.
    fn completion_error(&self, what: &str, wc: &Wc) {
        let mut st = self.state.lock();
        if st.closing {
            return;
        }
        let first = !core::mem::replace(&mut st.lost, true);
        drop(st);
        if !wc.is_flush() {
            pr_warn_peer!(
                "{} failed: status {} vendor error {}\n",
                what,
                wc.status(),
                wc.vendor_err()
            );
        } else if first {
            pr_info_peer!(
                "connection lost: {} flushed (the QP went to the error state)\n",
                what
            );
        }
        self.link.force_disconnect();
    }
}

impl Done for SendCtx {
    fn done(wr: KBox<Wr<Self>>, wc: &Wc) {
        trace::xprtrdma_wc_send(wc);
        if !wc.is_success() {
            wr.data().conn.completion_error("Send", wc);
        }
        let conn = wr.data().conn.clone();
        let mut st = conn.state.lock();
        if !st.closing {
            // Cannot fail: the pool had room for it before.
            let _ = st.sends.push(wr, GFP_ATOMIC);
            return;
        }
        drop(st);
        drop(wr);
    }
}

impl Done for InvCtx {
    fn done(mut wr: KBox<Wr<Self>>, wc: &Wc) {
        // A failed LOCAL_INV leaves its MRs' rkeys valid: they are safe to reuse only because
        // the connection, and with it the QP and PD the rkeys belong to, is replaced.
        if !wc.is_success() {
            wr.data().conn.completion_error("LOCAL_INV", wc);
        }
        let conn = wr.data().conn.clone();
        let id = wr.data().id;
        let job = wr.data_mut().job.take();
        match &job {
            Some(Job::Release(_)) => trace::xprtrdma_wc_li_wake(wc),
            _ => trace::xprtrdma_wc_li_done(wc),
        }
        let mut st = conn.state.lock();
        for s in st.mrs.iter_mut() {
            if s.owner == Owner::Invalidating(id) {
                s.mr.unmap();
                s.owner = Owner::Free;
            }
        }
        let keep = !st.closing && st.invs.len() < st.invs.capacity();
        if keep {
            let _ = st.invs.push(wr, GFP_ATOMIC);
            drop(st);
        } else {
            drop(st);
            drop(wr);
        }
        if let Some(job) = job {
            job.finish(&conn);
        }
    }
}

impl Done for RecvCtx {
    fn done(wr: KBox<Wr<Self>>, wc: &Wc) {
        trace::xprtrdma_wc_receive(wc);
        if !wc.is_success() {
            wr.data().conn.completion_error("Receive", wc);
            return;
        }
        let conn = wr.data().conn.clone();
        if let Some(wr) = Conn::receive(&conn, wr, wc) {
            Conn::repost(&conn, wr);
        }
    }
}
