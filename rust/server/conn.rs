// SPDX-License-Identifier: GPL-2.0

//! One connection of the server transport (svcrdma's `struct svcxprt_rdma`): accept,
//! resources, Receives, Send Queue accounting and teardown.
//!
//! # Sizing
//!
//! As `svc_rdma_accept`: `max_requests` credits and Receive buffers of `max_req_size` bytes,
//! both read from the sysctls of `/proc/sys/sunrpc/svc_rdma` when a connection is accepted
//! ([`sysctl::Svc`]), [`BC_MAX_REQUESTS`] Receives and Sends for the backchannel (RFC 8167),
//! [`RECV_BATCH`] spare Receives, one Receive and one Send kept free for `ib_drain_qp`; all
//! lowered to the device's `max_qp_wr`. The Send Queue holds a Send per credit and per
//! backchannel Call plus, per credit, the rdma_rw contexts of the service's
//! largest payload (`rdma_rw_mr_factor`; `rdma_rw_init_qp` adds their work requests), and its
//! SGE count is the device's `max_sge_rd`, so that an RDMA Read or Write moves that many pages.
//!
//! # Credits
//!
//! Each reply grants [`credits::grant`]`(posted Receives, max requests)`: never more Calls
//! than Receives are posted to catch them, never more than the configured maximum, never zero.
//! Receives are replaced (refilled) by `xpo_recvfrom`, before the reply is sent, in batches:
//! once no more than `max_requests` + [`BC_MAX_REQUESTS`] are posted, a chain brings them back
//! to that + [`RECV_BATCH`] with one `ib_post_recv` ([`SvcConn::refill`],
//! `svc_rdma_refresh_recvs`), so the grant is normally the maximum. The backchannel's Receives
//! are not granted: they catch the Replies to our backward Calls, of which at most
//! [`BC_MAX_REQUESTS`] are outstanding (its slots; svcrdma counts `sc_max_bc_requests` in its
//! Receive Queue depth).
//!
//! # Send Queue accounting
//!
//! Every chain reserves its work requests (rdma_rw's count, plus one for the Send) before it
//! is posted and gives them back when it completes (for a reply, in the Send's completion
//! handler, [`SendCtxt`]); a thread finding too few free entries waits (never overflows the
//! queue) until entries come back or the connection closes, and closes it itself should none
//! come back for [`SQ_WAIT_MS`]. Waiters are served in the order they came, with tickets, as
//! `svc_rdma_sq_wait` (see [`Sq`]): while one waits, later reservations queue behind it even
//! if their entries are free, so a large reply is not starved by a stream of small ones.
//!
//! # Send contexts
//!
//! As svcrdma's `svc_rdma_send_ctxt`: each connection preallocates a Send context per credit,
//! a Send work request with its transport header buffer, DMA-mapped once for the life of the
//! connection. A reply takes one, and the Send's completion puts it back, after releasing the
//! RDMA Write contexts chained ahead of the Send and the references they hold on the reply's
//! pages. Should all be in use, a new one is allocated, and freed when its Send completes.
//! Likewise a spare Receive per credit replaces the Receive of a Call nfsd is processing, and
//! comes back when the Call is answered (`xpo_release_ctxt`).
//!
//! # Device removal
//!
//! As `svc_rdma_accept`, an accepted connection registers a removal notification on its
//! device with the module's `ib_client`; when the device is being removed, [`Removal`] closes
//! the connection (`svc_rdma_xprt_done`), and the removal waits until the [`SvcConn`] is freed,
//! which unregisters the notification after its QP, CQs and PD are gone. The cm id's
//! `DEVICE_REMOVAL` event (delivered after the `ib_client`'s callback) closes it too.

#![forbid(unsafe_code)]

use kernel::{
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
        CondVar,
        CondVarTimeoutResult,
        Mutex,
        SpinLock, //
    },
    time::{
        delay::fsleep,
        msecs_to_jiffies,
        Delta, //
    },
    workqueue::{
        self,
        DelayedWork,
        Queue,
        Work,
        WorkItem, //
    }, //
};

use super::{
    SvcRdmaXprt,
    VERS_STATS, //
};
use crate::{
    proto::{
        continuation::{self, Reassembly},
        credits,
        keepalive::KeepAlive,
        private_data::{
            self,
            Inline,
            PrivateData, //
        },
        v1::{
            Call,
            Limits, //
        },
        v2::ReverseSupport,
        v2msg::{
            ConnProps,
            CTL_MESSAGES, //
        },
    },
    rdma::{
        cm::{
            ConnParam,
            Handler,
            Id,
            SockAddr, //
        },
        mr::page_size,
        ratelimit::{
            pr_info_peer,
            pr_warn_peer, //
        },
        removal::{
            Notification,
            RemovalHandler, //
        },
        rw::{
            Ctx,
            Op,
            RwCache,
            SgTable,
            MAX_CHAIN, //
        },
        verbs::{
            Cq,
            Device,
            Direction,
            DmaBuf,
            Done,
            Pd,
            Qp,
            QpCaps,
            Wc,
            Wr,
            MAX_RECV_CHAIN, //
        },
        work,
    },
    sunrpc::{
        svc::{
            CallBuf,
            New,
            SvcXprt, //
            SvcXprtLink,
        },
        sysctl::{
            self,
            SvcStat, //
        },
    },
    trace::{
        self,
        AcceptStep,
        SvcWc, //
    },
};

/// Receives posted beyond the credits (`RPCRDMA_MAX_RECV_BATCH`).
const RECV_BATCH: u32 = 8;
/// Backchannel Calls outstanding at most per connection (`RPCRDMA_MAX_BC_REQUESTS`, svcrdma's
/// `sc_max_bc_requests`): the slots of the backchannel transport, the credits its Calls ask
/// for, and the Receives and Sends kept for them beyond the forward credits (RFC 8167).
pub(crate) const BC_MAX_REQUESTS: u32 = 2;
/// Most Write chunks whose result payloads are recorded per Call.
pub(crate) const MAX_PAYLOADS: usize = Limits::MAX_CHUNKS as usize;
/// How long the teardown of a connection waits for its port to come back if its disconnect
/// would be sent on a port whose link is down. The IB CM sends the disconnect (DREQ) as a MAD
/// on the port's GSI QP (QP1), on `rdma_disconnect` and again when a connected cm id is
/// destroyed, and rxe moves a QP to the error state when a transmit fails (`rxe_requester`
/// calls `rxe_qp_error` whatever the QP type): one MAD sent while the link is down kills QP1,
/// and with it every later connection to this server on that device (no REP leaves) until the
/// device is re-created. The client's `PORT_DOWN_WAIT_MS` is the same wait; here it runs in a
/// work item ([`DeferredClose`]), so no nfsd thread waits.
const PORT_DOWN_WAIT_MS: u32 = 30_000;
/// How often the port's state is checked meanwhile.
const PORT_POLL_MS: u32 = 100;
/// How long a reservation of Send Queue entries waits while none come back before it closes
/// the connection ([`SvcConn::sq_reserve`]). Entries come back as Sends complete, within a
/// round trip or a few on a live connection, however loaded; a client that posts no Receives
/// and asked for infinite RNR retries (`rnr_retry_count` 7) lets none complete, and would
/// hold every nfsd thread answering it until it disconnects (`svc_rdma_sq_wait` waits
/// without a limit).
const SQ_WAIT_MS: u32 = 30_000;
/// How often a reservation with a signal pending, whose wait returns at once, looks again
/// (nfsd threads take no signals, but the timed wait must still end).
const SQ_SIGNAL_POLL_MS: u32 = 10;

