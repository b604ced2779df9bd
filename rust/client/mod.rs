// SPDX-License-Identifier: GPL-2.0

//! Client transport logic (the requester side of RPC-over-RDMA).
//!
//! What `mount -o proto=rdma` runs on: [`RpcRdmaXprt`] is the `rpc_xprt` of the `rdma` and
//! `rdma6` netids. A connect worker establishes an [`endpoint::Endpoint`] (rdma_cm, QP,
//! RFC 8797 private data); its [`conn::ClientConn`] carries the calls and replies (RPC-over-RDMA
//! version 1, FRWR registration). Its [`backchannel`] serves the server's backward Calls
//! (RFC 8167: NFSv4.1+ callbacks) with a pool of backward requests that outlives connections.
//! Version 2 will negotiate in the endpoint and marshal in its own `ClientConn` path.
//!
//! # Locking and lifetime
//!
//! A [`RpcRdmaXprt`] is shared (`Arc`) by the `rpc_xprt` and by its connect worker while one is
//! queued or running. sunrpc serializes `connect`, `close` and the start of `destroy` with the
//! transport lock (`XPRT_LOCKED`), which the worker holds as a [`Connect`] until it calls
//! [`Connect::done`]; [`Inner`] (a mutex) records the queued worker and the connection, and
//! `destroy` waits on [`RpcRdmaXprt::idle`] until the worker is finished.

#![forbid(unsafe_code)]

mod backchannel;
mod conn;
mod endpoint;
mod mrs;

pub(crate) use backchannel::BC_STATS;

use kernel::{
    impl_has_delayed_work,
    new_condvar,
    new_delayed_work,
    new_mutex,
    prelude::*,
    sync::{
        atomic::{
            Atomic,
            Relaxed, //
        },
        Arc,
        CondVar,
        Mutex, //
    },
    time::Jiffies,
    workqueue::{
        DelayedWork,
        Queue,
        WorkItem, //
    }, //
};

use crate::{
    proto::{
        self,
        negotiate::PeerMemory,
        private_data::Inline, //
    },
    rdma::{
        mr::page_size,
        ratelimit::pr_info_peer,
        verbs::Wr, //
    },
    sunrpc::{
        sysctl,
        xprt::{
            self,
            BcRqst,
            Connect,
            CreateArgs,
            RpcRqst,
            RpcXprt,
            RpcXprtLink,
            Stats, //
        },
    },
    trace,
};
use backchannel::{
    BcPool,
    Reason,
    BC_MAX_REQUESTS, //
};
use conn::{
    ClientConn,
    Counters,
    RecvCtx, //
};
use endpoint::{
    Endpoint,
    FailureLog, //
};

/// The client's messages by RPC-over-RDMA version (debugfs `rpcrdma_rs/versions`).
pub(crate) struct VersStats {
    /// Calls sent in version 1 (each transmission).
    calls_v1: Atomic<u64>,
    /// Calls sent in version 2 (each transmission).
    calls_v2: Atomic<u64>,
    /// Replies received in version 1 (matched to a call).
    replies_v1: Atomic<u64>,
    /// Replies received in version 2 (matched to a call).
    replies_v2: Atomic<u64>,
    /// Connections on which version 2 was offered.
    offers_v2: Atomic<u64>,
    /// Connections settled on version 1.
    conns_v1: Atomic<u64>,
    /// Connections settled on version 2.
    conns_v2: Atomic<u64>,
    /// `ERR_VERS` answers to a version 2 offer that made the client fall back to version 1
    /// and send the call again on the same connection.
    fallbacks: Atomic<u64>,
    /// Connections that started at version 1 because the server was known to lack version 2.
    remembered: Atomic<u64>,
    /// Version 2 calls that named a handle in `rdma_inv_handle`.
    inv_handles: Atomic<u64>,
    /// Version 2 replies whose Send invalidated the handle the call named.
    reminv_v2: Atomic<u64>,
    /// `RDMA2_CONNPROP`s sent.
    connprops_sent: Atomic<u64>,
    /// `RDMA2_CONNPROP`s received and applied.
    connprops_received: Atomic<u64>,
    /// `RDMA2_CONNPROP`s received and dropped (invalid, or a value we cannot honour).
    connprops_bad: Atomic<u64>,
    /// Credit refreshes received (applied).
    refreshes: Atomic<u64>,
    /// Backward Calls received in version 2.
    backward_v2: Atomic<u64>,
    /// Credit refreshes sent (keep-alive).
    refreshes_sent: Atomic<u64>,
    /// Connections declared dead by the keep-alive (the server silent).
    keepalive_dead: Atomic<u64>,
    /// Connections closed because their port's link went down and came back.
    port_reconnects: Atomic<u64>,
    /// Calls sent again after an `RDMA2_ERROR`, as the draft asks.
    retries: Atomic<u64>,
    /// Times the resend worker left a call short of room waiting for it on its connection.
    resend_parks: Atomic<u64>,
    /// Continued replies reassembled.
    continued: Atomic<u64>,
    /// Messages of those replies (all of each sequence).
    continued_msgs: Atomic<u64>,
    /// Messages dropped for breaking message continuation's rules.
    continuation_dropped: Atomic<u64>,
    /// Calls sent continued (`F_MORE`), without a chunk.
    sent_continued: Atomic<u64>,
    /// Messages of those calls (all of each sequence).
    sent_continued_msgs: Atomic<u64>,
    /// Calls whose reply was asked to come continued, with Receives kept for it.
    continued_asked: Atomic<u64>,
    /// Calls whose reply would have come continued but the Receives kept for continued
    /// replies were all taken: it came in a chunk.
    continued_short: Atomic<u64>,
}

