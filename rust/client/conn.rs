// SPDX-License-Identifier: GPL-2.0

//! The data path of one client connection: calls out, replies in.
//!
//! A [`ClientConn`] owns the QP of a connection and everything posted on it: Send buffers (one per
//! request the server may have outstanding), Receive buffers, and a pool of FRWR memory
//! regions. [`ClientConn::send`] follows `rpcrdma_marshal_req` and `frwr_send`: the plan comes from
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
//! Every MR of the pool is in exactly one list ([`MrList`]), and whoever holds the list owns
//! the MR: the free stack, the list of the request that registered it (in [`Reqs`], by
//! [`RpcRqst::id`]), the sender while it maps and posts, or the LOCAL_INV chain invalidating it.
//! Nothing scans the pool: a reply, `buf_free` and a LOCAL_INV completion find the request's
//! MRs in its own list, with what each was offered as (the echo check's reference). A
//! registration ends, and the MR returns to the free stack unmapped, when the server
//! invalidated it (Send With Invalidate), when the LOCAL_INV chain of the reply or of
//! `buf_free` completes, or when the connection is shut down (the QP is drained first, so the
//! peer cannot reach the memory any more).
//!
//! # Locking
//!
//! One spinlock ([`State`]) guards the pools and the table of requests, and is held only to
//! move work requests and MRs between them: never across DMA mapping or unmapping, copying or
//! posting. [`ClientConn::send`] takes a Send work request and one MR per chunk under the lock
//! (more, one at a time, if a chunk needs them), then maps, encodes, copies and posts without
//! it, and takes the lock again to record the MRs in the request's list. Meanwhile the
//! request's entry is marked `posting`: a reply that overtakes the sender (the server may
//! answer before `ib_post_send` returns) is parked in the entry, and the sender handles it
//! once the MRs are recorded. A LOCAL_INV chain is posted the same way: its MRs move into the
//! chain's work request, which is posted without the lock.
//!
//! # Teardown
//!
//! Posted work requests hold an `Arc<ClientConn>`. Whoever posts without the lock (a sender, a
//! LOCAL_INV chain) first counts itself in `posters` under the lock, after checking that the
//! connection is not closing, and uncounts itself under the lock once posted.
//! [`ClientConn::shutdown`] marks the connection closing and waits until `posters` is zero, so
//! that no post can land after the QP is drained; it then drains the QP (every posted request
//! comes back), unmaps every MR and empties the pools, which ends those references.

#![forbid(unsafe_code)]

use kernel::{
    alloc::Flags,
    impl_has_delayed_work,
    impl_has_work,
    new_condvar,
    new_delayed_work,
    new_mutex,
    new_spinlock,
    new_work,
    prelude::*,
    sync::{
        atomic::{
            Atomic,
            Relaxed, //
        },
        Arc,
        Completion,
        CondVar,
        Mutex,
        SpinLock, //
    },
    workqueue::{
        DelayedWork,
        Work,
        WorkItem, //
    }, //
};

use super::{
    backchannel::{
        BcPool,
        Reason,
        BC_MAX_REQUESTS,
        BC_STATS, //
    },
    endpoint::CmEvents,
    mrs::{
        MrList,
        Reg,
        Reqs,
        Role,
        Stage, //
    }, //
    VERS_STATS,
};
use crate::{
    proto::{
        backchannel::{
            self,
            BadCall,
            Inbound, //
        },
        continuation::{
            self,
            Reassembly, //
        },
        credits, echo,
        keepalive::KeepAlive,
        marshal::{
            self,
            CallChunk,
            ReplyChunk, //
        },
        negotiate::{
            self,
            Action,
            PeerMemory,
            Requester, //
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
        v2,
        v2msg::{
            self,
            ConnProps,
            CTL_MESSAGES, //
        },
        xdr::Encoder,
    },
    rdma::{
        cm::SockAddr,
        mr::{
            page_size,
            Mr, //
        },
        ratelimit::{
            pr_info_peer,
            pr_warn_peer,
            RateLimit, //
        },
        verbs::{
            Done,
            Qp,
            Wc,
            Wr,
            MAX_CHAIN, //
        },
        work,
    },
    reasm,
    sunrpc::xprt::{
        Buf,
        Pinned,
        RpcRqst,
        RpcXprtLink,
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
    /// The transport's connections whose lines (connected, version, the server's properties,
    /// connection lost) go to the log at info level: [`CONN_LOG_BURST`] per
    /// [`CONN_LOG_INTERVAL_MS`]. A server that accepts and drops connections in a loop, which
    /// sunrpc reconnects to at once, would otherwise keep the log busy; the others go to
    /// `pr_debug`, and the next logged connection says how many.
    pub(crate) conn_log: RateLimit,
}

/// The log level of one connection's lines: info, or `pr_debug` once [`Counters::conn_log`]
/// held the connection back. One flag for its data path ([`ClientConn`]) and its cm event
/// handler, set at connect.
pub(crate) struct LogLevel(Atomic<bool>);

impl LogLevel {
    /// Info level, until [`LogLevel::quiet`].
    pub(crate) fn new() -> Self {
        Self(Atomic::new(true))
    }

    /// Whether the connection's lines go to the log at info level.
    pub(crate) fn loud(&self) -> bool {
        self.0.load(Relaxed)
    }

    /// Sends the connection's lines to `pr_debug`.
    pub(crate) fn quiet(&self) {
        self.0.store(false, Relaxed);
    }
}

/// Connections of a transport logged per [`CONN_LOG_INTERVAL_MS`] (see
/// [`Counters::conn_log`]).
const CONN_LOG_BURST: u32 = 5;

/// The window of [`CONN_LOG_BURST`], in milliseconds.
const CONN_LOG_INTERVAL_MS: u32 = 60_000;

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
            conn_log: RateLimit::with(CONN_LOG_INTERVAL_MS, CONN_LOG_BURST),
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

/// Where a checked reply's RPC message is.
enum Placement {
    /// `RDMA_MSG`: bytes `start..end` of the received message are the inline part, and
    /// `written` bytes were written into the Write chunk.
    Inline {
        start: usize,
        end: usize,
        written: u32,
    },
    /// A continued `RDMA2_MSG` reassembled: `data` is its inline part (every message's
    /// payload in order), and `written` bytes were written into the Write chunk.
    Assembled { data: KVec<u8>, written: u32 },
    /// `RDMA_NOMSG`: the server wrote a reply of this length into the Reply chunk.
    ReplyChunk(u32),
    /// `ERR_VERS` refused our version 2 offer: the call is sent again, as version 1.
    Resend,
    /// An `RDMA2_ERROR` the draft answers with a retry: the call is sent again (by sunrpc, on
    /// `EAGAIN`) marshaled as this says.
    Retry(marshal::Force),
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
    conn: Arc<ClientConn>,
    /// The MRs being invalidated, owned by the chain while it is posted.
    mrs: MrList,
    job: Option<Job>,
}

/// The pool a Send work request belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pool {
    /// Calls ([`State::sends`]).
    Calls,
    /// Backward Replies ([`State::bc_sends`]).
    Backward,
    /// Transport messages that carry no RPC ([`State::ctl_sends`]).
    Control,
}

/// How many more work requests may go unsignaled before a Send must be signaled
/// (`re_send_count` and `re_send_batch` of the C client's `frwr_send`), behind
/// [`ClientConn::send_order`].
///
/// Only calls go unsignaled: a signaled Send's completion hands back every Send posted before
/// it (`Qp::post_send_reg`), so a batch of calls costs one completion and one wake-up of the
/// completion worker instead of one per call. A call's Send buffer comes back with the batch,
/// so the pool holds more buffers than there are credits ([`send_slack`]); backward Replies and
/// transport messages are always signaled: their pools are small, and a buffer held until the
/// next Send would stay away on an idle connection.
struct SendBudget {
    /// Work requests that may still go unsignaled.
    left: u32,
    /// The most between two signaled Sends: an eighth of the credits, as the C client's.
    batch: u32,
}

impl SendBudget {
    fn new(max_requests: u32) -> Self {
        let batch = max_requests >> 3;
        Self { left: batch, batch }
    }

    /// Whether to signal a Send of `pool` that ends a chain of `wrs` work requests (its
    /// `REG_MR`s and itself).
    fn signal(&mut self, pool: Pool, wrs: usize) -> bool {
        let wrs = u32::try_from(wrs).unwrap_or(u32::MAX);
        if pool == Pool::Calls && wrs <= self.left {
            self.left -= wrs;
            return false;
        }
        self.left = self.batch;
        true
    }
}

/// Send buffers for calls beyond the credits: the most a batch of unsignaled Sends can keep
/// from the pool until its signaled Send completes ([`SendBudget`]), at least one
/// (`rpcrdma_req_pool_slack`).
fn send_slack(max_requests: u32) -> u32 {
    max_requests.div_ceil(8)
}

/// The context of a Send: the buffer returns to its pool on completion.
struct SendCtx {
    conn: Arc<ClientConn>,
    /// Where the buffer returns.
    pool: Pool,
}

/// The context of a Receive.
pub(crate) struct RecvCtx {
    conn: Arc<ClientConn>,
}

impl RecvCtx {
    /// The connection the Receive was posted on.
    pub(crate) fn conn(&self) -> &Arc<ClientConn> {
        &self.conn
    }
}

/// How a received message is read, from its version and the connection's negotiation.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A version 1 reply.
    V1,
    /// A version 2 reply.
    V2,
    /// `ERR_VERS` answering our version 2 offer: the call goes again in version 1.
    Fallback,
}

/// A reply matched to its request, in the Receive that holds it.
struct Reply {
    pinned: Pinned,
    recv: KBox<Wr<RecvCtx>>,
    fixed: Fixed,
    /// How to read it.
    kind: Kind,
    /// The length of the received message.
    len: usize,
    /// The rkey the server invalidated with its Send, if it did.
    invalidated: Option<u32>,
    /// For the final message of a continued reply: the payloads of the messages before it.
    prefix: Option<KVec<u8>>,
}

/// What a received version 2 message is to message continuation (draft Section 6.3.2).
enum Continued {
    /// Not part of a continued reply.
    No,
    /// A message with `F_MORE`, its payload kept: nothing more to do with it.
    Fragment,
    /// The final message of a continued reply, with the payloads before it.
    Final(KVec<u8>),
    /// Dropped, with the sequence it broke.
    Dropped,
}

/// The MRs a sender holds while it maps and posts, outside the lock.
struct Hands {
    /// Taken from the pool, not mapped yet.
    spare: MrList,
    /// Mapped for the call, in the order registered.
    used: MrList,
    /// Most pages one MR covers toward this server: the device's depth, or less if the
    /// server's transport properties say so (`marshal::Registration::max_fr_depth`).
    depth: u32,
}

/// The mutable state of a [`ClientConn`].
struct State {
    /// Set by [`ClientConn::shutdown`]: nothing is posted any more.
    closing: bool,
    /// A completion error ended the connection (logged once), or [`ClientConn::flush`] did.
    lost: bool,
    /// Free Send work requests, each with its buffer.
    sends: KVec<KBox<Wr<SendCtx>>>,
    /// Free Send work requests of backward Replies: apart, so that calls never have more
    /// Sends outstanding than the Send Queue was sized for.
    bc_sends: KVec<KBox<Wr<SendCtx>>>,
    /// Free Send work requests of transport messages that carry no RPC (`RDMA2_CONNPROP`):
    /// [`CTL_MESSAGES`] of them, apart from the calls' for the same reason.
    ctl_sends: KVec<KBox<Wr<SendCtx>>>,
    /// The transport properties we advertise on a version 2 connection, set with `params`.
    props: Option<ConnProps>,
    /// Free LOCAL_INV signal work requests.
    invs: KVec<KBox<Wr<InvCtx>>>,
    /// The free memory regions, unmapped.
    free: MrList,
    /// The requests holding memory regions.
    reqs: Reqs<Reply>,
    /// Registered MRs no request entry could keep (cannot happen), until the drain.
    orphans: MrList,
    /// Posts in progress outside the lock (see the module's Teardown).
    posters: u32,
    /// A send found no free MR or Send buffer and waits for one (sunrpc's
    /// `XPRT_WRITE_SPACE`): the next to come back wakes it.
    space_wait: bool,
    /// The resend worker left a call in `resend` waiting for the same room: the wake-up queues
    /// it again ([`ClientConn::wake_resend`]).
    resend_waits: bool,
    /// Fault injection (`fail_retry_send`): the Send buffer a retry's transmission took away,
    /// as a concurrent send would hold it, until the resend worker's run ends
    /// ([`ClientConn::give_held_back`]): after it parked the call, which the return wakes.
    held: Option<KBox<Wr<SendCtx>>>,
    /// The MRs of the pool.
    nmrs: usize,
    /// The most MRs the pool may grow to (see [`ClientConn::provision`]).
    cap: usize,
    /// How many MRs the pool grows by at a time: one full-sized chunk's worth.
    batch: usize,
    /// The pages of each MR.
    depth: u32,
    /// The grow worker is queued or running.
    growing: bool,
    /// The server's current credit grant.
    credits: u32,
    /// The connection's marshaling parameters, set once it is established.
    params: Option<marshal::Connection>,
    /// Version negotiation (draft Section 4.3.3); `None` with `max_version=1`: version 1 only.
    nego: Option<Requester>,
    /// The XID of the call that offered version 2, once sent: only its reply settles the
    /// version.
    offer_xid: Option<u32>,
    /// Calls to send again on this connection, pinned, until the resend worker does: the one
    /// refused with `ERR_VERS`, and those of [`State::retries`] ([`RETRY_SLOTS`] + 1 at most).
    resend: KVec<Pinned>,
    /// Counted in [`super::LIVE_UNSHUT`] until [`ClientConn::shutdown`].
    unshut: Option<super::Live>,
    /// The continued reply being reassembled (one at a time: sequences may not interleave).
    reasm: Reassembly,
    /// Its payload so far.
    reasm_buf: KVec<u8>,
    /// The buffer of the last reassembled reply, given back once placed, or of the last broken
    /// sequence, for the next one: grown once to the largest reply, not at every message of
    /// every sequence.
    reasm_spare: KVec<u8>,
    /// XIDs of continued replies whose sequence broke: their final messages are dropped too.
    reasm_broken: [Option<u32>; 2],
    /// Calls to send again after an `RDMA2_ERROR`, by XID, with the marshaling to use
    /// ([`RETRY_SLOTS`] at most; see [`v2msg::retry`]).
    retries: KVec<(u32, marshal::Force)>,
    /// What the server's answers told of its Write chunks.
    write_refusals: v2msg::WriteChunkRefusals,
    /// The server takes no Write chunks, as `write_refusals` told: calls offer a Reply chunk in
    /// their place for the rest of the connection.
    no_write_chunks: bool,
    /// Receives of [`CONT_RECVS`] not kept by a call.
    cont_free: u32,
    /// The calls keeping some of [`CONT_RECVS`]: request id and how many.
    cont_held: KVec<(usize, u32)>,
    /// The server's credits taken by the messages of continued calls beyond one per call
    /// (each call holds one through sunrpc's congestion window), until their replies.
    call_extra: u32,
    /// The continued calls: request id and the credits of `call_extra` each holds.
    call_held: KVec<(usize, u32)>,
    /// Keep-alive bookkeeping of a version 2 connection.
    ka: KeepAlive,
    /// The keep-alive work item was started (and must be cancelled by the shutdown).
    ka_started: bool,
}