/// A connection request adopted by the listener, waiting for `xpo_accept`.
pub(crate) struct Pending {
    /// The new cm id; dropping it refuses the request.
    pub(crate) id: Id<CmEvents>,
    /// What the connection's cm handler and completions share.
    pub(crate) shared: Arc<Shared>,
    /// The client's RFC 8797 private data, if valid.
    pub(crate) peer_pd: Option<PrivateData>,
    /// The client's initiator depth (its outbound RDMA Reads, our `sc_ord`).
    pub(crate) ord: u8,
}

/// Free Send Queue entries, the tickets of the threads waiting for some, and whether the
/// connection is closing (`sc_sq_avail`, `sc_sq_ticket_head`, `sc_sq_ticket_tail`).
///
/// A thread that cannot reserve its entries at once takes the next ticket (`head`) and waits
/// until every earlier ticket was served (`tail` equals its ticket) and the entries are free;
/// while anyone waits, nobody takes entries without a ticket. So reservations are served in
/// order: a large chain is not starved by small ones taking the entries it waits for.
struct Sq {
    avail: u32,
    /// The next ticket to hand out.
    head: u32,
    /// The ticket being served; `head == tail` when nobody waits.
    tail: u32,
    /// Times entries came back (wrapping): a waiter that sees it move knows the Send Queue is
    /// not stuck, and waits [`SQ_WAIT_MS`] more.
    returns: u32,
    closed: bool,
}

impl Sq {
    /// Whether threads wait for entries.
    fn waiters(&self) -> bool {
        self.head != self.tail
    }
}

/// What the completion handlers and the cm event handler share with the connection.
#[pin_data]
pub(crate) struct Shared {
    /// Received messages not yet taken by `xpo_recvfrom`, oldest first.
    #[pin]
    dto: SpinLock<KVec<KBox<Wr<Recv>>>>,
    /// Receives posted and not completed.
    posted: Atomic<u32>,
    #[pin]
    sq: SpinLock<Sq>,
    #[pin]
    sq_wait: CondVar,
    /// Idle Send contexts (`sc_send_ctxts`); emptied when the connection is freed, since each
    /// holds a reference on this object.
    #[pin]
    sends: SpinLock<KVec<KBox<Wr<SendCtxt>>>>,
    /// Receives whose Calls were answered (`sc_recv_ctxts`), with their buffers still mapped,
    /// for the next refill; emptied when the connection is freed, as `sends`.
    #[pin]
    recvs: SpinLock<KVec<KBox<Wr<Recv>>>>,
    /// The connection's `svc_xprt`, once accepted.
    pub(crate) link: SvcXprtLink,
    /// Its device is being removed: a deferred teardown must not wait for the port.
    removing: Atomic<bool>,
    /// The keep-alive tick of a version 2 connection, every `keepalive` seconds.
    #[pin]
    keepalive: DelayedWork<Shared>,
    /// Keep-alive bookkeeping, and whether the tick runs.
    #[pin]
    pub(super) ka: SpinLock<Ka>,
    /// Sends posted since the last keep-alive tick.
    pub(super) ka_sent: Atomic<u32>,
    /// Messages received since the last keep-alive tick.
    ka_received: Atomic<u32>,
    /// A tick asked for a credit refresh: the next `xpo_recvfrom` sends it (a thread of the
    /// service, where the connection's Send contexts are).
    pub(super) ka_due: Atomic<bool>,
    /// The continued Call being reassembled (`xpo_recvfrom` takes one message at a time).
    #[pin]
    pub(super) reasm: Mutex<CallReassembly>,
    /// A continued Call is being reassembled: `xpo_recvfrom` must look at every version 2
    /// message under `reasm`. Kept under that lock, read without it.
    pub(super) reasm_active: Atomic<bool>,
    /// Held around every post of a Send, and across all the Sends of a continued reply: no
    /// other message may come between them (draft Section 6.3.2). Send Queue entries are
    /// reserved before it is taken, never under it.
    #[pin]
    pub(super) send_order: Mutex<()>,
}

/// A continued Call being reassembled: the sequence's state, and its payload so far.
pub(crate) struct CallReassembly {
    /// See [`continuation::Reassembly`].
    pub(super) seq: Reassembly,
    /// The payloads of the messages so far.
    pub(super) buf: KVec<u8>,
    /// The buffer of the last continued Call, given back once placed, for the next one:
    /// grown once to the largest Call, not at every message of every sequence.
    pub(super) spare: KVec<u8>,
}

/// Bounds on a continued Call: 64 messages, 256 KiB (a Call larger than that takes chunks
/// from any sensible client).
pub(super) const CALL_REASSEMBLY: continuation::Limits = continuation::Limits {
    max_fragments: 64,
    max_len: 256 * 1024,
};

/// The keep-alive state of a server connection.
pub(crate) struct Ka {
    /// See [`crate::proto::keepalive`].
    pub(super) ka: KeepAlive,
    /// The tick was started.
    started: bool,
    /// The connection is going: the tick must not queue itself again.
    stopped: bool,
}

impl_has_delayed_work! {
    impl HasDelayedWork<Self> for Shared { self.keepalive }
}

impl WorkItem for Shared {
    type Pointer = Arc<Shared>;

    /// One keep-alive interval ended: a refresh is due if we sent nothing, and a client that
    /// keeps alive too but has been silent for [`MISSES`] of its intervals is disconnected.
    ///
    /// [`MISSES`]: crate::proto::keepalive::MISSES
    fn run(this: Arc<Shared>) {
        let sent = this.ka_sent.xchg(0, Relaxed) != 0;
        let received = this.ka_received.xchg(0, Relaxed) != 0;
        let mut k = this.ka.lock();
        if k.stopped {
            return;
        }
        let action = k.ka.tick(sent, received);
        let (silent, period) = (k.ka.silent(), k.ka.period());
        if !action.dead {
            this.keepalive_arm(&k);
        }
        drop(k);
        if action.dead {
            VERS_STATS.keepalive_dead();
            pr_warn_peer!(
                "nothing received for {} s, {} of the client's keep-alive intervals: closing the connection\n",
                silent.saturating_mul(crate::keepalive()),
                silent / period.max(1)
            );
            this.close();
        } else if action.refresh {
            this.ka_due.store(true, Relaxed);
            this.link.with(|x| x.enqueue_data());
        }
    }
}