impl VersStats {
    const fn new() -> Self {
        Self {
            calls_v1: Atomic::new(0),
            calls_v2: Atomic::new(0),
            replies_v1: Atomic::new(0),
            replies_v2: Atomic::new(0),
            offers_v2: Atomic::new(0),
            conns_v1: Atomic::new(0),
            conns_v2: Atomic::new(0),
            fallbacks: Atomic::new(0),
            remembered: Atomic::new(0),
            inv_handles: Atomic::new(0),
            reminv_v2: Atomic::new(0),
            connprops_sent: Atomic::new(0),
            connprops_received: Atomic::new(0),
            connprops_bad: Atomic::new(0),
            refreshes: Atomic::new(0),
            backward_v2: Atomic::new(0),
            refreshes_sent: Atomic::new(0),
            keepalive_dead: Atomic::new(0),
            port_reconnects: Atomic::new(0),
            retries: Atomic::new(0),
            resend_parks: Atomic::new(0),
            continued: Atomic::new(0),
            continued_msgs: Atomic::new(0),
            continuation_dropped: Atomic::new(0),
            sent_continued: Atomic::new(0),
            sent_continued_msgs: Atomic::new(0),
            continued_asked: Atomic::new(0),
            continued_short: Atomic::new(0),
        }
    }

    fn pick<'a>(vers: u32, v1: &'a Atomic<u64>, v2: &'a Atomic<u64>) -> &'a Atomic<u64> {
        if vers == 2 {
            v2
        } else {
            v1
        }
    }

    /// Counts a call sent in version `vers`.
    pub(crate) fn call(&self, vers: u32) {
        Self::pick(vers, &self.calls_v1, &self.calls_v2).add(1, Relaxed);
    }

    /// Counts a reply received in version `vers`.
    pub(crate) fn reply(&self, vers: u32) {
        Self::pick(vers, &self.replies_v1, &self.replies_v2).add(1, Relaxed);
    }

    /// Counts a connection settled on version `vers`.
    pub(crate) fn settled(&self, vers: u32) {
        Self::pick(vers, &self.conns_v1, &self.conns_v2).add(1, Relaxed);
    }

    /// Counts a connection on which version 2 is offered.
    pub(crate) fn offer(&self) {
        self.offers_v2.add(1, Relaxed);
    }

    /// Counts a fall back to version 1 after `ERR_VERS`.
    pub(crate) fn fallback(&self) {
        self.fallbacks.add(1, Relaxed);
    }

    /// Counts a connection started at version 1 from what is known about the server.
    pub(crate) fn remembered(&self) {
        self.remembered.add(1, Relaxed);
    }