/// The data path of one connection.
#[pin_data]
pub(crate) struct ClientConn {
    qp: Qp<CmEvents>,
    link: RpcXprtLink,
    counters: Arc<Counters>,
    /// The transport's backward requests.
    bc: Arc<BcPool>,
    /// The server's address (for the tracepoints).
    peer: SockAddr,
    /// Requests we provisioned for; also the credits we ask for.
    max_requests: u32,
    #[pin]
    state: SpinLock<State>,
    /// Signalled when `posters` drops to zero on a closing connection, and when the grow worker
    /// ends on one.
    #[pin]
    idle: CondVar,
    /// Completed once [`ClientConn::shutdown`] has drained the QP and unmapped every MR.
    #[pin]
    drained: Completion,
    /// Grows the MR pool (`rb_refresh_worker`).
    #[pin]
    grow: Work<ClientConn>,
    /// Sends again, as version 1, the call the server refused with `ERR_VERS`.
    #[pin]
    resend_work: Work<ClientConn, 1>,
    /// The keep-alive tick of a version 2 connection, every `keepalive` seconds.
    #[pin]
    keepalive: DelayedWork<ClientConn, 2>,
    /// Held around every post of a Send, and across all the Sends of a continued call: no
    /// other message may come between them (draft Section 6.3.2). It keeps the count of
    /// unsignaled Sends, which must follow the order of the posts.
    #[pin]
    send_order: Mutex<SendBudget>,
    /// Sends posted since the last keep-alive tick.
    ka_sent: Atomic<u32>,
    /// Messages received since the last keep-alive tick.
    ka_received: Atomic<u32>,
    /// A continued reply is being reassembled or has broken (see [`ClientConn::reasm_mark`]).
    reasm_active: Atomic<bool>,
    /// The level of this connection's lines, shared with its cm event handler.
    log: Arc<LogLevel>,
    /// Receives posted and not completed yet: none once the QP is drained, unless the device
    /// lost completions (each such Receive keeps the connection alive: it holds a reference).
    recvs: Atomic<u32>,
    /// Sends posted and not completed yet (as `recvs`).
    sends_posted: Atomic<u32>,
    /// Counted in [`super::LIVE_CONNS`].
    _live: super::Live,
}

impl_has_work! {
    impl HasWork<Self> for ClientConn { self.grow }
    impl HasWork<Self, 1> for ClientConn { self.resend_work }
}

impl_has_delayed_work! {
    impl HasDelayedWork<Self, 2> for ClientConn { self.keepalive }
}

impl WorkItem<2> for ClientConn {
    type Pointer = Arc<ClientConn>;

    /// The keep-alive tick (see [`crate::proto::keepalive`]).
    fn run(this: Arc<ClientConn>) {
        this.keepalive_tick();
    }
}

impl WorkItem<1> for ClientConn {
    type Pointer = Arc<ClientConn>;

    /// Sends calls again on this connection while sunrpc still waits for their replies: the
    /// one refused with `ERR_VERS`, now as version 1 (draft Section 4.3.3), and those that drew
    /// an `RDMA2_ERROR`, marshaled as [`v2msg::retry`] said. No reconnect, no retransmission
    /// by sunrpc: that would reconnect (a retransmission on the same connection would overrun
    /// the credits) and forget the retry. Each call still holds its credit, which the error
    /// returned. A call short of a Send buffer or of MRs (`EAGAIN`) stays queued for the room
    /// to come back ([`ClientConn::wake_sender`] queues the worker again), or is tried again at
    /// once if it came back meanwhile; one that cannot be sent otherwise completes with
    /// `EAGAIN`, for sunrpc to retry it (`call_status`), on a new connection.
    fn run(this: Arc<ClientConn>) {
        // Tries in a row of a call that found its room back at once.
        let mut again = 0;
        // Taken one at a time: a later `resend` finds the work idle and queues it again.
        loop {
            // (A statement of its own: the lock is not held across the send.)
            let next = this.state.lock().resend.pop();
            let Some(pinned) = next else {
                break;
            };
            let e = match ClientConn::transmit(&this, pinned.rqst(), false) {
                // The reply completes it; until then sunrpc's own timer runs.
                Ok(()) => {
                    again = 0;
                    drop(pinned);
                    continue;
                }
                Err(e) => e,
            };
            if e == EAGAIN && again < RESEND_AGAIN {
                let mut st = this.state.lock();
                if !st.closing {
                    // Cannot fail: it was just taken from there, under a lock since let go
                    // (a `resend` meanwhile took another place, which it had room for).
                    match st.resend.push_within_capacity(pinned) {
                        Ok(()) if st.space_wait => {
                            // No wake-up is lost: every return of room takes `space_wait`
                            // under this lock ([`ClientConn::room_back`]), so set now it says
                            // that none came back since a sender last found it missing (our
                            // transmit, or one after it that waits with us); the next return
                            // finds `resend_waits` set here and queues us again
                            // ([`ClientConn::wake_resend`]).
                            st.resend_waits = true;
                            drop(st);
                            VERS_STATS.resend_parked();
                            break;
                        }
                        Ok(()) => {
                            again += 1;
                            continue;
                        }
                        Err(e) => {
                            drop(st);
                            e.0.complete(Err(EAGAIN));
                            continue;
                        }
                    }
                }
            }
            again = 0;
            pr_warn_peer!(
                "xid {:08x}: cannot send the call again: {:?}\n",
                pinned.rqst().info().xid,
                e
            );
            pinned.complete(Err(EAGAIN));
        }
        this.give_held_back();
    }
}

impl WorkItem for ClientConn {
    type Pointer = Arc<ClientConn>;

    /// Adds a batch of MRs to the pool, as `rpcrdma_mrs_create`, and wakes a send waiting for
    /// them. Stops early if the connection closes meanwhile: [`ClientConn::shutdown`] waits for
    /// this worker (as `rpcrdma_mrs_destroy` cancels `rb_refresh_worker`), and the MRs made
    /// so far join the pool, which the connection's drop frees.
    fn run(this: Arc<ClientConn>) {
        let (n, depth) = {
            let st = this.state.lock();
            (st.batch.min(st.cap.saturating_sub(st.nmrs)), st.depth)
        };
        let mut mrs = MrList::default();
        for _ in 0..n {
            if this.state.lock().closing {
                break;
            }
            match Mr::new(this.qp.pd(), depth, false).and_then(|mr| Reg::new(mr, GFP_KERNEL)) {
                Ok(r) => mrs.push(r),
                Err(e) => {
                    pr_info_peer!(
                        "MR pool of {} stays at {} MRs: {:?}\n",
                        this.peer.host(),
                        this.state.lock().nmrs + mrs.len(),
                        e
                    );
                    break;
                }
            }
        }
        this.counters.mrs_allocated.add(mrs.len() as u64, Relaxed);
        let mut st = this.state.lock();
        st.growing = false;
        if st.closing {
            st.nmrs += mrs.len();
            st.free.append(&mut mrs);
            drop(st);
            this.idle.notify_all();
            return;
        }
        if mrs.len() < n {
            // An allocation failed: the pool stays as it is now.
            st.cap = st.nmrs + mrs.len();
        }
        st.nmrs += mrs.len();
        let wake = Self::give_back(&mut st, &mut mrs);
        // Whoever waited, the pool may still be short: grow again if so.
        let again = Self::wants_more(&mut st);
        drop(st);
        if wake {
            this.wake_sender();
        }
        if again {
            this.grow_pool();
        }
    }
}

/// Bounds on a continued reply: 64 messages, 256 KiB of inline part (replies larger than
/// that come in chunks from any sensible server; a sequence beyond them is dropped).
const REASSEMBLY: continuation::Limits = continuation::Limits {
    max_fragments: 64,
    max_len: 256 * 1024,
};

/// The allocation flags of a reassembly buffer's growth: under the state lock, in a Receive's
/// completion, and no warning on failure, since the server decides how large it grows (up to
/// [`REASSEMBLY`]'s `max_len`); a failure drops the reply, counted.
fn reasm_gfp() -> Flags {
    GFP_ATOMIC | __GFP_NOWARN
}

/// Makes room for `more` bytes at the end of the reassembly buffer `buf` (see [`reasm`]).
fn reasm_reserve(buf: &mut KVec<u8>, more: usize) -> Result {
    reasm::reserve(buf, more, REASSEMBLY.max_len, reasm_gfp())
}

/// Appends `payload` to the reassembly buffer `buf` (see [`reasm`]).
fn reasm_append(buf: &mut KVec<u8>, payload: &[u8]) -> Result {
    reasm::append(buf, payload, REASSEMBLY.max_len, reasm_gfp())
}

/// Receives a connection that may settle on version 2 posts beyond its credits for continued
/// replies (draft Section 6.3.2): a call whose reply may come continued in `n` messages keeps
/// `n - 1` of them until that reply is handled or the request released. Without one to keep,
/// the reply comes in a chunk, as in version 1.
pub(crate) const CONT_RECVS: u32 = 64;

/// The most messages a continued reply may take: replies of up to about 64 KiB with 4 KiB
/// Receives. Larger ones come in chunks: with their length the cost of a registration matters
/// less than the copies, and each would hold many of the [`CONT_RECVS`].
const CONT_MAX_MESSAGES: u32 = 16;

/// Calls of a connection that may wait to be sent again after an `RDMA2_ERROR` at a time; one
/// more fails its RPC.
const RETRY_SLOTS: usize = 8;

/// Tries in a row the resend worker gives a call short of room that found it back by the time
/// it looked (see its `run`), before it hands the call back to sunrpc.
const RESEND_AGAIN: u32 = 3;

/// Limits on what a reply header may describe: we offer at most one Write chunk.
const REPLY_LIMITS: Limits = Limits {
    max_segments: marshal::MAX_HDR_SEGS,
    max_read_chunks: 0,
    max_write_chunks: 1,
    max_read_bytes: 0,
    max_write_bytes: u32::MAX as u64,
};

/// A marshaling failure: the errno for sunrpc (`EIO` fails the RPC, `ENOBUFS` retries it
/// after a delay, `ENOTCONN` reconnects).
fn marshal_errno(e: marshal::Error) -> Error {
    Error::from_errno(e.errno())
}

/// The version of a call and the most bytes its Send may carry.
#[derive(Clone, Copy)]
struct Wire {
    vers: u32,
    limit: u32,
}

/// What a transmission takes from the connection's state, and only once its call is posted
/// ([`Taken::commit`]): on every path that returns before that, the state stays as it was, for
/// sunrpc's next attempt.
#[derive(Clone, Copy)]
struct Taken {
    /// The call's XID.
    xid: u32,
    /// It is sent again after an `RDMA2_ERROR`, as its entry in [`State::retries`] says: the
    /// entry is used up.
    retry: bool,
    /// It is the version 2 offer ([`Requester::on_call_sent`]): once it left, a connection
    /// lost before its reply counts as an offer lost.
    offer: bool,
}

impl Taken {
    /// The call is posted: takes what it took.
    fn commit(self, st: &mut State) {
        if self.retry {
            if let Some(i) = st.retries.iter().position(|&(x, _)| x == self.xid) {
                let _ = st.retries.remove(i);
            }
        }
        if self.offer {
            if let Some(n) = st.nego.as_mut() {
                n.on_call_sent();
            }
        }
    }
}

/// Why a call's Send was not posted, with what is left of it.
enum Unsent {
    /// Registering, encoding or copying failed: the Send work request is handed back.
    Build(KBox<Wr<SendCtx>>),
    /// The device refused the chain, after taking this many of its `REG_MR`s.
    Post(usize),
}

/// Where a send failed.
enum Phase {
    /// Registering, encoding or copying: nothing was posted.
    Build,
    /// Posting.
    Post,
}

impl ClientConn {
    /// A connection's data path over `qp` to the server at `peer`, for `max_requests`
    /// requests in flight out of a slot table of `slots`, and [`BC_MAX_REQUESTS`] backward
    /// requests from `bc`, logging at the level `log` says. May sleep.
    pub(crate) fn new(
        qp: Qp<CmEvents>,
        link: RpcXprtLink,
        (counters, bc, log): (Arc<Counters>, Arc<BcPool>, Arc<LogLevel>),
        max_requests: u32,
        slots: u32,
        peer: SockAddr,
    ) -> Result<Arc<Self>> {
        let n = usize::try_from(max_requests).map_err(|_| EINVAL)?;
        // Every request of the slot table may hold MRs (a request released early holds them
        // until its `buf_free`, after its congestion slot went to another).
        let nreqs = usize::try_from(slots.max(max_requests)).map_err(|_| EINVAL)?;
        Arc::pin_init(
            try_pin_init!(Self {
                qp,
                link,
                counters,
                bc,
                peer,
                max_requests,
                state <- new_spinlock!(
                    State {
                        closing: false,
                        lost: false,
                        sends: KVec::with_capacity(
                            n + send_slack(*max_requests) as usize,
                            GFP_KERNEL
                        )?,
                        bc_sends: KVec::with_capacity(BC_MAX_REQUESTS as usize, GFP_KERNEL)?,
                        ctl_sends: KVec::with_capacity(CTL_MESSAGES as usize, GFP_KERNEL)?,
                        props: None,
                        invs: KVec::with_capacity(n, GFP_KERNEL)?,
                        free: MrList::default(),
                        reqs: Reqs::new(nreqs, GFP_KERNEL)?,
                        orphans: MrList::default(),
                        posters: 0,
                        space_wait: false,
                        resend_waits: false,
                        held: None,
                        nmrs: 0,
                        cap: 0,
                        batch: 0,
                        depth: 0,
                        growing: false,
                        credits: 1,
                        params: None,
                        nego: None,
                        offer_xid: None,
                        resend: KVec::with_capacity(RETRY_SLOTS + 1, GFP_KERNEL)?,
                        unshut: Some(super::Live::new(&super::LIVE_UNSHUT)),
                        retries: KVec::with_capacity(RETRY_SLOTS, GFP_KERNEL)?,
                        write_refusals: v2msg::WriteChunkRefusals::default(),
                        no_write_chunks: false,
                        cont_free: 0,
                        cont_held: KVec::with_capacity(CONT_RECVS as usize, GFP_KERNEL)?,
                        call_extra: 0,
                        call_held: KVec::with_capacity(*max_requests as usize, GFP_KERNEL)?,
                        reasm: Reassembly::new(REASSEMBLY),
                        reasm_buf: KVec::new(),
                        reasm_spare: KVec::new(),
                        reasm_broken: [None; 2],
                        ka: KeepAlive::new(),
                        ka_started: false,
                    },
                    "rpcrdma_rs_conn"
                ),
                idle <- new_condvar!("rpcrdma_rs_conn_idle"),
                drained <- Completion::new(),
                grow <- new_work!("rpcrdma_rs_mr_grow"),
                resend_work <- new_work!("rpcrdma_rs_resend"),
                keepalive <- new_delayed_work!("rpcrdma_rs_keepalive"),
                send_order <- new_mutex!(SendBudget::new(*max_requests)),
                ka_sent: Atomic::new(0),
                ka_received: Atomic::new(0),
                reasm_active: Atomic::new(false),
                log,
                recvs: Atomic::new(0),
                sends_posted: Atomic::new(0),
                _live: super::Live::new(&super::LIVE_CONNS),
            }),
            GFP_KERNEL,
        )
    }