impl Shared {
    /// A new shared state, with no transport linked yet.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            try_pin_init!(Self {
                dto <- new_spinlock!(KVec::new()),
                posted: Atomic::new(0),
                sq <- new_spinlock!(Sq {
                    avail: 0,
                    head: 0,
                    tail: 0,
                    returns: 0,
                    closed: false,
                }),
                sq_wait <- new_condvar!(),
                sends <- new_spinlock!(KVec::new()),
                recvs <- new_spinlock!(KVec::new()),
                link: SvcXprtLink::new()?,
                removing: Atomic::new(false),
                keepalive <- new_delayed_work!("rpcrdma_rs_svc_keepalive"),
                ka <- new_spinlock!(Ka {
                    ka: KeepAlive::new(),
                    started: false,
                    stopped: false,
                }),
                ka_sent: Atomic::new(0),
                ka_received: Atomic::new(0),
                ka_due: Atomic::new(false),
                reasm_active: Atomic::new(false),
                reasm <- new_mutex!(CallReassembly {
                    seq: Reassembly::new(CALL_REASSEMBLY),
                    buf: KVec::new(),
                    spare: KVec::new(),
                }),
                send_order <- new_mutex!(()),
            }),
            GFP_KERNEL,
        )
    }

    /// Starts the keep-alive of a connection settled on version 2, unless the `keepalive`
    /// module parameter is 0.
    pub(super) fn keepalive_start(self: &Arc<Self>) {
        if crate::keepalive() == 0 {
            return;
        }
        let mut k = self.ka.lock();
        if k.started || k.stopped {
            return;
        }
        k.started = true;
        self.keepalive_arm(&k);
    }

    /// Queues the next tick, under the keep-alive lock (so that none follows
    /// [`Shared::keepalive_stop`]).
    fn keepalive_arm(self: &Arc<Self>, k: &Ka) {
        if k.stopped {
            return;
        }
        let delay = crate::keepalive_interval();
        // Cannot be queued already: only the tick re-arms it.
        let _ = workqueue::system().enqueue_delayed(self.clone(), delay);
    }

    /// Stops the keep-alive for good, waiting for a tick in progress. May sleep.
    pub(super) fn keepalive_stop(self: &Arc<Self>) {
        let mut k = self.ka.lock();
        k.stopped = true;
        let started = k.started;
        drop(k);
        if started {
            work::cancel_sync(self);
        }
    }

    /// The connection ends: wake Send Queue waiters and let sunrpc close the transport.
    fn close(&self) {
        self.sq.lock().closed = true;
        self.sq_wait.notify_all();
        self.link.with(|x| x.deferred_close());
    }

    /// Receives posted now.
    pub(super) fn posted(&self) -> u32 {
        self.posted.load(Relaxed)
    }

    /// Gives back `n` Send Queue entries.
    fn sq_release(&self, n: u32) {
        if n == 0 {
            return;
        }
        let mut sq = self.sq.lock();
        sq.avail += n;
        sq.returns = sq.returns.wrapping_add(1);
        drop(sq);
        self.sq_wait.notify_all();
    }

    /// Puts an idle Send context back (or frees it if the connection keeps enough).
    fn put_send(&self, wr: KBox<Wr<SendCtxt>>) {
        let mut q = self.sends.lock();
        let r = q.push_within_capacity(wr);
        drop(q);
        drop(r);
    }
}

/// The data of a Send context (`struct svc_rdma_send_ctxt`): its [`Wr`] owns the DMA-mapped
/// transport header buffer and, while posted, the RDMA Write contexts chained ahead of the
/// Send (with their references on the reply's pages).
pub(crate) struct SendCtxt {
    shared: Arc<Shared>,
    /// Send Queue entries the posted chain holds (its Writes' work requests and the Send).
    pub(super) sqes: u32,
}

impl Done for SendCtxt {
    /// `svc_rdma_wc_send`: the Writes and the Send are done (or flushed); their resources were
    /// released with the chain's contexts, the Send Queue entries and the context go back.
    fn done(mut wr: KBox<Wr<Self>>, wc: &Wc) {
        let shared = wr.data().shared.clone();
        let sqes = core::mem::take(&mut wr.data_mut().sqes);
        shared.sq_release(sqes);
        trace::svcrdma_wc(SvcWc::Send, wc);
        if !wc.is_success() {
            if !wc.is_flush() {
                pr_warn_peer!(
                    "Send failed: status {}, vendor error {:#x}; closing the connection\n",
                    wc.status(),
                    wc.vendor_err()
                );
            }
            shared.close();
        }
        shared.put_send(wr);
    }
}

/// The cm event handler of a connection (`svc_rdma_cma_handler`).
pub(crate) struct CmEvents {
    shared: Arc<Shared>,
}

impl CmEvents {
    /// A handler for the connection sharing `shared`.
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }
}

impl Handler for CmEvents {
    type Conn = Self;

    fn established(&self, _private_data: &[u8]) {
        // Calls that arrived before the connection was established.
        if !self.shared.dto.lock().is_empty() {
            self.shared.link.with(|x| x.enqueue_data());
        }
    }

    fn disconnected(&self) {
        self.shared.close();
    }

    fn device_removal(&self) {
        pr_warn!("rdma device removed: closing the connection\n");
        self.shared.removing.store(true, Relaxed);
        self.shared.close();
    }
}

/// The device removal handler of a connection (`svc_rdma_xprt_done`), called by the module's
/// `ib_client` when the connection's device is being removed.
pub(crate) struct Removal {
    shared: Arc<Shared>,
}

impl RemovalHandler for Removal {
    fn device_removed(&self) {
        pr_info!("device removal (ib_client): closing the connection\n");
        self.shared.removing.store(true, Relaxed);
        self.shared.close();
    }
}