    /// Counts a version 2 call naming a handle to invalidate.
    pub(crate) fn inv_handle(&self) {
        self.inv_handles.add(1, Relaxed);
    }

    /// Counts a version 2 reply that invalidated the handle its call named.
    pub(crate) fn reminv_v2(&self) {
        self.reminv_v2.add(1, Relaxed);
    }

    /// Counts an `RDMA2_CONNPROP` sent.
    pub(crate) fn connprop_sent(&self) {
        self.connprops_sent.add(1, Relaxed);
    }

    /// Counts an `RDMA2_CONNPROP` received: applied if `ok`, dropped otherwise.
    pub(crate) fn connprop_received(&self, ok: bool) {
        if ok {
            self.connprops_received.add(1, Relaxed);
        } else {
            self.connprops_bad.add(1, Relaxed);
        }
    }

    /// Counts a backward Call received in version 2.
    pub(crate) fn backward_v2(&self) {
        self.backward_v2.add(1, Relaxed);
    }

    /// Counts a continued reply of `msgs` messages, reassembled.
    pub(crate) fn continued(&self, msgs: u32) {
        self.continued.add(1, Relaxed);
        self.continued_msgs.add(u64::from(msgs), Relaxed);
    }

    /// Counts a call of `msgs` messages, sent continued.
    pub(crate) fn sent_continued(&self, msgs: u32) {
        self.sent_continued.add(1, Relaxed);
        self.sent_continued_msgs.add(u64::from(msgs), Relaxed);
    }

    /// Counts a call whose reply was asked to come continued.
    pub(crate) fn continued_asked(&self) {
        self.continued_asked.add(1, Relaxed);
    }

    /// Counts a call whose reply could not come continued for want of Receives.
    pub(crate) fn continued_short(&self) {
        self.continued_short.add(1, Relaxed);
    }

    /// Counts a message dropped for breaking message continuation's rules.
    pub(crate) fn continuation_dropped(&self) {
        self.continuation_dropped.add(1, Relaxed);
    }

    /// Counts a call to send again after an `RDMA2_ERROR`.
    pub(crate) fn retry(&self) {
        self.retries.add(1, Relaxed);
    }

    /// Counts a call the resend worker left waiting for room.
    pub(crate) fn resend_parked(&self) {
        self.resend_parks.add(1, Relaxed);
    }

    /// Counts a credit refresh sent.
    pub(crate) fn refresh_sent(&self) {
        self.refreshes_sent.add(1, Relaxed);
    }

    /// Counts a connection declared dead by the keep-alive.
    pub(crate) fn keepalive_dead(&self) {
        self.keepalive_dead.add(1, Relaxed);
    }

    /// Counts a connection closed because its port's link went down and came back.
    pub(crate) fn port_reconnect(&self) {
        self.port_reconnects.add(1, Relaxed);
    }

    /// Counts a credit refresh received.
    pub(crate) fn refresh(&self) {
        self.refreshes.add(1, Relaxed);
    }

    /// Writes one `client_<name> <value>` line per counter.
    pub(crate) fn write(&self, f: &mut kernel::fmt::Formatter<'_>) -> kernel::fmt::Result {
        for (name, c) in [
            ("calls_v1", &self.calls_v1),
            ("calls_v2", &self.calls_v2),
            ("replies_v1", &self.replies_v1),
            ("replies_v2", &self.replies_v2),
            ("offers_v2", &self.offers_v2),
            ("conns_v1", &self.conns_v1),
            ("conns_v2", &self.conns_v2),
            ("fallbacks", &self.fallbacks),
            ("remembered", &self.remembered),
            ("inv_handles", &self.inv_handles),
            ("reminv_v2", &self.reminv_v2),
            ("connprops_sent", &self.connprops_sent),
            ("connprops_received", &self.connprops_received),
            ("connprops_bad", &self.connprops_bad),
            ("refreshes", &self.refreshes),
            ("backward_v2", &self.backward_v2),
            ("refreshes_sent", &self.refreshes_sent),
            ("keepalive_dead", &self.keepalive_dead),
            ("port_reconnects", &self.port_reconnects),
            ("retries", &self.retries),
            ("resend_parks", &self.resend_parks),
            ("continued", &self.continued),
            ("continued_msgs", &self.continued_msgs),
            ("continuation_dropped", &self.continuation_dropped),
            ("sent_continued", &self.sent_continued),
            ("sent_continued_msgs", &self.sent_continued_msgs),
            ("continued_asked", &self.continued_asked),
            ("continued_short", &self.continued_short),
        ] {
            writeln!(f, "client_{name} {}", c.load(Relaxed))?;
        }
        Ok(())
    }
}