    /// Fills the pools: `max_requests` Send buffers of `send_len` bytes and LOCAL_INV requests
    /// (and [`send_slack`] more Send buffers),
    /// [`BC_MAX_REQUESTS`] Send buffers for backward Replies and [`CTL_MESSAGES`] for
    /// transport messages, `nrecv` Receives of `recv_len` bytes, `cont` of which are for
    /// continued replies ([`CONT_RECVS`] or none), and `nmrs.1` memory regions of `depth` pages, a
    /// pool that grows by `batch` MRs at a time up to `nmrs.0` as sends find it short
    /// (`rpcrdma_mrs_create` at connect, then `rpcrdma_mrs_refresh`). Allocating every MR up front
    /// made each connect and close of rxe cost seconds (each MR's free waits out an RCU grace
    /// period there: 14 s for 1408 MRs under TCG).
    pub(crate) fn provision(
        this: &Arc<Self>,
        send_len: usize,
        recv_len: usize,
        (nrecv, cont): (u32, u32),
        (nmrs, min_mrs): (u32, u32),
        (depth, batch): (u32, u32),
    ) -> Result {
        use crate::rdma::verbs::{
            Direction,
            DmaBuf, //
        };
        let dev = this.qp.device();
        let calls = this.max_requests + send_slack(this.max_requests);
        for i in 0..calls + BC_MAX_REQUESTS + CTL_MESSAGES {
            let mut bufs = KVec::with_capacity(1, GFP_KERNEL)?;
            bufs.push(
                DmaBuf::new(dev, send_len, Direction::ToDevice, GFP_KERNEL)?,
                GFP_KERNEL,
            )?;
            let pool = if i < calls {
                Pool::Calls
            } else if i < calls + BC_MAX_REQUESTS {
                Pool::Backward
            } else {
                Pool::Control
            };
            let send = Wr::send(
                bufs,
                SendCtx {
                    conn: this.clone(),
                    pool,
                },
                GFP_KERNEL,
            )?;
            // A LOCAL_INV request per credit: the slack's Send buffers hold no MRs.
            let inv = if i < this.max_requests {
                Some(Self::new_inv(this, GFP_KERNEL)?)
            } else {
                None
            };
            let mut st = this.state.lock();
            if let Some(inv) = inv {
                st.invs.push(inv, GFP_ATOMIC)?;
            }
            Self::pool(&mut st, pool).push(send, GFP_ATOMIC)?;
        }
        let mut mrs = MrList::default();
        for _ in 0..min_mrs.min(nmrs) {
            mrs.push(Mr::new(this.qp.pd(), depth, false).and_then(|mr| Reg::new(mr, GFP_KERNEL))?);
        }
        this.counters.mrs_allocated.add(mrs.len() as u64, Relaxed);
        let mut st = this.state.lock();
        st.nmrs += mrs.len();
        st.cap = nmrs.max(min_mrs) as usize;
        st.batch = batch.max(1) as usize;
        st.depth = depth;
        st.free.append(&mut mrs);
        st.cont_free = cont.min(nrecv);
        drop(st);
        for _ in 0..nrecv {
            let buf = DmaBuf::new(dev, recv_len, Direction::FromDevice, GFP_KERNEL)?;
            let wr = Wr::recv(buf, RecvCtx { conn: this.clone() }, GFP_KERNEL)?;
            this.post_recv(wr)?;
        }
        Ok(())
    }

    /// Posts a Send without registrations, counted in `sends_posted` until it completes.
    fn post_send(&self, wr: KBox<Wr<SendCtx>>) -> Result {
        self.post_send_reg(wr, core::iter::empty())
            .map_err(|(e, _)| e)
    }