/// The data of a posted Receive; once it completed, the Call it holds, kept in `rq_xprt_ctxt`
/// until its reply is sent (`struct svc_rdma_recv_ctxt`). Reset when the Receive is kept for
/// the next refill ([`SvcConn::release_ctxt`]).
pub(crate) struct Recv {
    shared: Arc<Shared>,
    /// Bytes received, once completed.
    len: u32,
    /// The resource id of the CQ it completed on (for the tracepoints).
    pub(super) cq_id: u32,
    /// The transport header, decoded and validated once by `xpo_recvfrom`; the Read chunk,
    /// result payload and reply paths use it (svcrdma's parsed chunk lists).
    pub(super) call: Option<Call>,
    /// Result payloads nfsd reported (`xpo_result_payload`): offset and length in the reply,
    /// one per Write chunk, in order.
    pub(super) payloads: [Option<(u32, u32)>; MAX_PAYLOADS],
    /// Write chunks already given a payload.
    pub(super) next_payload: usize,
    /// Version 2: the first Write chunk too short for its result payload, as the draft's
    /// `RDMA2_ERR_WRITE_RESOURCE` reports it (one-based index, bytes needed): the reply is
    /// replaced by that error (draft Section 6.4.3).
    pub(super) write_short: Option<(u32, u32)>,
}

impl Recv {
    fn new(shared: Arc<Shared>) -> Self {
        Self {
            shared,
            len: 0,
            cq_id: 0,
            call: None,
            payloads: [None; MAX_PAYLOADS],
            next_payload: 0,
            write_short: None,
        }
    }

    /// Forgets the Call of a completed Receive, for the Receive to be posted again.
    fn reset(&mut self) {
        self.len = 0;
        self.call = None;
        self.payloads = [None; MAX_PAYLOADS];
        self.next_payload = 0;
        self.write_short = None;
    }
}

impl Done for Recv {
    fn done(mut wr: KBox<Wr<Self>>, wc: &Wc) {
        trace::svcrdma_wc(SvcWc::Recv, wc);
        let shared = wr.data().shared.clone();
        shared.posted.fetch_sub(1, Relaxed);
        if !wc.is_success() {
            // 5: IB_WC_WR_FLUSH_ERR, the connection is going away anyway.
            if wc.status() != 5 {
                pr_warn_peer!(
                    "Receive failed: status {}, vendor error {:#x}; closing the connection\n",
                    wc.status(),
                    wc.vendor_err()
                );
            }
            drop(wr);
            shared.close();
            return;
        }
        wr.data_mut().len = wc.byte_len();
        wr.data_mut().cq_id = wc.cq_id();
        shared.ka_received.add(1, Relaxed);
        let mut q = shared.dto.lock();
        match q.push_within_capacity(wr) {
            Ok(()) => {
                drop(q);
                shared.link.with(|x| x.enqueue_data());
            }
            Err(e) => {
                drop(q);
                // Cannot happen: the queue has room for every Receive ever posted.
                drop(e);
                pr_warn_peer!("receive queue full: message dropped\n");
            }
        }
    }
}

/// A completed Receive and the Call it holds, handed to sunrpc as `rq_xprt_ctxt` (see
/// [`Recv`]): the Receive's own allocation, so that none is made per Call.
pub(crate) type RecvCtxt = Wr<Recv>;

impl CallBuf for RecvCtxt {
    fn bytes(&self) -> &[u8] {
        let len = usize::try_from(self.data().len).unwrap_or(usize::MAX);
        self.buf(0)
            .map_or(&[][..], |b| b.as_slice().get(..len).unwrap_or(b.as_slice()))
    }
}

/// A peer address for the log, or `unknown`.
pub(super) struct Peer(pub(super) Option<SockAddr>);

impl kernel::fmt::Display for Peer {
    fn fmt(&self, f: &mut kernel::fmt::Formatter<'_>) -> kernel::fmt::Result {
        match &self.0 {
            Some(a) => a.fmt(f),
            None => f.write_str("unknown"),
        }
    }
}

/// One accepted connection.
pub(crate) struct SvcConn {
    pub(super) shared: Arc<Shared>,
    pub(super) qp: Qp<CmEvents>,
    pub(super) id: Id<CmEvents>,
    pub(super) dev: Device,
    /// Credits we grant at most.
    pub(super) max_requests: u32,
    /// Receives below which the Receive Queue is refilled: one per credit and per backchannel
    /// Reply we may be sent ([`BC_MAX_REQUESTS`]).
    recv_floor: u32,
    /// Receives kept posted.
    recv_target: u32,
    /// Bytes of each Receive buffer: our inline threshold (`sc_max_req_size`).
    recv_size: u32,
    /// Send Queue entries in all.
    pub(super) sq_depth: u32,
    /// The rdma_rw context objects of the connection's RDMA Reads and Writes, kept for up
    /// to as many transfers as the QP was sized for.
    pub(super) rw: Arc<RwCache>,
    /// Our send threshold: the one agreed with the client through RFC 8797, lowered to the
    /// Receive Buffer Size of its `RDMA2_CONNPROP` on a version 2 connection.
    pub(super) inline_send: Atomic<u32>,
    /// Set when the connection settles on version 2: the next reply sent is followed by our
    /// `RDMA2_CONNPROP` (after it, so that the client has settled on version 2 too).
    pub(super) connprop_due: Atomic<u32>,
    /// Whether replies may use Send With Invalidate (client allows it, device can).
    pub(super) send_inv: bool,
    /// Bounds on what a Call's chunk lists may describe.
    pub(super) limits: Limits,
    /// Malformed messages received (logged once per connection).
    pub(super) bad_msgs: Atomic<u32>,
    /// The RPC-over-RDMA version of the connection, 0 until fixed by the first message in a
    /// version we accept: a version 1 Call, or any version 2 message (draft Section 4.3.3:
    /// the client does not change it).
    pub(super) vers: Atomic<u32>,
    /// The client's address, if known (for the tracepoints).
    pub(super) peer: Option<SockAddr>,
    /// The removal notification on `dev`; the last field, so unregistered once the QP, CQs,
    /// PD and cm id are released.
    _removal: Notification<Removal>,
}

impl SvcConn {
    /// `xpo_accept` for one adopted request: resources, Receives, `rdma_accept` with our
    /// private data, then the `svc_xprt`. A failure is traced with its step
    /// (`svcrdma_<step>_err`).
    pub(crate) fn accept(listener: &SvcXprt, p: Pending) -> Result<New> {
        let (_, peer) = p.id.addrs();
        let mut step = AcceptStep::Accept;
        Self::try_accept(listener, p, &mut step)
            .inspect_err(|e| trace::svcrdma_accept_err(step, peer.as_ref(), *e))
    }