/// The module's client version counters.
pub(crate) static VERS_STATS: VersStats = VersStats::new();

/// Fault injection, debugfs `rpcrdma_rs/fail_local_inv`: how many of the next LOCAL_INV chains
/// fail as if their work request could not be allocated. Each one closes its connection, which
/// is what the client must survive when memory runs out there (see `ClientConn::post_inv`).
pub(crate) static FAIL_LOCAL_INV: Atomic<u32> = Atomic::new(0);

/// Consumes one injected LOCAL_INV failure of [`FAIL_LOCAL_INV`], if any is pending.
pub(crate) fn inject_local_inv_failure() -> bool {
    take_one(&FAIL_LOCAL_INV)
}

/// Fault injection, debugfs `rpcrdma_rs/fail_retry_send`: how many of the next transmissions
/// of calls sent again after an `RDMA2_ERROR` find no Send buffer, as if a concurrent send held
/// the last one and gave it back once the resend worker parked the call; the call must still go
/// as the draft's retry asks, on its connection (see `ClientConn::transmit`).
pub(crate) static FAIL_RETRY_SEND: Atomic<u32> = Atomic::new(0);

/// Consumes one injected failure of [`FAIL_RETRY_SEND`], if any is pending.
pub(crate) fn inject_retry_failure() -> bool {
    take_one(&FAIL_RETRY_SEND)
}

/// Consumes one of the injections `knob` counts, if any is pending.
fn take_one(knob: &Atomic<u32>) -> bool {
    let mut n = knob.load(Relaxed);
    while n > 0 {
        match knob.cmpxchg(n, n - 1, Relaxed) {
            Ok(_) => return true,
            Err(cur) => n = cur,
        }
    }
    false
}

/// Test knob, debugfs `rpcrdma_rs/client_mrs`: when not zero, the size of the MR pool of the
/// next connections (raised to the minimum one call may need), instead of the size the device
/// and the slot table give. A small pool makes sends wait for MRs (see `ClientConn::send`).
pub(crate) static POOL_MRS: Atomic<u32> = Atomic::new(0);

/// Client objects live, by kind, for the diagnosis of a leak at unload ([`warn_live`]): the
/// RDMA object counters tell that something leaked, these tell which owner did.
pub(crate) static LIVE_ENDPOINTS: Atomic<i64> = Atomic::new(0);
/// Connections live ([`ClientConn`]).
pub(crate) static LIVE_CONNS: Atomic<i64> = Atomic::new(0);
/// Connections live that were never shut down (their QP never drained).
pub(crate) static LIVE_UNSHUT: Atomic<i64> = Atomic::new(0);