    /// Posts the registrations of `mrs` and a Send (`Qp::post_send_reg`), counted in
    /// `sends_posted` until it completes. On failure, with how many of the registrations the
    /// device took: their MRs must stay mapped and out of the pool until the drain.
    fn post_send_reg<'a>(
        &self,
        wr: KBox<Wr<SendCtx>>,
        mrs: impl IntoIterator<Item = &'a mut Mr>,
    ) -> core::result::Result<(), (Error, usize)> {
        let mut order = self.send_order.lock();
        self.post_send_ordered(&mut order, wr, mrs)
    }

    /// [`ClientConn::post_send_reg`] with [`ClientConn::send_order`] held (`budget`).
    fn post_send_ordered<'a>(
        &self,
        budget: &mut SendBudget,
        wr: KBox<Wr<SendCtx>>,
        mrs: impl IntoIterator<Item = &'a mut Mr>,
    ) -> core::result::Result<(), (Error, usize)> {
        self.sends_posted.fetch_add(1, Relaxed);
        self.ka_sent.add(1, Relaxed);
        let pool = wr.data().pool;
        let signal = |wrs| budget.signal(pool, wrs);
        self.qp.post_send_reg(wr, mrs, signal).inspect_err(|_| {
            self.sends_posted.fetch_sub(1, Relaxed);
        })
    }

    /// Posts a Receive, counted in `recvs` until it completes.
    fn post_recv(&self, wr: KBox<Wr<RecvCtx>>) -> Result {
        self.recvs.fetch_add(1, Relaxed);
        self.qp.post_recv(wr).inspect_err(|_| {
            self.recvs.fetch_sub(1, Relaxed);
        })
    }

    /// A LOCAL_INV signal work request.
    fn new_inv(this: &Arc<Self>, flags: Flags) -> Result<KBox<Wr<InvCtx>>> {
        Wr::signal(
            InvCtx {
                conn: this.clone(),
                mrs: MrList::default(),
                job: None,
            },
            flags,
        )
    }

    /// The free Send work requests of `pool`.
    fn pool(st: &mut State, pool: Pool) -> &mut KVec<KBox<Wr<SendCtx>>> {
        match pool {
            Pool::Calls => &mut st.sends,
            Pool::Backward => &mut st.bc_sends,
            Pool::Control => &mut st.ctl_sends,
        }
    }

    /// Sets the parameters negotiated when the connection was established, and the transport
    /// properties we advertise if it settles on version 2.
    pub(crate) fn set_params(&self, params: marshal::Connection, props: ConnProps) {
        let mut st = self.state.lock();
        st.params = Some(params);
        st.props = Some(props);
    }

    /// Starts version negotiation on the new connection, before its first call: version 2 is
    /// offered when `max_version` allows it and `peer` does not tell the server lacks it.
    pub(crate) fn negotiate(&self, peer: PeerMemory) {
        let nego = (crate::max_version() >= 2).then(|| Requester::new(peer));
        match nego {
            Some(n) if n.version() == 2 => VERS_STATS.offer(),
            Some(_) => {
                VERS_STATS.remembered();
                VERS_STATS.settled(1);
            }
            None => VERS_STATS.settled(1),
        }
        let mut st = self.state.lock();
        st.nego = nego;
        st.offer_xid = None;
    }

    /// What the connection, now lost, taught about the server, or `None` without negotiation:
    /// a refusal (`ERR_VERS`), or one more connection lost while the offer was unanswered,
    /// which counts as a refusal only [`negotiate::LOST_OFFERS`] times in a row
    /// ([`Requester::on_connection_lost`]).
    pub(crate) fn lost(&self) -> Option<PeerMemory> {
        self.state
            .lock()
            .nego
            .as_mut()
            .map(|n| n.on_connection_lost())
    }

    /// The version of the next call, and its largest size on the wire: while version 2 is
    /// offered, the version 1 default inline threshold ([`negotiate::FIRST_CALL_MAX`]).
    fn wire(st: &State, params: &marshal::Connection) -> Wire {
        let Some(n) = st.nego else {
            return Wire {
                vers: v1::VERSION,
                limit: params.inline_send,
            };
        };
        let limit = if n.settled() {
            params.inline_send
        } else {
            params
                .inline_send
                .min(u32::try_from(negotiate::FIRST_CALL_MAX).unwrap_or(u32::MAX))
        };
        Wire {
            vers: n.version(),
            limit,
        }
    }

    /// Decides how to read a received message of version `fixed.vers`, settling the version
    /// with the reply to our offer; `None` to drop it.
    fn kind(self: &Arc<Self>, msg: &[u8], fixed: &Fixed) -> Option<Kind> {
        let mut st = self.state.lock();
        let offer_xid = st.offer_xid;
        let Some(n) = st.nego.as_mut() else {
            return (fixed.vers == v1::VERSION).then_some(Kind::V1);
        };
        if n.settled() {
            return match (n.version(), fixed.vers) {
                (1, 1) => Some(Kind::V1),
                (2, 2) => Some(Kind::V2),
                _ => None,
            };
        }
        if offer_xid != Some(fixed.xid) {
            // Nothing else is outstanding before the version is known.
            return None;
        }
        let action = negotiate::classify(msg).and_then(|r| n.on_reply(r));
        let vers = n.version();
        drop(st);
        match action {
            Ok(Action::Proceed) => {
                VERS_STATS.settled(vers);
                if self.loud() {
                    pr_info_peer!(
                        "{}: RPC-over-RDMA version {} in use\n",
                        self.peer.host(),
                        vers
                    );
                } else {
                    pr_debug!(
                        "{}: RPC-over-RDMA version {} in use\n",
                        self.peer.host(),
                        vers
                    );
                }
                if vers == 2 {
                    self.send_connprop();
                    self.keepalive_start();
                }
                Some(if vers == 2 { Kind::V2 } else { Kind::V1 })
            }
            Ok(Action::Resend { vers }) => {
                VERS_STATS.settled(vers);
                VERS_STATS.fallback();
                pr_info_peer!(
                    "{}: the server refused RPC-over-RDMA version 2: version {} from now on\n",
                    self.peer.host(),
                    vers
                );
                Some(Kind::Fallback)
            }
            Err(e) => {
                pr_warn_peer!(
                    "xid {:08x}: unusable answer to our version 2 offer: {:?}\n",
                    fixed.xid,
                    e
                );
                if let negotiate::Error::NoCommonVersion { .. } = e {
                    self.link.force_disconnect();
                }
                None
            }
        }
    }

    /// Sends our transport properties (`RDMA2_CONNPROP`, draft Section 6.4.4) once the
    /// connection has settled on version 2, in the Send set apart for transport messages. The
    /// server keeps a Receive for one message beyond its credit grant (Section 4.3.1), and at
    /// this point only the offering call was outstanding.
    fn send_connprop(&self) {
        let Some(props) = self.state.lock().props else {
            return;
        };
        let credit = v2msg::credit_word(self.max_requests);
        match self.send_ctl(|b| props.encode(b, credit).map_err(|_| EMSGSIZE)) {
            Ok(()) => VERS_STATS.connprop_sent(),
            Err(e) => pr_warn_peer!(
                "{}: cannot send RDMA2_CONNPROP: {:?}\n",
                self.peer.host(),
                e
            ),
        }
    }

    /// Sends a credit refresh (an `RDMA2_NOMSG` with xid 0 and empty chunk lists, draft
    /// Section 6.4.2) granting the server our credits, as a keep-alive. Skipped (`EAGAIN`)
    /// while the previous transport message is still posted.
    fn send_refresh(&self) -> Result {
        let credit = v2msg::credit_word(self.max_requests);
        self.send_ctl(|b| v2msg::encode_refresh(&mut Encoder::new(b), credit).map_err(|_| EMSGSIZE))
    }

    /// Sends a transport message that `encode` writes into a buffer (returning its length),
    /// in the Send set apart for transport messages; `EAGAIN` while that one is posted.
    fn send_ctl(&self, encode: impl FnOnce(&mut [u8]) -> Result<usize>) -> Result {
        let mut st = self.state.lock();
        if st.closing {
            return Err(ENOTCONN);
        }
        let Some(mut wr) = st.ctl_sends.pop() else {
            return Err(EAGAIN);
        };
        st.posters += 1;
        drop(st);

        // Without the lock: the Send work request is ours.
        let built = wr
            .buf_mut(0)
            .ok_or(EINVAL)
            .and_then(|b| encode(b.as_mut_slice()))
            .and_then(|len| wr.set_len(0, len));
        let r = match built {
            Ok(()) => self.post_send(wr).map_err(|e| (e, None)),
            Err(e) => Err((e, Some(wr))),
        };
        let mut st = self.state.lock();
        let idle = self.posted(&mut st);
        let r = match r {
            Ok(()) => Ok(()),
            Err((e, wr)) => {
                if let Some(wr) = wr {
                    // Cannot fail: the pool had room for it before.
                    let _ = st.ctl_sends.push(wr, GFP_ATOMIC);
                }
                Err(e)
            }
        };
        drop(st);
        if idle {
            self.idle.notify_all();
        }
        r
    }

    /// Starts the keep-alive of a connection settled on version 2, unless the `keepalive`
    /// module parameter is 0.
    fn keepalive_start(self: &Arc<Self>) {
        if crate::keepalive() == 0 {
            return;
        }
        let mut st = self.state.lock();
        if st.closing || st.ka_started {
            return;
        }
        st.ka_started = true;
        self.keepalive_arm(&st);
    }

    /// Queues the next keep-alive tick, under the state lock (so that it never follows the
    /// shutdown's cancel: `closing` is set first).
    fn keepalive_arm(self: &Arc<Self>, st: &State) {
        if st.closing {
            return;
        }
        let delay = crate::keepalive_interval();
        // Queued already (cannot be: only the tick re-arms it) or the transport is gone.
        let _ = self.link.with(|x| {
            let _ = x.workqueue().enqueue_delayed::<_, 2>(self.clone(), delay);
        });
    }

    /// One keep-alive interval ended: a refresh if we sent nothing, and the end of a server
    /// that keeps alive too but has been silent for [`keepalive::MISSES`] of its intervals
    /// (disconnected, for sunrpc to reconnect).
    ///
    /// [`keepalive::MISSES`]: crate::proto::keepalive::MISSES
    fn keepalive_tick(self: &Arc<Self>) {
        let sent = self.ka_sent.xchg(0, Relaxed) != 0;
        let received = self.ka_received.xchg(0, Relaxed) != 0;
        let mut st = self.state.lock();
        if st.closing || st.lost {
            return;
        }
        let action = st.ka.tick(sent, received);
        let (silent, period) = (st.ka.silent(), st.ka.period());
        if !action.dead {
            self.keepalive_arm(&st);
        }
        drop(st);
        if action.dead {
            VERS_STATS.keepalive_dead();
            pr_warn_peer!(
                "{}: nothing received for {} s, {} of the server's keep-alive intervals: connection declared dead\n",
                self.peer.host(),
                silent.saturating_mul(crate::keepalive()),
                silent / period.max(1)
            );
            self.link.force_disconnect();
            return;
        }
        if action.refresh {
            match self.send_refresh() {
                Ok(()) => {
                    // The refresh itself does not make the next interval a busy one.
                    self.ka_sent.fetch_sub(1, Relaxed);
                    VERS_STATS.refresh_sent();
                }
                Err(e) if e == EAGAIN => {}
                Err(e) => pr_warn_peer!(
                    "{}: cannot send a keep-alive refresh: {:?}\n",
                    self.peer.host(),
                    e
                ),
            }
        }
    }

    /// Whether this connection's lines go to the log at info level (see
    /// [`Counters::conn_log`]).
    fn loud(&self) -> bool {
        self.log.loud()
    }

    /// Applies the server's transport properties, the `RDMA2_CONNPROP` in `msg`: our send
    /// threshold drops to its Receive Buffer Size if that is smaller (Section 4.3.2), and our
    /// segments to its Maximum RDMA Segment Size and Count ([`ConnProps::segment_caps`]). One
    /// that does not decode, is continued, or advertises limits too small to honour (among
    /// them segments too few or too short for the largest payload the mount was promised) is
    /// not honoured: counted in `connprops_bad`, logged, and the thresholds of the RFC 8797
    /// exchange and the device's limits stay in effect, as for a receiver that does not take
    /// note of the properties (draft Section 6.4.4).
    fn connprop(&self, msg: &[u8]) {
        let props = match v2msg::decode_reply(msg, &REPLY_LIMITS) {
            Ok(v2msg::Reply::ConnProp(p)) => p,
            r => {
                VERS_STATS.connprop_received(false);
                pr_warn_peer!(
                    "{}: unusable RDMA2_CONNPROP dropped: {:?}\n",
                    self.peer.host(),
                    r.err()
                );
                return;
            }
        };
        let mut st = self.state.lock();
        let Some(params) = st.params.as_mut() else {
            return;
        };
        let was = (
            params.inline_send,
            params.reg.max_fr_depth,
            params.max_rdma_segs,
        );
        let r = props.send_threshold(was.0).and_then(|t| {
            let caps = props.segment_caps(was.1, was.2, params.reg.page_size)?;
            Ok((t, caps))
        });
        if let Ok((t, (depth, segs, total))) = r {
            params.inline_send = t;
            params.reg.max_fr_depth = depth;
            params.max_rdma_segs = segs;
            params.max_call_segs = total;
        }
        drop(st);
        VERS_STATS.connprop_received(r.is_ok());
        match r {
            Ok(_) if !self.loud() => {
                pr_debug!(
                    "{}: server's transport properties applied\n",
                    self.peer.host()
                )
            }
            Ok((t, (depth, segs, total))) => pr_info_peer!(
                "{}: server's transport properties: {}; our send threshold {} (was {}), \
                 segments of {} pages x {} per chunk, {} per call (were {} x {})\n",
                self.peer.host(),
                format_args!("{props}"),
                t,
                was.0,
                depth,
                segs,
                total,
                was.1,
                was.2
            ),
            Err(e) => pr_warn_peer!(
                "{}: RDMA2_CONNPROP not honoured ({:?}): thresholds and segments kept\n",
                self.peer.host(),
                e
            ),
        }
    }

    /// Applies the grant `credits` of a credit refresh (an `RDMA2_NOMSG` without chunks or
    /// payload, draft Section 4.3.1), as a reply's grant is applied.
    fn credit_refresh(&self, credits: u32) {
        let mut st = self.state.lock();
        let changed = credits != st.credits;
        st.credits = credits;
        st.ka.peer_refreshed();
        drop(st);
        VERS_STATS.refresh();
        if changed {
            self.link.with(|x| x.set_credits(credits));
        }
    }

    /// Stops posting, drains the QP and ends every registration. May sleep.
    pub(crate) fn shutdown(self: &Arc<Self>) {
        let mut st = self.state.lock();
        st.closing = true;
        let unshut = st.unshut.take();
        let ka = st.ka_started;
        // Calls the resend worker left waiting for room (or not sent yet): sunrpc sends them
        // on the next connection. (A `resend` from now on completes its call at once.)
        let parked = core::mem::take(&mut st.resend);
        st.resend_waits = false;
        drop(st);
        for p in parked {
            p.complete(Err(EAGAIN));
        }
        // `closing` is set: the tick does not queue itself again.
        if ka {
            work::cancel_sync::<_, 2>(self);
        }
        let mut st = self.state.lock();
        // No post may land after the drain: wait for those in progress. Nor may the grow worker
        // still run once the transport is destroyed (it holds a reference to the connection).
        while st.posters > 0 || st.growing {
            self.idle.wait(&mut st);
        }
        drop(st);
        self.qp.drain();
        let (recvs, sends) = (self.recvs.load(Relaxed), self.sends_posted.load(Relaxed));
        if recvs != 0 || sends != 0 {
            pr_warn_peer!(
                "{}: QP drained, but {} Receives and {} Sends never completed\n",
                self.peer.host(),
                recvs,
                sends
            );
        }
        // Every LOCAL_INV chain has completed: its MRs are back in the pool. Those of the
        // requests are still mapped; the peer cannot reach them any more.
        let (sends, bc_sends, ctl_sends, invs, mut mrs) = {
            let mut st = self.state.lock();
            let mut mrs = st.free.take();
            st.reqs.drain(&mut mrs);
            let mut orphans = st.orphans.take();
            mrs.append(&mut orphans);
            (
                core::mem::take(&mut st.sends),
                core::mem::take(&mut st.bc_sends),
                core::mem::take(&mut st.ctl_sends),
                core::mem::take(&mut st.invs),
                mrs,
            )
        };
        mrs.unmap();
        self.state.lock().free.append(&mut mrs);
        // Outside the lock: these hold references to `self`.
        drop(sends);
        drop(bc_sends);
        drop(ctl_sends);
        drop(invs);
        drop(unshut);
        self.drained.complete_all();
    }

    /// Moves the QP to the error state (see [`Qp::set_error`]): every posted request is
    /// flushed. Before each disconnect. The flushed completions that follow are ours, not a
    /// lost connection: they are not logged as one.
    pub(crate) fn flush(&self) {
        self.state.lock().lost = true;
        if let Err(e) = self.qp.set_error() {
            pr_debug!("moving the QP to the error state: {:?}\n", e);
        }
    }

    /// Ends a post made outside the lock (see the module's Teardown).
    fn posted(&self, st: &mut State) -> bool {
        st.posters -= 1;
        st.closing && st.posters == 0
    }

    /// Returns unmapped MRs to the pool.
    fn put_mrs(self: &Arc<Self>, mrs: &mut MrList) {
        if mrs.is_empty() {
            return;
        }
        let wake = Self::give_back(&mut self.state.lock(), mrs);
        if wake {
            self.wake_sender();
        }
    }

    /// Returns unmapped MRs to the pool; whether a send waits for them (then call
    /// [`ClientConn::wake_sender`] once the lock is dropped).
    fn give_back(st: &mut State, mrs: &mut MrList) -> bool {
        if mrs.is_empty() {
            return false;
        }
        st.free.append(mrs);
        Self::room_back(st)
    }

    /// Room came back: MRs to `free`, or a Send buffer to `sends` or `bc_sends`, that a sender
    /// may have found missing since it last held the lock (none waits for `ctl_sends`:
    /// [`ClientConn::send_ctl`] does not). Whether a send waits for it (then call
    /// [`ClientConn::wake_sender`] once the lock is dropped).
    ///
    /// Every such return calls this under the state lock, as xprtrdma calls `xprt_write_space`
    /// on every Send context it puts back, posted or not (`rpcrdma_sendctx_put_locked`,
    /// `rpcrdma_sendctx_unget_locked`). That is what makes `space_wait` a true statement: set
    /// under the lock by a sender that found no room ([`ClientConn::wait_for_space`]) and
    /// still set, no room came back since, and the next room to come back wakes the waiters,
    /// the resend worker's parked call with them (see its `run`). (Only a buffer taken and put
    /// back in one hold of the lock goes back without it: nobody saw it missing.)
    fn room_back(st: &mut State) -> bool {
        core::mem::take(&mut st.space_wait)
    }

    /// Wakes the send waiting for MRs or a Send buffer (`xprt_write_space`), and the resend
    /// worker if a call of its waits too (`State::resend_waits`).
    fn wake_sender(self: &Arc<Self>) {
        self.link.with(|x| x.write_space());
        self.wake_resend();
    }

    /// Fault injection (`fail_retry_send`): gives back the Send buffer a retry's transmission
    /// took away ([`State::held`]), as the concurrent send holding it would.
    fn give_held_back(self: &Arc<Self>) {
        let mut st = self.state.lock();
        let Some(wr) = st.held.take() else {
            return;
        };
        if st.closing {
            // As a Send completion then. Outside the lock: it holds a reference to `self`.
            drop(st);
            drop(wr);
            return;
        }
        // Cannot fail: the pool had room for it before.
        let _ = st.sends.push(wr, GFP_ATOMIC);
        let wake = Self::room_back(&mut st);
        drop(st);
        if wake {
            self.wake_sender();
        }
    }

    /// Queues the resend worker again if a call of its waits for room (`State::resend_waits`).
    fn wake_resend(self: &Arc<Self>) {
        // Only after a send found no room: not on the hot path.
        if core::mem::take(&mut self.state.lock().resend_waits) {
            let _ = self.link.with(|x| {
                let _ = x.workqueue().enqueue::<_, 1>(self.clone());
            });
        }
    }

    /// Makes the send of `rqst`, short of MRs or of a Send buffer, wait until some come back:
    /// sunrpc transmits it again then (as `rpcrdma_mr_prepare` and
    /// `rpcrdma_sendctx_get_locked`, instead of a fixed delay). Returns the errno for sunrpc.
    fn wait_for_space(st: &mut State, rqst: &RpcRqst) -> Error {
        st.space_wait = true;
        // Under the lock: whoever returns MRs or a Send buffer after this sees `space_wait`.
        rqst.xprt().wait_for_buffer_space();
        EAGAIN
    }

    /// Whether the pool should grow now: it is below one batch of free MRs, under its cap, and
    /// no grow worker is queued. Marks the worker queued if so; the caller then calls
    /// [`ClientConn::grow_pool`] once the lock is dropped.
    fn wants_more(st: &mut State) -> bool {
        if st.closing || st.growing || st.nmrs >= st.cap || st.free.len() >= st.batch {
            return false;
        }
        st.growing = true;
        true
    }

    /// Queues the grow worker (see [`ClientConn::wants_more`]) on the transport workqueue.
    fn grow_pool(self: &Arc<Self>) {
        let queued = self
            .link
            .with(|x| x.workqueue().enqueue::<_, 0>(self.clone()).is_ok())
            .unwrap_or(false);
        if !queued {
            // The transport is gone: its connection is closing and needs no more MRs.
            self.state.lock().growing = false;
            self.idle.notify_all();
        }
    }

    /// How many of [`CONT_RECVS`] request `id` keeps, if any.
    fn cont_held(st: &State, id: usize) -> Option<u32> {
        st.cont_held.iter().find(|h| h.0 == id).map(|h| h.1)
    }

    /// After planning request `id`'s reply as `reply`: a request that kept no Receives and
    /// whose reply comes continued keeps those it needs beyond its own. `short` tells whether
    /// the reply would have come continued had enough been free (counted). False if the
    /// Receives cannot be kept (the plan must then do without continuation).
    fn cont_keep(
        st: &mut State,
        id: usize,
        held: Option<u32>,
        reply: ReplyChunk,
        short: impl FnOnce() -> bool,
    ) -> bool {
        match reply {
            ReplyChunk::Continued { messages } => {
                VERS_STATS.continued_asked();
                let n = messages.saturating_sub(1);
                if held.is_some() || n == 0 {
                    // Kept already (a retransmission, planned within them), or none needed.
                    return true;
                }
                // The plan had at most `cont_free` more than one, and the table has room for
                // every holder (each keeps one at least): cannot fail.
                if n > st.cont_free || st.cont_held.push_within_capacity((id, n)).is_err() {
                    return false;
                }
                st.cont_free -= n;
                true
            }
            _ if held.is_none() && short() => {
                VERS_STATS.continued_short();
                true
            }
            _ => true,
        }
    }

    /// Request `id`'s reply was handled, or the request released: the Receives it kept are
    /// free again (all its reply's messages have come, and their Receives are posted again).
    fn cont_release(st: &mut State, id: usize) {
        if let Some(i) = st.cont_held.iter().position(|h| h.0 == id) {
            if let Ok((_, n)) = st.cont_held.remove(i) {
                st.cont_free += n;
            }
        }
    }

    /// Request `id`'s reply was handled, or the request released: the credits its continued
    /// call took beyond its own are free again.
    fn call_release(st: &mut State, id: usize) {
        if let Some(i) = st.call_held.iter().position(|h| h.0 == id) {
            if let Ok((_, n)) = st.call_held.remove(i) {
                st.call_extra -= n;
            }
        }
    }

    /// Sends the call `rqst` as the `messages` messages of `wrs` chained with `F_MORE` (draft
    /// Section 6.3.2): every one with a version 2 header (`F_MORE` on all but the last, whose
    /// chunk lists are empty as the others') and the next part of the call copied after it,
    /// posted back to back under [`ClientConn::send_order`]. Runs without the lock, as a
    /// poster (`posters` counted); gives the unposted Send buffers back.
    fn send_continued(
        this: &Arc<Self>,
        rqst: &RpcRqst,
        (info, taken): (&RqstInfo, Taken),
        wire: Wire,
        wrs: &mut [Option<KBox<Wr<SendCtx>>>],
    ) -> Result {
        let xid = info.xid;
        let credit = v2msg::credit_word(this.max_requests);
        let hdr = v2msg::MORE_HEADER_LEN;
        let r = (|| {
            let split = continuation::split(info.snd.len, wire.limit, hdr as u32, hdr as u32)
                .filter(|s| s.messages as usize == wrs.len())
                .ok_or(EINVAL)?;
            for (i, slot) in wrs.iter_mut().enumerate() {
                let wr = slot.as_mut().ok_or(EINVAL)?;
                let (off, len) = split.piece(i as u32).ok_or(EINVAL)?;
                let end = hdr + len as usize;
                let buf = wr.buf_mut(0).ok_or(EINVAL)?.as_mut_slice();
                let out = buf.get_mut(..end).ok_or(EMSGSIZE)?;
                let mut e = Encoder::new(out);
                let encoded = if i + 1 == split.messages as usize {
                    v2msg::encode_call(
                        &mut e,
                        (xid, credit),
                        v1::Proc::Msg,
                        &v1::Lists::default(),
                        0,
                    )
                } else {
                    v2msg::encode_more(&mut e, xid, credit, false)
                };
                if encoded != Ok(hdr) {
                    return Err(EINVAL);
                }
                rqst.copy_call(off, &mut out[hdr..])?;
                wr.set_len(0, end)?;
            }
            let mut order = this.send_order.lock();
            for slot in wrs.iter_mut() {
                let wr = slot.take().ok_or(EINVAL)?;
                if let Err((e, _)) = this.post_send_ordered(&mut order, wr, core::iter::empty()) {
                    trace::xprtrdma_post_send_err(rqst, e);
                    pr_warn_peer!("xid {:08x}: ib_post_send failed: {:?}\n", xid, e);
                    // Part of the call may be on the wire: the connection must go.
                    return Err(ENOTCONN);
                }
            }
            Ok(())
        })();
        let mut st = this.state.lock();
        let idle = this.posted(&mut st);
        if r.is_ok() {
            taken.commit(&mut st);
        }
        let mut wake = false;
        for wr in wrs.iter_mut().filter_map(Option::take) {
            // Cannot fail: the pool had room for them before.
            let _ = st.sends.push(wr, GFP_ATOMIC);
            wake |= Self::room_back(&mut st);
        }
        drop(st);
        if wake {
            this.wake_sender();
        }
        if idle {
            this.idle.notify_all();
        }
        if r.is_ok() {
            VERS_STATS.call(wire.vers);
            // One message is no sequence: a call that fits with its actual header.
            if wrs.len() > 1 {
                VERS_STATS.sent_continued(wrs.len() as u32);
            }
        }
        r
    }

    /// Marshals and sends the call `rqst` (`rpcrdma_marshal_req` + `frwr_send`), for sunrpc's
    /// `send_request`, under the transport lock.
    pub(crate) fn send(this: &Arc<Self>, rqst: &RpcRqst) -> Result {
        Self::transmit(this, rqst, true)
    }

    /// [`ClientConn::send`], `locked` if the caller holds the transport lock (`XPRT_LOCKED`),
    /// which the resend worker does not. Without it a call is never continued: the credits a
    /// continued call may take are counted with `congested_requests()`, which may then be too
    /// low (a `send_request` may take a congestion slot meanwhile). None would be anyway: a
    /// call sent again after an `RDMA2_ERROR` has a Reply chunk or a Position-Zero Read chunk
    /// (`v2msg::retry`), and the fallback goes as version 1.
    fn transmit(this: &Arc<Self>, rqst: &RpcRqst, locked: bool) -> Result {
        // A reply chunk may cover them: they must exist before they are registered.
        rqst.alloc_sparse_pages()?;
        let info = rqst.info();
        let id = rqst.id();
        let mut st = this.state.lock();
        if st.closing {
            return Err(ENOTCONN);
        }
        let params = st.params.ok_or(ENOTCONN)?;
        let wire = Self::wire(&st, &params);
        let offer = st.nego.is_some_and(|n| !n.settled());
        if offer {
            // Before the post: the reply may overtake the sender. Only its reply matches it,
            // so it stands even if this transmission goes no further.
            st.offer_xid = Some(info.xid);
        }
        // A version 2 header is longer than the version 1 header the plan assumes.
        let plan_params = if wire.vers == 2 {
            let extra = v2msg::EXTRA as u32;
            marshal::Connection {
                inline_send: wire.limit.saturating_sub(extra),
                inline_recv: params.inline_recv.saturating_sub(extra),
                ..params
            }
        } else {
            params
        };
        let call = marshal::Call {
            snd: info.snd.buf,
            rcv: info.rcv.buf,
            rcv_buflen: info.rcv.buflen,
            ddp_allowed: info.ddp_allowed,
            write_payload: info.write_payload,
            read_payload: info.read_payload,
        };
        // Sent again after an `RDMA2_ERROR`: as the draft asks (`v2msg::retry`). Only looked
        // at: the entry goes once the call is posted (`Taken::commit`), so that an attempt that
        // returns early leaves it to the next.
        let retry = st
            .retries
            .iter()
            .find(|&&(x, _)| x == info.xid)
            .map(|&(_, f)| f);
        let taken = Taken {
            xid: info.xid,
            retry: retry.is_some(),
            offer,
        };
        let mut force = retry.unwrap_or_default();
        // The Receives a continued reply may use: those the request keeps from an earlier
        // transmission, else what is free, once the connection is settled on version 2.
        let held = Self::cont_held(&st, id);
        let v2_settled = wire.vers == 2 && st.nego.is_some_and(|n| n.settled());
        let cont = match held {
            Some(n) => n,
            None if v2_settled => st.cont_free,
            None => 0,
        };
        let reply_messages = cont.saturating_add(1).min(CONT_MAX_MESSAGES);
        // The server's credits a continued call may take: those not held by a call in flight
        // (this one's included, through sunrpc's congestion window) nor by the extra messages
        // of continued calls in flight; within the Send buffers free.
        let call_messages = if locked && v2_settled && st.call_held.len() < st.call_held.capacity()
        {
            let used = rqst
                .xprt()
                .congested_requests()
                .saturating_add(st.call_extra);
            st.credits
                .saturating_sub(used)
                .saturating_add(1)
                .min(CONT_MAX_MESSAGES)
                .min(st.sends.len() as u32)
        } else {
            1
        };
        let budget = marshal::Continuation {
            call: call_messages,
            reply: reply_messages,
        };
        let mut planned = marshal::plan_with(&call, &plan_params, force, budget);
        if st.no_write_chunks
            && matches!(
                planned,
                Ok(marshal::Plan {
                    reply: ReplyChunk::WriteChunk,
                    ..
                })
            )
        {
            // A server that takes no Write chunks gets a Reply chunk at once, as the retry
            // after its `RDMA2_ERROR` would have it (`State::no_write_chunks`).
            force.reply_chunk = true;
            planned = marshal::plan_with(&call, &plan_params, force, budget);
        }
        let kept = planned.as_ref().map_or(true, |p| {
            Self::cont_keep(&mut st, id, held, p.reply, || {
                // Would the reply have come continued with every Receive free?
                v2_settled
                    && reply_messages < CONT_MAX_MESSAGES
                    && matches!(
                        marshal::plan_with(
                            &call,
                            &plan_params,
                            force,
                            marshal::Continuation {
                                call: 1,
                                reply: CONT_MAX_MESSAGES
                            }
                        ),
                        Ok(marshal::Plan {
                            reply: ReplyChunk::Continued { .. },
                            ..
                        })
                    )
            })
        });
        if !kept {
            let calls_only = marshal::Continuation {
                call: call_messages,
                reply: 1,
            };
            planned = marshal::plan_with(&call, &plan_params, force, calls_only);
        }
        let plan = match planned {
            Ok(p) => p,
            Err(e) => {
                drop(st);
                this.counters.failed_marshal_count.add(1, Relaxed);
                trace::xprtrdma_marshal_failed(rqst, info.xid, marshal_errno(e));
                pr_warn_peer!("xid {:08x}: cannot marshal the call: {:?}\n", info.xid, e);
                return Err(marshal_errno(e));
            }
        };
        // One MR per chunk to start with: enough unless a chunk needs more than one MR's
        // depth, and then `register` takes more.
        let chunks = usize::from(!matches!(
            plan.call,
            CallChunk::Inline { .. } | CallChunk::Continued { .. }
        )) + usize::from(!matches!(
            plan.reply,
            ReplyChunk::Inline | ReplyChunk::Continued { .. }
        ));
        // Sent again (a retry, the version fallback, a retransmission after a reply that did
        // not decode): the reply taken for the earlier transmission no longer stands in for
        // this one's (see `Stage::Replied`). A call with chunks takes its entry over below, in
        // the one lookup that records them; without chunks, it goes.
        if chunks == 0 {
            let _ = st.reqs.remove_if(id, |e| e.stage == Stage::Replied);
        }
        if let CallChunk::Continued { messages } = plan.call {
            // Within `call_messages`: no more than the free Send buffers, and the table had
            // room.
            let n = messages as usize;
            let mut wrs: [Option<KBox<Wr<SendCtx>>>; CONT_MAX_MESSAGES as usize] =
                [const { None }; CONT_MAX_MESSAGES as usize];
            if n > wrs.len()
                || n > st.sends.len()
                || st
                    .call_held
                    .push_within_capacity((id, messages - 1))
                    .is_err()
            {
                drop(st);
                pr_warn_peer!("xid {:08x}: cannot send a continued call\n", info.xid);
                return Err(EIO);
            }
            st.call_extra += messages - 1;
            for slot in wrs.iter_mut().take(n) {
                *slot = st.sends.pop();
            }
            st.posters += 1;
            drop(st);
            return Self::send_continued(this, rqst, (&info, taken), wire, &mut wrs[..n]);
        }
        if taken.retry && !locked && st.held.is_none() && super::inject_retry_failure() {
            // Fault injection: short of a Send buffer (below), as if a concurrent send held the
            // last one, which comes back once the resend worker parked the call (`State::held`).
            st.held = st.sends.pop();
            let e = Self::wait_for_space(&mut st, rqst);
            drop(st);
            return Err(e);
        }
        let Some(mut wr) = st.sends.pop() else {
            let e = Self::wait_for_space(&mut st, rqst);
            drop(st);
            this.counters.empty_sendctx_q.add(1, Relaxed);
            return Err(e);
        };
        let mut hands = Hands {
            spare: MrList::default(),
            used: MrList::default(),
            depth: params.reg.max_fr_depth,
        };
        if chunks > 0 {
            if st.free.len() < chunks {
                // Some are in use (the pool holds more than `chunks`): they come back, or the
                // pool grows.
                let _ = st.sends.push(wr, GFP_ATOMIC);
                let e = Self::wait_for_space(&mut st, rqst);
                let grow = Self::wants_more(&mut st);
                drop(st);
                if grow {
                    this.grow_pool();
                }
                trace::xprtrdma_nomrs_err(&this.peer, rqst);
                return Err(e);
            }
            match st.reqs.entry(id) {
                // New, or kept by the reply to an earlier transmission, whose MRs went with
                // it (see above).
                Some(e)
                    if e.mrs.is_empty()
                        && matches!(e.stage, Stage::Registered | Stage::Replied) =>
                {
                    e.stage = Stage::Registered;
                    e.posting = true;
                    e.sent = Some(v2msg::Sent {
                        call: plan.call,
                        reply: plan.reply,
                        retried: retry.is_some(),
                        rcv_buflen: info.rcv.buflen,
                    });
                }
                _ => {
                    // Cannot happen: sunrpc releases a request (`buf_free`) before its slot
                    // sends another, and the table has room for every slot.
                    let _ = st.sends.push(wr, GFP_ATOMIC);
                    drop(st);
                    pr_warn!(
                        "xid {:08x}: the request holds memory regions already\n",
                        info.xid
                    );
                    return Err(ENOTCONN);
                }
            }
            for _ in 0..chunks {
                if let Some(r) = st.free.pop() {
                    hands.spare.push(r);
                }
            }
        }
        st.posters += 1;
        let grow = Self::wants_more(&mut st);
        drop(st);
        if grow {
            this.grow_pool();
        }

        // Without the lock: the Send work request and the MRs are the request's alone.
        let r = match this.build(rqst, &info, &plan, wire, &mut wr, &mut hands) {
            Ok(()) => this
                .post_send_reg(wr, hands.used.mrs_mut())
                .map_err(|(e, regs)| (e, Unsent::Post(regs))),
            Err(e) => Err((e, Unsent::Build(wr))),
        };
        // The MRs whose REG_MR the device took with a chain it refused: it registers them
        // whenever it gets to them (or flushes them), so they stay mapped, and the request's,
        // until the drain ([`Stage::Stuck`]). `post_send_reg` took them in the list's order.
        let mut queued = MrList::default();
        if let Err((_, Unsent::Post(regs))) = r {
            for _ in 0..regs {
                if let Some(m) = hands.used.pop() {
                    queued.push(m);
                }
            }
        }
        if r.is_err() {
            // Never advertised (or the QP is gone).
            hands.used.unmap();
        }

        let mut st = this.state.lock();
        let idle = this.posted(&mut st);
        if r.is_ok() {
            taken.commit(&mut st);
            VERS_STATS.call(wire.vers);
        }
        // Spare MRs, and below a failed send's: room a sender may wait for.
        let mut wake = Self::give_back(&mut st, &mut hands.spare);
        let stuck = !queued.is_empty();
        if stuck {
            Self::stuck(&mut st, id, &mut queued);
        }
        let mut early = None;
        if let Some(e) = st.reqs.get_mut(id) {
            e.posting = false;
            early = e.pending.take();
            if r.is_ok() {
                e.mrs.append(&mut hands.used);
            }
            if e.mrs.is_empty() && e.stage == Stage::Registered {
                let _ = st.reqs.remove(id);
            }
        }
        wake |= Self::give_back(&mut st, &mut hands.used);
        let grow = Self::wants_more(&mut st);
        let mut waits = false;
        let r = match r {
            Ok(()) => Ok(()),
            Err((e, Unsent::Build(wr))) => {
                // Cannot fail: the pool had room for it before.
                let _ = st.sends.push(wr, GFP_ATOMIC);
                wake |= Self::room_back(&mut st);
                // Short of MRs (the only ENOBUFS of `build`): wait for some to come back or
                // for the pool to grow. If all came back meanwhile and it cannot grow, nothing
                // would wake us: sunrpc retries after its delay (a call never needs more than
                // the pool: see the endpoint's sizing).
                let e = match e {
                    e if e == ENOBUFS && (st.free.len() < st.nmrs || st.growing) => {
                        waits = true;
                        Self::wait_for_space(&mut st, rqst)
                    }
                    e => e,
                };
                Err((e, Phase::Build))
            }
            // The post consumed the work request.
            Err((e, Unsent::Post(_))) => Err((e, Phase::Post)),
        };
        drop(st);
        if wake && waits {
            // What we gave back was not enough for us. sunrpc's senders wait on the flag
            // (`XPRT_WRITE_SPACE`) we just set again: waking them would clear it, and ours
            // would try again at once, and again (the next room to come back wakes them all).
            // The resend worker's call waits apart: it may need only what we gave back.
            this.wake_resend();
        } else if wake {
            this.wake_sender();
        }
        if stuck {
            // Only the drain ends those registrations.
            this.link.force_disconnect();
        }
        if grow {
            this.grow_pool();
        }
        if idle {
            this.idle.notify_all();
        }
        if let Some(reply) = early {
            // The reply overtook us: handled now that the MRs are recorded.
            if let Some(recv) = Self::reply(this, reply, None) {
                Self::repost(this, recv);
            }
        }
        match r {
            Ok(()) => Ok(()),
            // The connection is closing.
            Err((e, Phase::Build)) if e == ENOTCONN => Err(e),
            Err((e, Phase::Build)) if e == EAGAIN || e == ENOBUFS => {
                // No free memory region: sunrpc retries once one comes back.
                trace::xprtrdma_nomrs_err(&this.peer, rqst);
                Err(e)
            }
            Err((e, Phase::Build)) => {
                this.counters.failed_marshal_count.add(1, Relaxed);
                trace::xprtrdma_marshal_failed(rqst, info.xid, e);
                pr_warn_peer!("xid {:08x}: cannot marshal the call: {:?}\n", info.xid, e);
                Err(e)
            }
            Err((e, Phase::Post)) => {
                trace::xprtrdma_post_send_err(rqst, e);
                pr_warn_peer!("xid {:08x}: ib_post_send failed: {:?}\n", info.xid, e);
                Err(ENOTCONN)
            }
        }
    }

    /// Registers the chunks of `plan` with the MRs in `hands` (moved to `hands.used`), encodes
    /// the header and copies the inline part into the Send buffer of `wr`. Runs without the
    /// lock.
    fn build(
        &self,
        rqst: &RpcRqst,
        info: &RqstInfo,
        plan: &marshal::Plan,
        wire: Wire,
        wr: &mut KBox<Wr<SendCtx>>,
        hands: &mut Hands,
    ) -> Result {
        let snd = &info.snd.buf;
        let rcv = &info.rcv.buf;

        // The Read list: the call's pages at the head's end, or the whole call at zero.
        let mut reads = [ReadSegment::default(); marshal::MAX_HDR_SEGS as usize];
        let mut nreads = 0;
        let read = match plan.call {
            CallChunk::Inline { .. } => None,
            CallChunk::ReadChunk { position } => Some((position, snd.head_len, snd.page_len)),
            CallChunk::PositionZero => Some((0, 0, info.snd.len)),
            // Sent by `send_continued`.
            CallChunk::Continued { .. } => return Err(EINVAL),
        };
        if let Some((position, offset, len)) = read {
            let mut segs = [Segment::default(); marshal::MAX_HDR_SEGS as usize];
            let n = self.register(rqst, (Buf::Call, Role::Read), offset, len, &mut segs, hands)?;
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
            ReplyChunk::Inline | ReplyChunk::Continued { .. } => None,
            ReplyChunk::WriteChunk => Some((rcv.head_len, rcv.page_len)),
            ReplyChunk::ReplyChunk => Some((0, info.rcv.buf.len().try_into().map_err(|_| EINVAL)?)),
        };
        if let Some((offset, len)) = reply {
            let role = if plan.reply == ReplyChunk::WriteChunk {
                Role::Write
            } else {
                Role::Reply
            };
            nsegs = self.register(rqst, (Buf::Reply, role), offset, len, &mut segs, hands)?;
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
        let limit = wire.limit as usize;
        let buf = wr.buf_mut(0).ok_or(EINVAL)?.as_mut_slice();
        let limit = limit.min(buf.len());
        let mut e = Encoder::new(&mut buf[..limit]);
        let hdr = if wire.vers == 2 {
            let credit = v2msg::credit_word(self.max_requests);
            // Version 2 asks for remote invalidation by naming one handle in
            // `rdma_inv_handle` (draft Section 6.3.3), where version 1 relies on RFC 8797's
            // flag and the server's "one rkey" rule: the first MR the server writes (Write or
            // Reply chunk), else the first it reads. The reply's Receive says whether it did
            // (`IB_WC_WITH_INVALIDATE`); the other MRs are invalidated locally.
            let inv_handle = segs[..nsegs]
                .first()
                .or(reads[..nreads].first().map(|r| &r.segment))
                .map_or(0, |s| s.handle);
            if inv_handle != 0 {
                VERS_STATS.inv_handle();
            }
            v2msg::encode_call(&mut e, (info.xid, credit), plan.proc, &lists, inv_handle)
        } else {
            v1::encode(&mut e, info.xid, self.max_requests, plan.proc, &lists)
        }
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
            CallChunk::Continued { .. } => return Err(EINVAL),
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
    /// `out`. The MRs come from `hands.spare`, or from the pool when that is empty, and go to
    /// `hands.used`.
    fn register(
        &self,
        rqst: &RpcRqst,
        (buf, role): (Buf, Role),
        mut offset: u32,
        mut len: u32,
        out: &mut [Segment; marshal::MAX_HDR_SEGS as usize],
        hands: &mut Hands,
    ) -> Result<usize> {
        let mut n = 0;
        if len == 0 {
            return Err(EINVAL);
        }
        while len > 0 {
            if n == out.len() || hands.used.len() == MAX_CHAIN {
                return Err(EMSGSIZE);
            }
            let mut r = match hands.spare.pop() {
                Some(r) => r,
                None => self.take_mr()?,
            };
            let (covered, seg) = match r.map(rqst, buf, offset, len, hands.depth) {
                Ok(m) => m,
                Err(e) => {
                    hands.spare.push(r);
                    return Err(e);
                }
            };
            r.offer = (role, n, seg);
            hands.used.push(r);
            out[n] = seg;
            n += 1;
            offset += covered;
            len -= covered.min(len);
        }
        Ok(n)
    }

    /// One more MR from the pool for a sender.
    fn take_mr(&self) -> Result<KBox<Reg>> {
        let mut st = self.state.lock();
        if st.closing {
            return Err(ENOTCONN);
        }
        st.free.pop().ok_or(ENOBUFS)
    }

    /// Posts a LOCAL_INV chain for `mrs`, the MRs of request `id`, whose completion finishes
    /// `job`; `freed` (MRs the server invalidated, unmapped) go back to the pool meanwhile.
    ///
    /// If the chain cannot be posted, the MRs are neither unmapped nor returned to the pool:
    /// those whose `LOCAL_INV` the device took before it refused the rest are queued (it may
    /// still invalidate or flush them), the others still registered with the server. They all
    /// stay the request's ([`Stage::Stuck`]) and the connection is closed instead
    /// (`frwr_unmap_async`); [`ClientConn::shutdown`] unmaps them once the QP is drained. The job
    /// is then handed back unfinished.
    fn post_inv(
        this: &Arc<Self>,
        id: usize,
        mut mrs: MrList,
        freed: &mut MrList,
        job: Job,
    ) -> core::result::Result<(), Job> {
        let inject = super::inject_local_inv_failure();
        let mut st = this.state.lock();
        let wake = Self::give_back(&mut st, freed);
        if st.closing {
            // The drain ends the registrations.
            Self::stuck(&mut st, id, &mut mrs);
            drop(st);
            if wake {
                this.wake_sender();
            }
            return Err(job);
        }
        let wr = if inject { None } else { st.invs.pop() };
        st.posters += 1;
        drop(st);
        if wake {
            this.wake_sender();
        }
        let wr = match wr {
            Some(wr) => Some(wr),
            None if inject => None,
            None => Self::new_inv(this, GFP_ATOMIC).ok(),
        };
        let Some(mut wr) = wr else {
            return Self::inv_failed(this, id, &mut mrs, Some(job), (ENOMEM, 0));
        };
        let d = wr.data_mut();
        d.mrs = mrs;
        d.job = Some(job);
        // Without the lock: the chain owns the MRs.
        match this
            .qp
            .post_local_inv(wr, |d, f| d.mrs.mrs_mut().for_each(f))
        {
            Ok(()) => {
                let mut st = this.state.lock();
                let idle = this.posted(&mut st);
                drop(st);
                if idle {
                    this.idle.notify_all();
                }
                Ok(())
            }
            Err((e, mut wr, taken)) => {
                // The signaled `LOCAL_INV` was not posted: `wr` is ours, and its MRs.
                let d = wr.data_mut();
                let mut mrs = d.mrs.take();
                let job = d.job.take();
                drop(wr);
                Self::inv_failed(this, id, &mut mrs, job, (e, taken))
            }
        }
    }

    /// A LOCAL_INV chain of `post_inv` could not be posted (`e`, after the device took `taken`
    /// of its `LOCAL_INV`s): the MRs, queued or still registered, stay the request's until the
    /// drain, and the connection is closed.
    fn inv_failed(
        this: &Arc<Self>,
        id: usize,
        mrs: &mut MrList,
        job: Option<Job>,
        (e, taken): (Error, usize),
    ) -> core::result::Result<(), Job> {
        let n = mrs.len();
        let mut st = this.state.lock();
        let idle = this.posted(&mut st);
        Self::stuck(&mut st, id, mrs);
        drop(st);
        if idle {
            this.idle.notify_all();
        }
        if e == ENOMEM {
            pr_warn_peer!("no memory to invalidate a request's MRs: closing the connection\n");
        } else {
            pr_warn_peer!(
                "LOCAL_INV post failed after {} of {}: {:?}: closing the connection\n",
                taken,
                n,
                e
            );
        }
        this.link.force_disconnect();
        job.map_or(Ok(()), Err)
    }

    /// Keeps the still registered `mrs` of request `id` until the drain ([`Stage::Stuck`]).
    fn stuck(st: &mut State, id: usize, mrs: &mut MrList) {
        match st.reqs.entry(id) {
            Some(e) => {
                e.stage = Stage::Stuck;
                e.mrs.append(mrs);
            }
            None => {
                // Cannot happen (the table has room for every request): kept aside, never
                // reused, until the drain.
                pr_err!("no room to record a request's registered MRs\n");
                st.orphans.append(mrs);
            }
        }
    }

    /// `buf_free` of `rqst`: ends its registrations, waiting for their invalidation. May sleep.
    pub(crate) fn release(this: &Arc<Self>, rqst: &RpcRqst) {
        let id = rqst.id();
        let mut st = this.state.lock();
        // A retry the RPC did not live to send (it ended otherwise).
        let xid = rqst.info().xid;
        if let Some(i) = st.retries.iter().position(|&(x, _)| x == xid) {
            let _ = st.retries.remove(i);
        }
        Self::cont_release(&mut st, id);
        Self::call_release(&mut st, id);
        if st.closing {
            drop(st);
            // `shutdown` unmaps everything once the QP is drained.
            this.drained.wait_for_completion();
            return;
        }
        let mrs = match st.reqs.get_mut(id) {
            None => return,
            // MRs still registered after a LOCAL_INV that could not be posted: only the drain
            // of the closing connection ends them.
            Some(e) if e.stage == Stage::Stuck || e.posting => {
                drop(st);
                this.drained.wait_for_completion();
                return;
            }
            // Its MRs went with the reply, invalidated before the RPC completed.
            Some(e) if e.stage == Stage::Replied => {
                let _ = st.reqs.remove(id);
                return;
            }
            Some(_) => st.reqs.remove(id),
        };
        drop(st);
        // sunrpc calls `buf_free` in process context, from `xprt_release` in the task's own
        // context or rpciod's (which runs under `memalloc_nofs_save`), and the wait below
        // sleeps anyway (as `frwr_unmap_sync`): the allocation may sleep too.
        let Ok(done) = Arc::pin_init(Completion::new(), GFP_KERNEL) else {
            // No memory to wait with: the connection must go to stop the peer.
            let mut mrs = mrs;
            Self::stuck(&mut this.state.lock(), id, &mut mrs);
            this.link.force_disconnect();
            this.drained.wait_for_completion();
            return;
        };
        let r = Self::post_inv(
            this,
            id,
            mrs,
            &mut MrList::default(),
            Job::Release(done.clone()),
        );
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
        // Backward Calls first: a Call is never a reply, whatever its XID. Version 1 ones are
        // taken whatever the connection's version; version 2 ones below, once it is settled.
        if fixed.vers == v1::VERSION {
            match backchannel::classify(msg) {
                Inbound::Reply => {}
                Inbound::Call(call) => return Self::backward_call(this, recv, call),
                Inbound::BadCall(bad) => {
                    Self::drop_bad_call(bad);
                    return Some(recv);
                }
            }
        }
        let Some(kind) = this.kind(msg, &fixed) else {
            this.counters.bad_reply_count.add(1, Relaxed);
            trace::xprtrdma_reply_err(BadReply::Vers, &this.peer, Some(&fixed));
            pr_warn_peer!(
                "xid {:08x}: reply of version {} dropped\n",
                fixed.xid,
                fixed.vers
            );
            return Some(recv);
        };
        // Transport messages that carry no RPC reply: properties, and credit refreshes (whose
        // XID the sender sets to zero, draft Section 6.4.2).
        if kind == Kind::V2 {
            let htype = v2::Common::peek(msg).map(|c| c.htype);
            if htype == Some(v2::CONNPROP) {
                this.connprop(msg);
                return Some(recv);
            }
            if htype == Some(v2::NOMSG)
                && fixed.xid == 0
                && v2msg::decode_reply(msg, &REPLY_LIMITS) == Ok(v2msg::Reply::CreditRefresh)
            {
                this.credit_refresh(credits::sanitize_grant(
                    v2msg::credit_grant(fixed.credits),
                    this.max_requests,
                ));
                return Some(recv);
            }
            // Backward Calls: `RDMA2_F_RESPONSE` clear (the XID is the server's).
            match backchannel::classify(msg) {
                Inbound::Reply => {}
                Inbound::Call(call) => {
                    VERS_STATS.backward_v2();
                    return Self::backward_call(this, recv, call);
                }
                Inbound::BadCall(bad) => {
                    Self::drop_bad_call(bad);
                    return Some(recv);
                }
            }
        }
        let mut prefix = None;
        if kind == Kind::V2 {
            match this.continued(msg, &fixed) {
                Continued::No => {}
                Continued::Final(p) => prefix = Some(p),
                // Kept, or dropped: the Receive goes back at once.
                Continued::Fragment | Continued::Dropped => return Some(recv),
            }
        }
        let credits = match kind {
            Kind::V1 => Some(credits::sanitize_grant(fixed.credits, this.max_requests)),
            Kind::V2 => Some(credits::sanitize_grant(
                v2msg::credit_grant(fixed.credits),
                this.max_requests,
            )),
            // Draft Section 6.4.3: the credit field of an error is ignored.
            Kind::Fallback => None,
        };
        let Some(Some(pinned)) = this.link.with(|x| {
            x.reply_seen();
            x.lookup(fixed.xid)
        }) else {
            // No request waits for it (late, duplicate or bogus XID): dropped.
            trace::xprtrdma_reply_err(BadReply::Rqst, &this.peer, Some(&fixed));
            return Some(recv);
        };
        trace::xprtrdma_reply(pinned.rqst(), fixed.xid, credits.unwrap_or(0));
        match kind {
            Kind::V1 => VERS_STATS.reply(1),
            Kind::V2 => VERS_STATS.reply(2),
            Kind::Fallback => {}
        }
        let reply = Reply {
            pinned,
            recv,
            fixed,
            kind,
            len,
            invalidated: wc.invalidated_rkey(),
            prefix,
        };
        Self::reply(this, reply, credits)
    }

    /// Message continuation of replies (draft Section 6.3.2): a message with `F_MORE` has its
    /// payload appended to the reply being reassembled and is done with; the final message of
    /// a sequence takes the payloads before it along. A sequence that breaks the rules
    /// (interleaved with another, a different header type, chunks before the final message) or
    /// exceeds [`REASSEMBLY`] is dropped with the message that broke it, and so is the final
    /// message of each XID involved, later: its RPC is retransmitted by sunrpc, or fails. A
    /// requester sends no `RDMA2_ERROR` (Section 6.4.3), so nothing is answered.
    fn continued(&self, msg: &[u8], fixed: &Fixed) -> Continued {
        let flags = msg
            .get(16..20)
            .and_then(|w| w.try_into().ok())
            .map_or(0, u32::from_be_bytes);
        let more = flags & v2::F_MORE != 0;
        // The common case, without the lock: no sequence in progress or broken.
        if !more && !self.reasm_active.load(Relaxed) {
            return Continued::No;
        }
        let mut st = self.state.lock();
        if let Some(b) = st.reasm_broken.iter_mut().find(|b| **b == Some(fixed.xid)) {
            if !more {
                *b = None;
            }
            self.reasm_mark(&st);
            drop(st);
            VERS_STATS.continuation_dropped();
            pr_warn_peer!(
                "xid {:08x}: message of a broken continued reply dropped\n",
                fixed.xid
            );
            return Continued::Dropped;
        }
        if !more && !st.reasm.in_progress() {
            self.reasm_mark(&st);
            return Continued::No;
        }
        let in_progress = st.reasm.xid();
        let r = v2msg::fragment(msg, &REPLY_LIMITS)
            .map_err(|e| (e, None))
            .and_then(|(f, at)| {
                st.reasm
                    .feed(f)
                    .map(|p| (p, at))
                    .map_err(|e| (v2msg::ReplyError::Continued, Some(e)))
            });
        let (p, at) = match r {
            Ok(x) => x,
            Err((e, seq)) => {
                // The sequence in progress, if any, and this message.
                let old = core::mem::take(&mut st.reasm_buf);
                st.reasm.reset();
                // The rest of either sequence must not be taken for a whole reply: the one in
                // progress, unless this message was its last, and this message's own if more
                // messages follow it.
                if let Some(x) = in_progress.filter(|&x| x != fixed.xid || more) {
                    Self::mark_broken(&mut st, x);
                }
                if more {
                    Self::mark_broken(&mut st, fixed.xid);
                }
                self.reasm_mark(&st);
                drop(st);
                // Kept for the next sequence.
                self.recycle_reasm(old);
                VERS_STATS.continuation_dropped();
                self.counters.bad_reply_count.add(1, Relaxed);
                match seq {
                    Some(s) => {
                        pr_warn_peer!("xid {:08x}: continued reply dropped: {:?}\n", fixed.xid, s)
                    }
                    None => {
                        pr_warn_peer!("xid {:08x}: continued reply dropped: {:?}\n", fixed.xid, e)
                    }
                }
                return Continued::Dropped;
            }
        };
        if p.complete {
            let mut prefix = core::mem::take(&mut st.reasm_buf);
            self.reasm_mark(&st);
            drop(st);
            // Room for the final message's payload too, which `assemble` appends: the last
            // allocation of the sequence is made here, where its failure is a dropped message.
            if reasm_reserve(&mut prefix, p.len).is_err() {
                self.recycle_reasm(prefix);
                VERS_STATS.continuation_dropped();
                pr_warn_peer!(
                    "xid {:08x}: no memory to reassemble a continued reply: dropped\n",
                    fixed.xid
                );
                return Continued::Dropped;
            }
            VERS_STATS.continued(p.index.saturating_add(1));
            return Continued::Final(prefix);
        }
        let payload = msg.get(at..).unwrap_or(&[]);
        if st.reasm_buf.capacity() == 0 {
            st.reasm_buf = core::mem::take(&mut st.reasm_spare);
        }
        if reasm_append(&mut st.reasm_buf, payload).is_err() {
            // The sequence ends here: its later messages, the final one included, are dropped
            // as those of a broken sequence, each counted.
            let old = core::mem::take(&mut st.reasm_buf);
            st.reasm.reset();
            Self::mark_broken(&mut st, fixed.xid);
            self.reasm_mark(&st);
            drop(st);
            self.recycle_reasm(old);
            VERS_STATS.continuation_dropped();
            pr_warn_peer!(
                "xid {:08x}: no memory to reassemble a continued reply: dropped\n",
                fixed.xid
            );
            return Continued::Dropped;
        }
        self.reasm_mark(&st);
        Continued::Fragment
    }

    /// Records `xid` as a continued reply whose sequence broke: its messages are dropped up to
    /// and including its final one. The oldest record gives way when all are in use.
    fn mark_broken(st: &mut State, xid: u32) {
        let b = &mut st.reasm_broken;
        if b.contains(&Some(xid)) {
            return;
        }
        match b.iter_mut().find(|s| s.is_none()) {
            Some(s) => *s = Some(xid),
            None => {
                b.rotate_left(1);
                if let Some(last) = b.last_mut() {
                    *last = Some(xid);
                }
            }
        }
    }

    /// Whether [`ClientConn::continued`] must look at a message without `F_MORE`: a sequence
    /// is in progress or broken. Kept under the state lock, read without it.
    fn reasm_mark(&self, st: &State) {
        let active = st.reasm.in_progress() || st.reasm_broken.iter().any(Option::is_some);
        self.reasm_active.store(active, Relaxed);
    }

    /// Drops and counts a backward Call that cannot be answered.
    fn drop_bad_call(bad: BadCall) {
        BC_STATS.dropped(Reason::BadCall);
        let BadCall::XidMismatch { rdma_xid, rpc_xid } = bad;
        pr_warn_peer!(
            "xid {:08x}: backward call dropped: its RPC xid is {:08x}\n",
            rdma_xid,
            rpc_xid
        );
    }

    /// The version backward messages are framed in: the connection's, once it has settled
    /// on version 2; version 1 otherwise.
    fn bc_vers(st: &State) -> u32 {
        match st.nego {
            Some(n) if n.settled() && n.version() == v2::VERSION => v2::VERSION,
            _ => v1::VERSION,
        }
    }

    /// The largest backward RPC message of this connection (`xprt_rdma_bc_maxpayload`), 0
    /// before it is established. The transport reads it once, when the connection is made,
    /// before its version is settled: while version 2 is offered, with version 2's header,
    /// the longer, so that it holds whichever version the connection settles on.
    pub(crate) fn bc_maxpayload(&self) -> u32 {
        let st = self.state.lock();
        let vers = match st.nego {
            Some(n) if !n.settled() => n.version(),
            _ => Self::bc_vers(&st),
        };
        match st.params {
            Some(p) => backchannel::max_payload_in(vers, p.inline_send, p.inline_recv, page_size()),
            None => 0,
        }
    }

    /// Hands the backward Call `call`, held by the Receive `recv`, to the callback service
    /// (`rpcrdma_bc_receive_call`), or drops it; the Receive is re-posted when the request is
    /// freed ([`ClientConn::repost`]). Returns the Receive to re-post now, if not kept.
    fn backward_call(
        this: &Arc<Self>,
        recv: KBox<Wr<RecvCtx>>,
        call: backchannel::Message,
    ) -> Option<KBox<Wr<RecvCtx>>> {
        let (gone, max) = {
            let st = this.state.lock();
            let max = st.params.map_or(0, |p| {
                let vers = Self::bc_vers(&st);
                backchannel::max_payload_in(vers, p.inline_send, p.inline_recv, page_size())
            });
            (st.closing || st.lost, max)
        };
        let why = if gone {
            // A reconnect is under way: the reply could not go out on this connection, and
            // the server sends the Call again once the session is bound to the next one.
            Some(Reason::Closing)
        } else if call.rpc_len > max as usize {
            pr_warn_peer!(
                "xid {:08x}: backward call of {} bytes dropped (at most {})\n",
                call.xid,
                call.rpc_len,
                max
            );
            Some(Reason::TooLarge)
        } else if !this.link.with(|x| x.has_bc_serv()).unwrap_or(false) {
            pr_info_peer!(
                "xid {:08x}: backward call dropped: no callback service\n",
                call.xid
            );
            Some(Reason::NoService)
        } else {
            None
        };
        if let Some(why) = why {
            BC_STATS.dropped(why);
            return Some(recv);
        }
        let Some(rqst) = this.bc.get(&this.link) else {
            // As `rpcrdma_bc_receive_call`'s overflow, but without closing the connection: the
            // server's session allows no more Calls than our slots, so only a broken server
            // sends them, and its Call times out.
            BC_STATS.dropped(Reason::NoSlot);
            pr_warn_peer!(
                "xid {:08x}: backward call dropped: all {} backchannel requests in use\n",
                call.xid,
                BC_MAX_REQUESTS
            );
            return Some(recv);
        };
        BC_STATS.call();
        trace::xprtrdma_cb_call(&this.peer, call.xid);
        match rqst.enqueue(call.xid, recv, call.rpc_range()) {
            Ok(()) => None,
            Err((rqst, recv)) => {
                // Cannot happen: the Call is within the Receive's buffer.
                this.bc.put(rqst);
                BC_STATS.dropped(Reason::BadCall);
                Some(recv)
            }
        }
    }

    /// Sends the backward Reply of `rqst` inline as `RDMA_MSG` (`xprt_rdma_bc_send_reply`).
    pub(crate) fn bc_send_reply(this: &Arc<Self>, rqst: &RpcRqst) -> Result {
        let info = rqst.info();
        let mut st = this.state.lock();
        if st.closing {
            return Err(ENOTCONN);
        }
        let params = st.params.ok_or(ENOTCONN)?;
        let v2 = Self::bc_vers(&st) == v2::VERSION;
        let Some(mut wr) = st.bc_sends.pop() else {
            let e = Self::wait_for_space(&mut st, rqst);
            drop(st);
            this.counters.empty_sendctx_q.add(1, Relaxed);
            return Err(e);
        };
        st.posters += 1;
        drop(st);

        // Without the lock: the Send work request is ours.
        let built = (|| -> Result {
            let buf = wr.buf_mut(0).ok_or(EINVAL)?.as_mut_slice();
            let limit = (params.inline_send as usize).min(buf.len());
            let mut e = Encoder::new(&mut buf[..limit]);
            // Version 2: `RDMA2_F_RESPONSE`, the XID is the server's.
            let hdr = if v2 {
                backchannel::encode_header_v2(&mut e, info.xid, BC_MAX_REQUESTS, true)
            } else {
                backchannel::encode_header(&mut e, info.xid, BC_MAX_REQUESTS)
            }
            .map_err(|_| EMSGSIZE)?;
            let end = hdr
                .checked_add(info.snd.len as usize)
                .filter(|&e| e <= limit)
                .ok_or(EMSGSIZE)?;
            rqst.copy_call(0, &mut buf[hdr..end])?;
            wr.set_len(0, end)
        })();
        if built.is_ok() {
            trace::xprtrdma_cb_reply(&this.peer, info.xid);
        }
        let r = match built {
            Ok(()) => this.post_send(wr).map_err(|e| (e, None)),
            Err(e) => Err((e, Some(wr))),
        };

        let mut st = this.state.lock();
        let idle = this.posted(&mut st);
        let mut wake = false;
        let r = match r {
            Ok(()) => Ok(()),
            Err((e, Some(wr))) => {
                // Cannot fail: the pool had room for it before.
                let _ = st.bc_sends.push(wr, GFP_ATOMIC);
                wake = Self::room_back(&mut st);
                Err((e, Phase::Build))
            }
            Err((e, None)) => Err((e, Phase::Post)),
        };
        drop(st);
        if wake {
            this.wake_sender();
        }
        if idle {
            this.idle.notify_all();
        }
        match r {
            Ok(()) => {
                BC_STATS.reply();
                Ok(())
            }
            Err((e, Phase::Build)) => {
                // As `xprt_rdma_bc_send_reply`: not sent, not to be sent again.
                BC_STATS.dropped(Reason::Reply);
                pr_warn_peer!(
                    "xid {:08x}: backward reply of {} bytes not sent: {:?}\n",
                    info.xid,
                    info.snd.len,
                    e
                );
                Err(EIO)
            }
            Err((e, Phase::Post)) => {
                BC_STATS.dropped(Reason::Reply);
                pr_warn_peer!(
                    "xid {:08x}: ib_post_send of a backward reply failed: {:?}\n",
                    info.xid,
                    e
                );
                Err(ENOTCONN)
            }
        }
    }

    /// Handles a reply matched to its request, applying the credit grant `credits` (of a
    /// reply not seen before): checks it, ends the request's registrations and completes it
    /// (or has the LOCAL_INV chain do so). Returns the Receive to re-post now, if not kept.
    fn reply(this: &Arc<Self>, reply: Reply, credits: Option<u32>) -> Option<KBox<Wr<RecvCtx>>> {
        /// What becomes of the reply.
        enum Fate {
            /// Handled, with the request's MRs.
            Handle(MrList),
            /// Parked for the sender still posting the request.
            Parked,
            /// Dropped.
            Dropped,
        }
        let id = reply.pinned.rqst().id();
        let fixed_proc = reply.fixed.proc;
        let mut reply = Some(reply);
        let mut sent = None;
        let mut st = this.state.lock();
        let grant = credits.filter(|&c| c != st.credits);
        if let Some(c) = grant {
            st.credits = c;
        }
        let fate = match st.reqs.get_mut(id) {
            None => {
                Self::cont_release(&mut st, id);
                Self::call_release(&mut st, id);
                Fate::Handle(MrList::default())
            }
            Some(e) if e.posting => {
                // The reply overtook the sender, which is still posting the request's MRs:
                // it handles the reply once they are recorded. A second one is dropped.
                if e.pending.is_none() {
                    e.pending = reply.take();
                    Fate::Parked
                } else {
                    Fate::Dropped
                }
            }
            // The connection is closing; the request is retransmitted on the next one.
            Some(e) if e.stage == Stage::Stuck => Fate::Dropped,
            // The request's reply is in hand already.
            Some(e) if e.stage == Stage::Replied => Fate::Dropped,
            Some(e) => {
                sent = e.sent;
                // The entry stays, so that a duplicate finds it (see `Stage::Replied`).
                let mrs = e.mrs.take();
                e.stage = Stage::Replied;
                Self::cont_release(&mut st, id);
                Self::call_release(&mut st, id);
                Fate::Handle(mrs)
            }
        };
        if let Some(s) = sent.filter(|_| fixed_proc != v2::ERROR) {
            // Not an `RDMA2_ERROR` (nor `RDMA_ERROR`, of the same value): the server took the
            // Write chunk if the call offered one.
            st.write_refusals.on_reply(&s);
        }
        drop(st);
        if let Some(c) = grant {
            this.link.with(|x| x.set_credits(c));
        }
        let (mut mrs, reply) = match (fate, reply) {
            (Fate::Handle(mrs), Some(reply)) => (mrs, reply),
            // Parked: the sender has it.
            (_, None) => return None,
            // Dropped: the request is unpinned, the Receive re-posted.
            (_, Some(reply)) => return Some(reply.recv),
        };
        let Reply {
            pinned,
            recv,
            fixed,
            kind,
            len,
            invalidated,
            prefix,
        } = reply;
        let msg = recv
            .buf(0)
            .and_then(|b| b.as_slice().get(..len))
            .unwrap_or(&[]);
        let result = this
            .check(&mrs, sent, pinned.rqst(), msg, &fixed, kind)
            .and_then(|p| Self::assemble(p, prefix, msg));
        let mut freed = MrList::default();
        if let Some(rkey) = invalidated {
            // The server invalidated one MR with its Send (`frwr_reminv`).
            if let Some(mut r) = mrs.remove_if(|r| r.mr.rkey() == rkey) {
                r.mr.unmap();
                freed.push(r);
                if kind == Kind::V2 {
                    VERS_STATS.reminv_v2();
                }
            }
        }
        if mrs.is_empty() {
            // Every MR of the request is unmapped: the reply can be placed now.
            this.put_mrs(&mut freed);
            this.complete_reply(pinned, result, &recv);
            return Some(recv);
        }
        // As `frwr_unmap_async`: one per MR to invalidate.
        this.counters
            .local_inv_needed
            .add(mrs.len() as u64, Relaxed);
        // The LOCAL_INV completion places the reply and completes the RPC.
        let job = Job::Reply {
            pinned,
            result,
            recv,
        };
        match Self::post_inv(this, id, mrs, &mut freed, job) {
            Ok(()) => None,
            Err(Job::Reply { pinned, recv, .. }) => {
                // The connection is closing: as `frwr_unmap_async`, the request is unpinned
                // without a reply, to be retransmitted on the next connection.
                drop(pinned);
                Some(recv)
            }
            Err(job @ Job::Release(_)) => {
                job.finish(this);
                None
            }
        }
    }

    /// Checks a reply to `rqst` (`rpcrdma_decode_msg` and friends): its header, and its
    /// chunks against what the call offered with `mrs`, the request's MRs. The result is where
    /// the RPC message is, or the errno the RPC fails with.
    fn check(
        &self,
        mrs: &MrList,
        sent: Option<v2msg::Sent>,
        rqst: &RpcRqst,
        msg: &[u8],
        fixed: &Fixed,
        kind: Kind,
    ) -> Result<Placement> {
        let xid = fixed.xid;
        let bad_header = |e: &dyn core::fmt::Debug| {
            self.counters.bad_reply_count.add(1, Relaxed);
            trace::xprtrdma_reply_err(BadReply::Hdr, &self.peer, Some(fixed));
            pr_warn_peer!("xid {:08x}: bad reply header: {:?}\n", xid, e);
            EIO
        };
        let d = match kind {
            // Sent again as version 1 once the call's MRs are released.
            Kind::Fallback => return Ok(Placement::Resend),
            Kind::V1 => Header::decode_reply(msg, &REPLY_LIMITS).map_err(|e| bad_header(&e))?,
            Kind::V2 => match v2msg::decode_reply(msg, &REPLY_LIMITS) {
                Ok(v2msg::Reply::Rpc(d)) => d,
                Ok(v2msg::Reply::Error(e)) => {
                    // A call without chunks has no entry: it went inline both ways.
                    let sent = sent.unwrap_or(v2msg::Sent {
                        call: CallChunk::Inline { pullup: true },
                        reply: ReplyChunk::Inline,
                        retried: false,
                        rcv_buflen: rqst.info().rcv.buflen,
                    });
                    // What it tells of the server's Write chunks (`v2msg::WriteChunkRefusals`).
                    let mut st = self.state.lock();
                    let none = st.write_refusals.on_error(&e, &sent);
                    let first = none && !core::mem::replace(&mut st.no_write_chunks, true);
                    drop(st);
                    if first {
                        pr_info_peer!(
                            "{}: the server takes no Write chunks: Reply chunks in their place on this connection\n",
                            self.peer.host()
                        );
                    }
                    if let Some(force) = v2msg::retry(&e, &sent) {
                        pr_info_peer!(
                            "xid {:08x}: server replied RDMA2_ERROR {:?}: sending the call again{}{}\n",
                            xid,
                            e,
                            if force.position_zero {
                                " in a Position-Zero Read chunk"
                            } else {
                                ""
                            },
                            if force.reply_chunk {
                                " with a Reply chunk"
                            } else {
                                ""
                            }
                        );
                        return Ok(Placement::Retry(force));
                    }
                    pr_warn_peer!("xid {:08x}: server replied RDMA2_ERROR {:?}\n", xid, e);
                    return Err(EIO);
                }
                Ok(r) => return Err(bad_header(&r)),
                Err(e) => return Err(bad_header(&e)),
            },
        };
        // What the call offered for its reply, segment by segment.
        let mut write = [Segment::default(); marshal::MAX_HDR_SEGS as usize];
        let mut reply = [Segment::default(); marshal::MAX_HDR_SEGS as usize];
        let (mut nwrite, mut nreply) = (0, 0);
        for r in mrs.iter() {
            let (role, i, seg) = r.offer;
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

    /// The inline part of a continued reply: the payloads before its final message (`prefix`),
    /// then the final message's (`msg[start..end]`).
    fn assemble(p: Placement, prefix: Option<KVec<u8>>, msg: &[u8]) -> Result<Placement> {
        match (p, prefix) {
            (
                Placement::Inline {
                    start,
                    end,
                    written,
                },
                Some(mut data),
            ) => {
                let last = msg.get(start..end).ok_or(EIO)?;
                // Reserved by `continued` already.
                reasm_append(&mut data, last)?;
                Ok(Placement::Assembled { data, written })
            }
            // Only an `RDMA2_MSG` is continued (`v2msg::fragment`).
            (_, Some(_)) => Err(EIO),
            (p, None) => Ok(p),
        }
    }

    /// Places a checked reply, held by the Receive `recv`, into the request's buffer and
    /// completes the RPC (`rpcrdma_complete_rqst`). Every MR of the request must be unmapped
    /// already, so that no unmap can overwrite what is copied here.
    fn complete_reply(
        self: &Arc<Self>,
        mut pinned: Pinned,
        result: Result<Placement>,
        recv: &Wr<RecvCtx>,
    ) {
        if let Ok(Placement::Resend) = result {
            self.resend(pinned);
            return;
        }
        if let Ok(Placement::Retry(force)) = result {
            let xid = pinned.rqst().info().xid;
            let mut st = self.state.lock();
            let queued = st.retries.push_within_capacity((xid, force)).is_ok();
            drop(st);
            if queued {
                VERS_STATS.retry();
                // Sent again on this connection, where `retries` holds its marshaling.
                self.resend(pinned);
            } else {
                pr_warn_peer!("xid {:08x}: too many calls to send again: failed\n", xid);
                pinned.complete(Err(EIO));
            }
            return;
        }
        let mut spare = None;
        let r = result.and_then(|p| {
            let r = self.place(&mut pinned, &p, recv);
            if let Placement::Assembled { data, .. } = p {
                spare = Some(data);
            }
            r
        });
        pinned.complete(r);
        if let Some(data) = spare {
            self.recycle_reasm(data);
        }
    }

    /// Keeps the buffer of a reassembled reply or of a broken sequence, emptied, for the next
    /// continued reply (see `State::reasm_spare`), unless a larger one is kept already.
    fn recycle_reasm(&self, mut data: KVec<u8>) {
        data.clear();
        let mut st = self.state.lock();
        if st.reasm_spare.capacity() < data.capacity() {
            core::mem::swap(&mut st.reasm_spare, &mut data);
        }
        drop(st);
        // The smaller one is freed without the lock.
        drop(data);
    }

    /// Copies the reply of `pinned` where `p` says it is into its receive buffer; its length.
    fn place(&self, pinned: &mut Pinned, p: &Placement, recv: &Wr<RecvCtx>) -> Result<u32> {
        // The inline part: in the Receive, or reassembled.
        let (inline, written) = match p {
            Placement::Inline {
                start,
                end,
                written,
            } => (
                recv.buf(0)
                    .and_then(|b| b.as_slice().get(*start..*end))
                    .ok_or(EIO)?,
                *written,
            ),
            Placement::Assembled { data, written } => (&data[..], *written),
            Placement::ReplyChunk(len) => {
                self.counters.total_rdma_reply.add(u64::from(*len), Relaxed);
                return Ok(*len);
            }
            Placement::Resend | Placement::Retry(_) => return Err(EAGAIN),
        };
        let len = echo::msg_reply_len(inline.len(), written).ok_or(EIO)?;
        let copied = pinned.place_reply(inline, written)?;
        self.counters
            .fixup_copy_count
            .add(u64::from(copied), Relaxed);
        self.counters
            .total_rdma_reply
            .add(u64::from(written), Relaxed);
        Ok(len)
    }

    /// Has the resend worker send the call of `pinned` again (see its `run`). Without it (the
    /// transport is gone) the call completes with `EAGAIN`: sunrpc encodes and transmits it
    /// again itself (`call_status`).
    fn resend(self: &Arc<Self>, pinned: Pinned) {
        // Cannot fail: one call is outstanding until the version is known, and a retry has
        // its slot in `retries` first.
        let pushed = self.state.lock().resend.push_within_capacity(pinned);
        if let Err(e) = pushed {
            e.0.complete(Err(EAGAIN));
            return;
        }
        // Already queued (not started yet): it will find this call too.
        let linked = self
            .link
            .with(|x| {
                let _ = x.workqueue().enqueue::<_, 1>(self.clone());
            })
            .is_some();
        if !linked {
            loop {
                let next = self.state.lock().resend.pop();
                let Some(p) = next else {
                    break;
                };
                p.complete(Err(EAGAIN));
            }
        }
    }

    /// Re-posts a Receive, unless the connection is closing.
    pub(crate) fn repost(this: &Arc<Self>, recv: KBox<Wr<RecvCtx>>) {
        let st = this.state.lock();
        if !st.closing {
            if let Err(e) = this.post_recv(recv) {
                drop(st);
                pr_warn_peer!("ib_post_recv failed: {:?}\n", e);
                this.link.force_disconnect();
            }
        }
    }
}

impl Job {
    /// Ends the job once its MRs are released.
    fn finish(self, conn: &Arc<ClientConn>) {
        match self {
            Job::Reply {
                pinned,
                result,
                recv,
            } => {
                conn.complete_reply(pinned, result, &recv);
                ClientConn::repost(conn, recv);
            }
            Job::Release(done) => done.complete_all(),
        }
    }
}

impl ClientConn {
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
        } else if first && self.loud() {
            pr_info_peer!(
                "connection lost: {} flushed (the QP went to the error state)\n",
                what
            );
        } else if first {
            pr_debug!("connection lost: {} flushed\n", what);
        }
        self.link.force_disconnect();
    }
}

impl Done for SendCtx {
    fn done(wr: KBox<Wr<Self>>, wc: &Wc) {
        // Only the device's own completions, as the C client traces its signaled Sends.
        if !wc.is_retired() {
            trace::xprtrdma_wc_send(wc);
        }
        wr.data().conn.sends_posted.fetch_sub(1, Relaxed);
        if !wc.is_success() {
            wr.data().conn.completion_error("Send", wc);
        }
        let conn = wr.data().conn.clone();
        let mut st = conn.state.lock();
        if !st.closing {
            // Cannot fail: the pool had room for it before.
            let pool = wr.data().pool;
            let _ = ClientConn::pool(&mut st, pool).push(wr, GFP_ATOMIC);
            let wake = ClientConn::room_back(&mut st);
            drop(st);
            if wake {
                conn.wake_sender();
            }
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
        let job = wr.data_mut().job.take();
        match &job {
            Some(Job::Release(_)) => trace::xprtrdma_wc_li_wake(wc),
            _ => trace::xprtrdma_wc_li_done(wc),
        }
        // The chain owns its MRs: unmapped without the lock.
        let mut mrs = wr.data_mut().mrs.take();
        mrs.unmap();
        let mut st = conn.state.lock();
        let wake = ClientConn::give_back(&mut st, &mut mrs);
        let keep = !st.closing && st.invs.len() < st.invs.capacity();
        if keep {
            let _ = st.invs.push(wr, GFP_ATOMIC);
            drop(st);
        } else {
            drop(st);
            drop(wr);
        }
        if wake {
            conn.wake_sender();
        }
        if let Some(job) = job {
            job.finish(&conn);
        }
    }
}

impl Done for RecvCtx {
    fn done(wr: KBox<Wr<Self>>, wc: &Wc) {
        trace::xprtrdma_wc_receive(wc);
        wr.data().conn.recvs.fetch_sub(1, Relaxed);
        if !wc.is_success() {
            wr.data().conn.completion_error("Receive", wc);
            return;
        }
        wr.data().conn.ka_received.add(1, Relaxed);
        let conn = wr.data().conn.clone();
        if let Some(wr) = ClientConn::receive(&conn, wr, wc) {
            ClientConn::repost(&conn, wr);
        }
    }
}