    /// [`SvcConn::accept`]; `step` is set to the step being taken, for the trace of a failure.
    fn try_accept(listener: &SvcXprt, p: Pending, step: &mut AcceptStep) -> Result<New> {
        let Pending {
            id,
            shared,
            peer_pd,
            ord,
        } = p;
        let dev = id.device()?;
        if !id.fabric_ok() {
            *step = AcceptStep::Fabric;
            pr_warn_peer!(
                "rdma connection refused: the device's fabric is not iWARP, IB or RoCE\n"
            );
            return Err(EINVAL);
        }
        // As svc_rdma_accept(): refused if the device is already being removed. On a failure
        // below it is dropped after the PD, CQs and QP (declared before them).
        let removal = Notification::new(
            &dev,
            Removal {
                shared: shared.clone(),
            },
            GFP_KERNEL,
        )?;
        let attrs = dev.attrs();
        // Read once per connection, as svc_rdma_accept reads svcrdma_max_requests and
        // svcrdma_max_req_size: the credits, the inline size we offer both ways in our private
        // data and the size of our Receive buffers. Used as the client reads them (whole KiB),
        // so that we never send more inline than our private data announced.
        let tun = sysctl::Svc::get();
        let ours = Inline {
            send: tun.max_req_size,
            recv: tun.max_req_size,
        }
        .advertised();
        let wr_max = attrs.max_qp_wr.saturating_sub(1);
        let mut max_requests = tun.max_requests;
        let mut recv_batch = RECV_BATCH;
        // As svc_rdma_accept's rq_depth: the credits, the backchannel's Replies, the batch.
        if max_requests + BC_MAX_REQUESTS + CTL_MESSAGES + recv_batch > wr_max {
            recv_batch = 1;
            max_requests = wr_max
                .saturating_sub(recv_batch + BC_MAX_REQUESTS + CTL_MESSAGES)
                .max(1);
        }
        // One Receive more for a transport message without RPC (draft Section 4.3.1).
        let recv_floor = max_requests + BC_MAX_REQUESTS + CTL_MESSAGES;
        let recv_target = recv_floor + recv_batch;
        // As svc_rdma_accept: room for every credit's largest payload in rdma_rw contexts
        // (one per MR, or per Read/Write work request on devices without MRs). Chains of
        // them are split to fit the Send Queue; a single context longer than it is refused
        // (`sq_reserve`).
        let rdma_ctxs = max_requests
            .saturating_mul(id.rw_mr_factor(listener.max_pages()).max(1))
            .min(attrs.max_qp_wr);
        let caps = QpCaps {
            // A Send per credit, per backchannel Call and per transport message without RPC,
            // and one for the drain.
            max_send_wr: max_requests + BC_MAX_REQUESTS + CTL_MESSAGES + 1,
            // And one for the drain (`ib_drain_rq`), which `refill` leaves free.
            max_recv_wr: recv_target + 1,
            // A Send uses one SGE, but rdma_rw gathers up to this many pages per RDMA Write
            // and (with `max_sge_rd`) per RDMA Read: with one, every page is a work request.
            max_send_sge: attrs.max_sge_rd.max(1),
            max_recv_sge: 1,
            max_inline_data: 0,
        }
        .clamp(&attrs);

        *step = AcceptStep::Pd;
        let pd = Pd::new(&dev, GFP_KERNEL)?;
        *step = AcceptStep::Qp;
        // The Send CQ sees at most one signaled completion per chain and the drain, but a
        // flush completes every work request posted, signaled or not: room for the whole
        // Send Queue, as rdma_rw sizes it (`rdma_rw_init_qp`: three work requests per
        // context where it registers MRs, a REG_MR and a LOCAL_INV around each RDMA op).
        let scq_entries = caps
            .max_send_wr
            .saturating_add(rdma_ctxs.saturating_mul(3))
            .saturating_add(1)
            .min(attrs.max_cqe);
        let scq = Cq::new(&dev, scq_entries, 0, GFP_KERNEL)?;
        let rcq = Cq::new(
            &dev,
            (caps.max_recv_wr + 1).min(attrs.max_cqe),
            0,
            GFP_KERNEL,
        )?;
        let qp = Qp::new_rw(&id, &pd, &scq, &rcq, caps, rdma_ctxs)?;
        let rw = RwCache::new(rdma_ctxs)?;
        *step = AcceptStep::Accept;
        // All but the drain's entry (`ib_drain_sq`), and no more than the Send CQ holds if
        // the device granted a deeper queue than asked.
        let sq_depth = qp
            .caps()
            .max_send_wr
            .min(scq_entries)
            .saturating_sub(1)
            .max(1);
        shared.sq.lock().avail = sq_depth;
        // Allocated before the lock is taken (a spinlock: GFP_KERNEL may sleep). Nothing is
        // received before the Receives are posted below, so the queue being replaced is empty.
        let mut dto = KVec::with_capacity(recv_target as usize, GFP_KERNEL)?;
        core::mem::swap(&mut *shared.dto.lock(), &mut dto);
        drop(dto);

        let negotiated = private_data::negotiate(ours, peer_pd.as_ref());
        let send_inv = negotiated.remote_invalidate && attrs.mem_mgt_extensions();
        let (local, peer) = id.addrs();
        // As svc_rdma_recv_ctxt_alloc: chunks may describe the service's largest message.
        let limits = Limits::svcrdma(listener.max_pages(), page_size());
        let conn = Self {
            shared: shared.clone(),
            qp,
            id,
            dev,
            max_requests,
            recv_floor,
            recv_target,
            recv_size: ours.recv,
            sq_depth,
            rw,
            inline_send: Atomic::new(negotiated.inline.send),
            connprop_due: Atomic::new(0),
            send_inv,
            limits,
            bad_msgs: Atomic::new(0),
            vers: Atomic::new(0),
            peer,
            _removal: removal,
        };
        // As svc_rdma_accept (its send and receive contexts): a Send context per credit and per
        // backchannel Call, and a spare Receive per credit to replace those whose Calls nfsd
        // is processing. The
        // Send pool keeps at most what it started with; the Receive pool has room for the
        // batch too (as svc_rdma_post_recvs allocates 2 * credits + batch receive contexts):
        // an idle connection has from credits + BC_MAX_REQUESTS + 1 to credits +
        // BC_MAX_REQUESTS + RECV_BATCH Receives posted
        // ([`SvcConn::refill`]) and the rest in the pool, so none is ever freed and the
        // connection's resources are the same whenever it is idle (but for how many of its
        // Receives are posted).
        // The spare Receives are made after the posted ones, which would take them.
        let nsends = max_requests + BC_MAX_REQUESTS;
        let mut sends = KVec::with_capacity(nsends as usize, GFP_KERNEL)?;
        let mut recvs = KVec::with_capacity(recv_target as usize, GFP_KERNEL)?;
        for _ in 0..nsends {
            sends.push(conn.new_send_ctxt(conn.send_buf())?, GFP_KERNEL)?;
        }
        core::mem::swap(&mut *shared.sends.lock(), &mut sends);
        drop(sends);
        conn.refill()?;
        for _ in 0..max_requests {
            recvs.push(conn.new_recv()?, GFP_KERNEL)?;
        }
        core::mem::swap(&mut *shared.recvs.lock(), &mut recvs);
        drop(recvs);

        // As svc_rdma_accept: we issue RDMA Reads up to the client's initiator depth (and our
        // device's limit), and accept none from it. Flags 0, as the C server: the client never
        // needs to invalidate memory of ours. The other parameters are zero as the C server's
        // (a zeroed conn_param): with an RNR retry count of 7 the client's QP would retry
        // forever when we have no Receive posted, instead of failing the connection.
        let initiator_depth = u32::from(ord).min(attrs.max_qp_init_rd_atom);
        if initiator_depth == 0 {
            *step = AcceptStep::InitDepth;
            pr_warn_peer!(
                "rdma connection refused: client allows no RDMA Read (initiator depth 0)\n"
            );
            return Err(EINVAL);
        }
        let pmsg = PrivateData::new(ours.send, ours.recv, false).encode();
        conn.id.accept(&ConnParam {
            private_data: &pmsg,
            responder_resources: 0,
            initiator_depth: u8::try_from(initiator_depth).unwrap_or(u8::MAX),
            flow_control: 0,
            retry_count: 0,
            rnr_retry_count: 0,
        })?;

        let new = listener.new_connection(KBox::new(SvcRdmaXprt::Conn(conn), GFP_KERNEL)?)?;
        if let Some(a) = local {
            new.xprt().set_local(&a);
        }
        if let Some(a) = peer {
            new.xprt().set_remote(&a);
        }
        shared.link.set(new.xprt());
        if !shared.dto.lock().is_empty() {
            // svc_xprt_received (after accept) enqueues it.
            new.xprt().enqueue_data();
        }
        let peer = Peer(peer);
        pr_info_peer!(
            "rdma connection from {peer}: {max_requests} credits, inline {}/{}, send with invalidate {}\n",
            negotiated.inline.send,
            negotiated.inline.recv,
            if send_inv { "on" } else { "off" }
        );
        Ok(new)
    }