/// One object counted in one of the `LIVE_*` counters while it exists.
pub(crate) struct Live(&'static Atomic<i64>);

impl Live {
    /// Counts one more object in `c`, until the token is dropped.
    pub(crate) fn new(c: &'static Atomic<i64>) -> Self {
        c.fetch_add(1, Relaxed);
        Self(c)
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

/// Logs the client objects still live, if any (at unload, after the transports are gone).
pub(crate) fn warn_live() {
    let (e, c, u) = (
        LIVE_ENDPOINTS.load(Relaxed),
        LIVE_CONNS.load(Relaxed),
        LIVE_UNSHUT.load(Relaxed),
    );
    if e != 0 || c != 0 || u != 0 {
        pr_warn!(
            "client objects still live: {} endpoints, {} connections ({} never shut down)\n",
            e,
            c,
            u
        );
    }
}

/// The mutable state of a [`RpcRdmaXprt`].
struct Inner {
    /// The connect lock, from `connect` until the worker takes it.
    pending: Option<Connect>,
    /// A connect worker is queued or running.
    busy: bool,
    /// The connection, from a successful connect until `close`.
    ep: Option<Endpoint>,
    /// The data path of a connection being torn down, until its QP is drained.
    draining: Option<Arc<ClientConn>>,
    /// The failures of consecutive connect attempts, for the log.
    failures: FailureLog,
    /// What earlier connections taught about the server's versions.
    peer: PeerMemory,
}

/// The RPC-over-RDMA client transport of one `rpc_xprt`.
#[pin_data]
pub(crate) struct RpcRdmaXprt {
    link: RpcXprtLink,
    counters: Arc<Counters>,
    /// The backward requests, kept across reconnects.
    bc: Arc<BcPool>,
    /// `bc_maxpayload` of the connection, 0 while there is none: read without a sleeping
    /// lock, as sunrpc asks under `rcu_read_lock` (`rpc_max_bc_payload`).
    bc_maxpayload: Atomic<u32>,
    #[pin]
    work: DelayedWork<RpcRdmaXprt>,
    #[pin]
    inner: Mutex<Inner>,
    /// Signalled when `busy` becomes false.
    #[pin]
    idle: CondVar,
}

impl_has_delayed_work! {
    impl HasDelayedWork<Self> for RpcRdmaXprt { self.work }
}

impl WorkItem for RpcRdmaXprt {
    type Pointer = Arc<RpcRdmaXprt>;

    fn run(this: Arc<RpcRdmaXprt>) {
        let (pending, old) = {
            let mut g = this.inner.lock();
            (g.pending.take(), g.ep.take())
        };
        // sunrpc closes a transport before reconnecting it; drop a leftover endpoint anyway.
        drop(old);
        if let Some(connect) = pending {
            let mut failures = this.inner.lock().failures;
            let r = Endpoint::connect(
                &this.link,
                connect.xprt(),
                (&this.counters, &this.bc),
                &mut failures,
            );
            this.inner.lock().failures = failures;
            match r {
                Ok(ep) => {
                    // Before sunrpc may send the first call.
                    let peer = this.inner.lock().peer;
                    ep.conn().negotiate(peer);
                    // Once the connection knows which versions it may settle on.
                    this.bc_maxpayload.store(ep.conn().bc_maxpayload(), Relaxed);
                    // Stored before the lock is released: `close` can only run after that.
                    this.inner.lock().ep = Some(ep);
                    connect.done(Ok(()));
                }
                Err(e) => connect.done(Err(e)),
            }
        }
        let mut g = this.inner.lock();
        g.busy = false;
        drop(g);
        this.idle.notify_all();
    }
}

impl RpcRdmaXprt {
    /// Takes the connection away and tears it down.
    fn disconnect(&self) {
        self.bc_maxpayload.store(0, Relaxed);
        let ep = {
            let mut g = self.inner.lock();
            let ep = g.ep.take();
            if let Some(p) = ep.as_ref().and_then(|e| e.conn().lost()) {
                g.peer = p;
            }
            // `buf_free` must still find it until its QP is drained.
            g.draining = ep.as_ref().map(|e| e.conn().clone());
            ep
        };
        drop(ep);
        self.inner.lock().draining = None;
    }

    /// The data path of the connection, or of the one being torn down.
    fn conn(&self) -> Option<Arc<ClientConn>> {
        let g = self.inner.lock();
        g.ep.as_ref()
            .map(|e| e.conn().clone())
            .or_else(|| g.draining.clone())
    }
}

impl xprt::RpcXprtOps for RpcRdmaXprt {
    fn setup(args: &CreateArgs<'_>, link: &RpcXprtLink) -> Result<Arc<Self>> {
        if let xprt::Family::Other(f) = args.family() {
            pr_warn!("cannot reach a server of address family {}\n", f);
            return Err(EAFNOSUPPORT);
        }
        Arc::pin_init(
            try_pin_init!(Self {
                link: link.clone(),
                counters: Arc::new(Counters::new(), GFP_KERNEL)?,
                bc: Arc::pin_init(BcPool::new()?, GFP_KERNEL)?,
                bc_maxpayload: Atomic::new(0),
                work <- new_delayed_work!("rpcrdma_rs_connect"),
                inner <- new_mutex!(Inner {
                    pending: None,
                    busy: false,
                    ep: None,
                    draining: None,
                    failures: FailureLog::default(),
                    peer: PeerMemory::new(),
                }),
                idle <- new_condvar!("rpcrdma_rs_connect_idle"),
            }),
            GFP_KERNEL,
        )
    }

    fn connect(this: &Arc<Self>, connect: Connect, queue: &Queue, delay: Jiffies) {
        trace::xprtrdma_op_connect(connect.xprt(), delay);
        {
            let mut g = this.inner.lock();
            // The worker hands the connect lock back (`Connect::done`) just before it clears
            // `busy`, and a task it woke may ask again at once: wait for it to finish (EBUSY
            // would fail the RPC, even on a hard mount: `call_connect_status`).
            while g.busy {
                this.idle.wait(&mut g);
            }
            g.pending = Some(connect);
            g.busy = true;
        }
        if queue.enqueue_delayed(this.clone(), delay).is_err() {
            let mut g = this.inner.lock();
            let connect = g.pending.take();
            g.busy = false;
            drop(g);
            pr_err!("could not queue the connect worker\n");
            if let Some(c) = connect {
                c.done(Err(EBUSY));
            }
        }
    }

    fn close(&self) {
        self.disconnect();
    }

    fn destroy(this: Arc<Self>) {
        let mut g = this.inner.lock();
        while g.busy {
            this.idle.wait(&mut g);
        }
        drop(g);
        this.disconnect();
    }

    fn send_request(&self, rqst: &RpcRqst) -> Result {
        let conn = self.inner.lock().ep.as_ref().map(|e| e.conn().clone());
        ClientConn::send(&conn.ok_or(ENOTCONN)?, rqst)
    }

    fn buf_free(&self, rqst: &RpcRqst) {
        if let Some(conn) = self.conn() {
            ClientConn::release(&conn, rqst);
        }
    }

    fn stats(&self) -> Stats {
        self.counters.snapshot()
    }

    fn timer(&self) {
        self.link.force_disconnect();
    }

    fn inject_disconnect(&self) {
        if let Some(ep) = self.inner.lock().ep.as_ref() {
            ep.inject_disconnect();
        }
    }

    type BcRecv = RecvCtx;

    fn bc_setup(this: &Arc<Self>, xprt: &RpcXprt, reqs: u32) -> Result {
        this.bc.setup(xprt, reqs)
    }

    fn bc_maxpayload(&self) -> usize {
        let max = match self.bc_maxpayload.load(Relaxed) {
            0 => {
                // What the next connection offers, before the server may lower it.
                let tun = sysctl::Client::get();
                let ours = Inline {
                    send: tun.max_inline_write,
                    recv: tun.max_inline_read,
                }
                .advertised();
                proto::backchannel::max_payload(ours.send, ours.recv, page_size())
            }
            max => max,
        };
        max as usize
    }

    fn bc_num_slots(&self) -> u32 {
        // Every connection provisions its Receives and Send buffers for this many.
        BC_MAX_REQUESTS
    }

    fn bc_send_reply(&self, rqst: &RpcRqst, recv: &Wr<RecvCtx>) -> Result {
        let conn = self.inner.lock().ep.as_ref().map(|e| e.conn().clone());
        let conn = conn.ok_or(ENOTCONN)?;
        if !Arc::ptr_eq(&conn, recv.data().conn()) {
            // The Call came in on a connection that is gone: the server's callback client
            // of that connection is gone too, and it sends the Call again on this one.
            BC_STATS.dropped(Reason::StaleReply);
            pr_info_peer!(
                "xid {:08x}: backward reply dropped: its call came on a previous connection\n",
                rqst.info().xid
            );
            return Ok(());
        }
        ClientConn::bc_send_reply(&conn, rqst)
    }

    fn bc_free_rqst(&self, rqst: BcRqst<Self>, recv: KBox<Wr<RecvCtx>>) {
        self.bc.put(rqst);
        // As `xprt_rdma_bc_free_rqst`: the Receive goes back to its connection's queue (a
        // connection closing since drops it).
        let conn = recv.data().conn().clone();
        ClientConn::repost(&conn, recv);
    }

    fn bc_destroy(&self, reqs: u32) {
        self.bc.destroy(reqs);
    }
}