    /// The transport properties we advertise on a version 2 connection (draft Section 5.2):
    /// our send threshold, our Receive buffers, the largest chunk and the most segments a Call
    /// may carry. We take backward-direction Replies inline only.
    pub(super) fn props(&self) -> ConnProps {
        ConnProps {
            sbsiz: self.inline_send.load(Relaxed),
            rbsiz: self.recv_size,
            rssiz: u32::try_from(self.limits.max_read_bytes).unwrap_or(u32::MAX),
            rcsiz: self.limits.max_segments,
            brs: ReverseSupport::Inline,
        }
    }

    /// Posts Receives up to [`SvcConn::recv_target`] once a batch is due, recycled ones first
    /// ([`SvcConn::release_ctxt`]), new ones if there are none, in chains of at most
    /// [`MAX_RECV_CHAIN`] (one `ib_post_recv` each).
    ///
    /// As `svc_rdma_wc_receive` and `svc_rdma_refresh_recvs`: nothing is posted while more
    /// Receives than credits (and backchannel Replies) are posted, so the Receive Queue is
    /// refilled [`RECV_BATCH`]
    /// Receives at a time (with one call into the driver), and every credit granted still has
    /// a Receive posted.
    pub(super) fn refill(&self) -> Result {
        if self.shared.posted() > self.recv_floor {
            return Ok(());
        }
        loop {
            // Claims the Receives it will post before taking them, so that threads refilling
            // at once never post more than the Receive Queue holds; counted before posting
            // also because a completion may run before `post_recvs` returns.
            let mut posted = self.shared.posted();
            let want = loop {
                let want = self
                    .recv_target
                    .saturating_sub(posted)
                    .min(MAX_RECV_CHAIN as u32);
                if want == 0 {
                    return Ok(());
                }
                match self.shared.posted.cmpxchg(posted, posted + want, Relaxed) {
                    Ok(_) => break want,
                    Err(now) => posted = now,
                }
            };
            let mut err = None;
            let mut taken = 0u32;
            let wrs = core::iter::from_fn(|| {
                if taken >= want {
                    return None;
                }
                let recycled = self.shared.recvs.lock().pop();
                let wr = match recycled {
                    Some(wr) => wr,
                    None => match self.new_recv() {
                        Ok(wr) => wr,
                        Err(e) => {
                            err = Some(e);
                            return None;
                        }
                    },
                };
                taken += 1;
                Some(wr)
            });
            // The claimed Receives not posted are given back.
            let (n, r) = match self.qp.post_recvs(wrs) {
                Ok(n) => (n, err.map_or(Ok(()), Err)),
                Err((e, n)) => (n, Err(e)),
            };
            if n < want {
                self.shared.posted.fetch_sub(want - n, Relaxed);
            }
            r?;
            if n == 0 {
                return Ok(());
            }
        }
    }

    /// A new Receive with its buffer.
    fn new_recv(&self) -> Result<KBox<Wr<Recv>>> {
        let buf = DmaBuf::new(
            &self.dev,
            self.recv_size as usize,
            Direction::FromDevice,
            GFP_KERNEL,
        )?;
        Wr::recv(buf, Recv::new(self.shared.clone()), GFP_KERNEL)
    }

    /// A new Send context with a buffer of `len` bytes.
    fn new_send_ctxt(&self, len: usize) -> Result<KBox<Wr<SendCtxt>>> {
        let buf = DmaBuf::new(&self.dev, len, Direction::ToDevice, GFP_KERNEL)?;
        let mut bufs = KVec::with_capacity(1, GFP_KERNEL)?;
        bufs.push(buf, GFP_KERNEL)?;
        Wr::send(
            bufs,
            SendCtxt {
                shared: self.shared.clone(),
                sqes: 0,
            },
            GFP_KERNEL,
        )
    }

    /// A Send context whose buffer holds `len` bytes (`svc_rdma_send_ctxt_get`): an idle one,
    /// or a new one.
    pub(super) fn send_ctxt(&self, len: usize) -> Result<KBox<Wr<SendCtxt>>> {
        if len <= self.send_buf() {
            if let Some(w) = self.shared.sends.lock().pop() {
                return Ok(w);
            }
        }
        self.new_send_ctxt(len.max(self.send_buf()))
    }

    /// Size of a Send context's buffer (`sc_max_req_size`, our inline size both ways): the
    /// largest inline reply, and any reply header (a reply echoes the Write and Reply chunks
    /// of a Call that fit in a Receive buffer of this size).
    fn send_buf(&self) -> usize {
        self.recv_size as usize
    }

    /// Puts back a Send context that was not posted.
    pub(super) fn put_send_ctxt(&self, wr: KBox<Wr<SendCtxt>>) {
        self.shared.put_send(wr);
    }

    /// `xpo_release_ctxt`: the Call of `ctxt` is answered (or dropped); its Receive is kept
    /// for the next refill (`svc_rdma_recv_ctxt_put`).
    pub(crate) fn release_ctxt(&self, mut wr: KBox<RecvCtxt>) {
        wr.data_mut().reset();
        let mut q = self.shared.recvs.lock();
        let r = q.push_within_capacity(wr);
        drop(q);
        drop(r);
    }

    /// Credits to grant in a reply.
    pub(super) fn grant(&self) -> u32 {
        credits::grant(self.shared.posted(), self.max_requests)
    }

    /// Reserves `n` Send Queue entries, waiting for them if needed, in turn with the other
    /// waiters (`svc_rdma_sq_wait`, see [`Sq`]). `E2BIG` if the queue cannot hold them at all,
    /// `ENOTCONN` once the connection is closing. Should no entry come back for
    /// [`SQ_WAIT_MS`] while it waits, the client is not taking our Sends: the connection is
    /// closed (counted in `server_sq_timeouts`, debugfs `rpcrdma_rs/versions`), and every
    /// waiter gets `ENOTCONN`.
    pub(super) fn sq_reserve(&self, n: u32) -> Result {
        if n > self.sq_depth {
            return Err(E2BIG);
        }
        let mut sq = self.shared.sq.lock();
        if sq.closed {
            return Err(ENOTCONN);
        }
        // Fast path: nobody waits and the entries are free.
        if !sq.waiters() && sq.avail >= n {
            sq.avail -= n;
            return Ok(());
        }
        // Send Queue starvation: take a ticket and wait in line. Counted once per reservation
        // that has to wait, as svc_rdma_sq_wait's slow path.
        let ticket = sq.head;
        sq.head = sq.head.wrapping_add(1);
        SvcStat::SqStarve.inc();
        trace::svcrdma_sq_full(self.qp.send_cq().id(), sq.avail, self.sq_depth);
        let mut left = msecs_to_jiffies(SQ_WAIT_MS);
        let mut seen = sq.returns;
        let cv = &self.shared.sq_wait;
        loop {
            left = match cv.wait_interruptible_timeout(&mut sq, left) {
                CondVarTimeoutResult::Woken { jiffies } => jiffies,
                CondVarTimeoutResult::Timeout => 0,
                CondVarTimeoutResult::Signal { jiffies } => {
                    drop(sq);
                    fsleep(Delta::from_millis(i64::from(SQ_SIGNAL_POLL_MS)));
                    sq = self.shared.sq.lock();
                    jiffies.saturating_sub(msecs_to_jiffies(SQ_SIGNAL_POLL_MS))
                }
            };
            if sq.closed {
                // Nobody is served any more: the tickets no longer matter.
                return Err(ENOTCONN);
            }
            trace::svcrdma_sq_retry(self.qp.send_cq().id(), sq.avail, self.sq_depth);
            // Exact equality, so the counters may wrap.
            if sq.tail == ticket && sq.avail >= n {
                sq.avail -= n;
                sq.tail = sq.tail.wrapping_add(1);
                drop(sq);
                // The next ticket holder may go now if its entries are free.
                cv.notify_all();
                return Ok(());
            }
            if sq.returns != seen {
                seen = sq.returns;
                left = msecs_to_jiffies(SQ_WAIT_MS);
            } else if left == 0 {
                drop(sq);
                VERS_STATS.sq_timeout();
                pr_warn_peer!(
                    "no Send completed in {} s with the Send Queue full: closing the connection\n",
                    SQ_WAIT_MS / 1000
                );
                // Wakes every waiter, which sees the connection closed.
                self.fail();
                return Err(ENOTCONN);
            }
        }
    }

    /// Traces a chain that could not be posted (`svcrdma_sq_post_err`).
    pub(super) fn sq_post_err(&self, e: Error) {
        let avail = self.shared.sq.lock().avail;
        trace::svcrdma_sq_post_err(self.qp.send_cq().id(), avail, self.sq_depth, e);
    }

    /// Gives back `n` Send Queue entries.
    pub(super) fn sq_release(&self, n: u32) {
        self.shared.sq_release(n);
    }

    /// Takes the oldest received message, if any.
    pub(super) fn dequeue(&self) -> Option<KBox<Wr<Recv>>> {
        let mut q = self.shared.dto.lock();
        if q.is_empty() {
            None
        } else {
            q.remove(0).ok()
        }
    }

    /// Whether received messages wait for [`SvcConn::dequeue`]. The lock orders the check
    /// after a clearing of `XPT_DATA` before it, and before a Receive's queueing after it.
    pub(super) fn has_calls(&self) -> bool {
        !self.shared.dto.lock().is_empty()
    }

    /// Closes the connection after a fatal error.
    pub(super) fn fail(&self) {
        self.shared.close();
    }

    /// `xpo_detach`: disconnect, wake waiters, unlink the transport. If the disconnect would
    /// be a MAD on a port that cannot send, it is left to the deferred teardown (see
    /// [`PORT_DOWN_WAIT_MS`] and [`SvcConn::free`]).
    pub(crate) fn detach(&self, _xprt: &SvcXprt) {
        self.shared.keepalive_stop();
        self.shared.close();
        self.shared.link.clear();
        if !self.id.mad_port_down() {
            // Every posted request is flushed first (see `Qp::set_error`). ENOTCONN-like
            // errors are expected when the peer already left.
            let _ = self.qp.set_error();
            let _ = self.id.disconnect();
        }
    }

    /// `xpo_free` of the connection in `this`: released now, or, if its port cannot send the
    /// disconnect (see [`PORT_DOWN_WAIT_MS`]), handed to a [`DeferredClose`] on `deferred`.
    pub(crate) fn free(this: KBox<SvcRdmaXprt>, deferred: &Queue) {
        let SvcRdmaXprt::Conn(c) = &*this else {
            drop(this);
            return;
        };
        if !c.id.mad_port_down() {
            drop(this);
            return;
        }
        match Arc::pin_init(
            pin_init!(DeferredClose {
                obj: this,
                work <- new_work!("rpcrdma_rs_svc_close"),
            }),
            GFP_KERNEL,
        ) {
            Ok(d) => {
                pr_info!("port down: the connection's teardown waits for it\n");
                let _ = deferred.enqueue(d);
            }
            // The `KBox` went with the failed initializer: the connection is torn down now.
            Err(_) => pr_warn!("no memory to defer a teardown: disconnecting on a down port\n"),
        }
    }

    /// Waits (up to [`PORT_DOWN_WAIT_MS`]) while the connection's port cannot send its
    /// disconnect, unless the device is being removed. May sleep.
    fn wait_port_up(&self) {
        let (waited, down) = self
            .id
            .wait_mad_port_up(PORT_DOWN_WAIT_MS, PORT_POLL_MS, || {
                self.shared.removing.load(Relaxed)
            });
        pr_info!(
            "port was down: disconnected after {} ms{}\n",
            waited,
            if down {
                " (still down: later connections on this port may fail until the device is reset)"
            } else {
                ""
            }
        );
    }

    /// `xpo_has_wspace` (`svc_rdma_has_wspace`): false while threads wait for Send Queue
    /// entries, so that no other thread takes a Call only to wait behind them. Each of those
    /// threads enqueues the transport again when it has sent its reply (sunrpc's
    /// `svc_xprt_release`).
    pub(crate) fn has_wspace(&self) -> bool {
        !self.shared.sq.lock().waiters()
    }
}

/// The rdma_rw contexts of one request's RDMA Reads or Writes, split into chains as they are
/// built. A chain holds at most [`MAX_CHAIN`] contexts, and no more work requests than the Send
/// Queue holds (a context needs one per `max_sge_rd` pages for Reads, `max_send_sge` for Writes,
/// and with MRs a registration and an invalidation too), less, for Writes, one entry for the
/// Send that ends the reply's last chain (any chain may turn out to be the last). The chain so
/// far is posted and waited for when the next context would overflow it ([`Chains::push`]); a
/// context too large for a chain of its own is refused when its chain reserves the Send Queue
/// ([`SvcConn::sq_reserve`], `E2BIG`; for the last Writes, with the Send).
pub(super) struct Chains<'a, 't> {
    /// The connection the chains are posted on.
    conn: &'a SvcConn,
    /// RDMA Reads or RDMA Writes.
    op: Op,
    /// The chain being built.
    ctxs: KVec<Ctx<'a, 't, CmEvents>>,
    /// The work requests of `ctxs`.
    wrs: u32,
}

impl<'a, 't> Chains<'a, 't> {
    /// No context yet, room for `capacity` (at most [`MAX_CHAIN`]) in the first chain.
    pub(super) fn new(conn: &'a SvcConn, op: Op, capacity: usize) -> Result<Self> {
        Ok(Self {
            conn,
            op,
            ctxs: KVec::with_capacity(capacity.min(MAX_CHAIN), GFP_KERNEL)?,
            wrs: 0,
        })
    }

    /// Adds a context for the remote segment (`remote`, `rkey`) over the table `sgt` makes
    /// (counted in `rdma_stat_read` or `rdma_stat_write`). The chain so far is posted and
    /// waited for first if it is full: before the table is made if it holds [`MAX_CHAIN`]
    /// contexts (so that no more exist at once), after if the context's work requests do not
    /// fit with it.
    pub(super) fn push(
        &mut self,
        remote: u64,
        rkey: u32,
        sgt: impl FnOnce() -> Result<SgTable<'t>>,
    ) -> Result {
        if self.ctxs.len() == MAX_CHAIN {
            self.post()?;
        }
        let conn = self.conn;
        let c = Ctx::new(&conn.qp, sgt()?, remote, rkey, self.op)?;
        // Writes keep room for the Send that ends the last chain.
        let keep = match self.op {
            Op::Read => {
                SvcStat::Read.inc();
                0
            }
            Op::Write => {
                SvcStat::Write.inc();
                1
            }
        };
        let fits = self.wrs.saturating_add(c.wrs()).saturating_add(keep) <= conn.sq_depth;
        if !self.ctxs.is_empty() && !fits {
            self.post()?;
        }
        self.wrs = self.wrs.saturating_add(c.wrs());
        self.ctxs.push(c, GFP_KERNEL)?;
        Ok(())
    }

    /// Posts the last chain, if there is one, and waits for it (Reads).
    pub(super) fn post_last(mut self) -> Result {
        if self.ctxs.is_empty() {
            return Ok(());
        }
        self.post()
    }

    /// The last chain, not posted (Writes: it goes ahead of the reply's Send).
    pub(super) fn into_last(self) -> KVec<Ctx<'a, 't, CmEvents>> {
        self.ctxs
    }

    /// Posts the chain built so far (not empty) without a Send, and waits for it. A failed
    /// completion closes the connection, as `svc_rdma_wc_read_done` and `svc_rdma_write_done`
    /// close the transport: the Call cannot be built, or the reply is lost.
    fn post(&mut self) -> Result {
        let conn = self.conn;
        let ctxs = core::mem::take(&mut self.ctxs);
        let wrs = core::mem::take(&mut self.wrs);
        conn.sq_reserve(wrs)?;
        let r = conn.qp.post_rw_wait(ctxs, None);
        conn.sq_release(wrs);
        let wc = r.inspect_err(|e| conn.sq_post_err(*e))?;
        let (kind, what) = match self.op {
            Op::Read => (SvcWc::Read, "Read"),
            Op::Write => (SvcWc::Write, "Write"),
        };
        trace::svcrdma_wc(kind, &wc);
        if !wc.is_success() {
            pr_warn_peer!(
                "RDMA {} failed: status {}, vendor error {:#x}; closing the connection\n",
                what,
                wc.status(),
                wc.vendor_err()
            );
            conn.fail();
            return Err(EIO);
        }
        Ok(())
    }
}

/// The teardown of a connection whose port could not send its disconnect when sunrpc freed it
/// (`xpo_free`): a work item on the server class's workqueue, which the module drains before it
/// goes, waits for the port, disconnects, and releases the connection.
#[pin_data]
pub(crate) struct DeferredClose {
    /// The freed transport (a connection).
    obj: KBox<SvcRdmaXprt>,
    #[pin]
    work: Work<DeferredClose>,
}

impl_has_work! {
    impl HasWork<Self> for DeferredClose { self.work }
}

impl WorkItem for DeferredClose {
    type Pointer = Arc<DeferredClose>;

    fn run(this: Arc<DeferredClose>) {
        if let SvcRdmaXprt::Conn(c) = &*this.obj {
            c.wait_port_up();
            let _ = c.qp.set_error();
            let _ = c.id.disconnect();
        }
        // The last reference: the connection (QP, CQs, PD, cm id) is released here.
        drop(this);
    }
}

impl Drop for SvcConn {
    fn drop(&mut self) {
        // Stopped by `xpo_detach` already, unless the connection never got that far.
        self.shared.keepalive_stop();
        // Every posted request comes back (flushed) and drops its reference on `shared`.
        self.qp.drain();
        // Received messages nobody took hold `shared` too, and so do the idle Send contexts
        // (all of them now: every Send completed).
        let q = core::mem::take(&mut *self.shared.dto.lock());
        drop(q);
        let s = core::mem::take(&mut *self.shared.sends.lock());
        drop(s);
        let r = core::mem::take(&mut *self.shared.recvs.lock());
        drop(r);
    }
}
