// SPDX-License-Identifier: GPL-2.0

//! One RDMA connection of the client transport (the C client's `struct rpcrdma_ep`).
//!
//! [`Endpoint::connect`] runs in the connect worker and does what `rpcrdma_xprt_connect` does:
//! a cm id, address and route resolution, a PD, two CQs and a QP sized from the device (and
//! from the memory registration depth, as `frwr_query_device`), the data path ([`ClientConn`]) with
//! its buffers, MRs and Receives, `rdma_connect` with our RFC 8797 private data, and the wait
//! for the outcome. rdma_cm events arrive on [`CmEvents`], which maps them as
//! `rpcrdma_cm_event_handler` does: failures become the connect's errno, and a disconnect (or
//! device removal, or address change) once connected forces sunrpc to close the transport.
//!
//! Device removal reaches an endpoint first through the module's `ib_client`: once the device
//! is known (after route resolution) the endpoint holds a [`Notification`] on it, whose
//! [`Removal`] handler fails a pending connect or forces the transport closed, as
//! `rpcrdma_ep_removal_done`; the device's removal waits until the endpoint is dropped, which
//! unregisters the notification after the QP, CQs and PD are gone. The cm id's own
//! `DEVICE_REMOVAL` event, which rdma_cm delivers after our client's callback, is handled the
//! same way, for ids the notification did not cover.

#![forbid(unsafe_code)]

use core::sync::atomic::{
    AtomicBool,
    Ordering, //
};
use kernel::{
    new_spinlock,
    prelude::*,
    sync::{
        Arc,
        Completion,
        SpinLock, //
    }, //
};

use super::{
    backchannel::{
        BcPool,
        BC_MAX_REQUESTS, //
    },
    conn::{
        ClientConn,
        Counters,
        LogLevel,
        CONT_RECVS, //
    },
    VERS_STATS,
};
use crate::{
    proto::{
        credits, marshal,
        private_data::{
            self,
            Inline,
            Negotiated,
            PrivateData, //
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
            Net,
            SockAddr,
            IB_CM_REJ_STALE_CONN, //
        },
        mr::page_size,
        ratelimit::pr_info_peer,
        removal::{
            Notification,
            RemovalHandler, //
        },
        verbs::{
            Cq,
            Pd,
            Qp,
            QpCaps,
            MAX_CHAIN, //
        },
    },
    sunrpc::{
        sysctl,
        xprt::{
            RpcXprt, //
            RpcXprtLink,
        }, //
    }, //
    trace,
};

/// Address and route resolution timeout (`RDMA_RESOLVE_TIMEOUT`), in milliseconds.
const RESOLVE_TIMEOUT_MS: u32 = 5000;
/// SGEs per Send: the call is always copied into one Send buffer.
const MAX_SEND_SGES: u32 = 1;
/// Send Queue entries one request may use: its Send, a REG_MR and a LOCAL_INV per MR.
const WRS_PER_REQUEST: u32 = 1 + 2 * MAX_CHAIN as u32;
/// How long closing a connection waits for its port to come back if the disconnect would be
/// sent on a port whose link is down. The IB CM sends the disconnect (DREQ) as a MAD on the
/// port's GSI QP (QP1), also when the cm id is destroyed, and rxe moves a QP to the error state
/// when a transmit fails (`rxe_requester` calls `rxe_qp_error` whatever the QP type): one MAD
/// sent while the link is down kills QP1, and with it every later connect on that device (the
/// REQ never leaves, each attempt ends UNREACHABLE after the CM's ~80 s of retries) until the
/// device is re-created. The C client has the same exposure. A link that comes back within
/// this time gets our DREQ on a live port; a removed device is not waited for.
const PORT_DOWN_WAIT_MS: u32 = 30_000;
/// How often the port's state is checked meanwhile.
const PORT_POLL_MS: u32 = 100;

/// Why a connect attempt failed: the errno sunrpc gets, and for the log the step and the
/// status rdma_cm or the verbs layer reported.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Failure {
    /// The errno of the attempt, mapped as `rpcrdma_cm_event_handler` does.
    pub(crate) err: Error,
    /// The step that failed.
    what: &'static str,
    /// The event's status (a -errno, or a reject reason), or the step's errno.
    status: i32,
}

impl Failure {
    /// A failure reported by an rdma_cm event.
    fn event(err: Error, what: &'static str, status: i32) -> Self {
        Self { err, what, status }
    }
}

/// The failures of consecutive connect attempts, for the log: sunrpc retries every few seconds
/// while a server is unreachable, so a repeated reason is logged on its 2nd, 4th, 8th, ...
/// occurrence only, with the count.
#[derive(Clone, Copy, Default)]
pub(crate) struct FailureLog {
    /// The step and status of the last failure, `None` after a success.
    last: Option<(&'static str, i32)>,
    /// Consecutive failures for that same reason.
    repeats: u32,
}

impl FailureLog {
    /// Records a failure; returns how many times in a row it happened if it should be logged.
    fn record(&mut self, f: &Failure) -> Option<u32> {
        if self.last == Some((f.what, f.status)) {
            self.repeats = self.repeats.saturating_add(1);
        } else {
            self.last = Some((f.what, f.status));
            self.repeats = 1;
        }
        self.repeats.is_power_of_two().then_some(self.repeats)
    }
}

/// Attaches the failing step to an error of the verbs or cm layer.
trait Step<T> {
    /// This result, its error as a [`Failure`] of step `what`.
    fn step(self, what: &'static str) -> core::result::Result<T, Failure>;
}

impl<T> Step<T> for Result<T> {
    fn step(self, what: &'static str) -> core::result::Result<T, Failure> {
        self.map_err(|err| Failure {
            err,
            what,
            status: err.to_errno(),
        })
    }
}

/// Where the connection stands, as the cm events report it.
#[derive(Clone, Copy)]
enum State {
    /// Connecting.
    Pending,
    /// `ESTABLISHED`, with the server's private data if it sent a valid one.
    Established(Option<PrivateData>),
    /// A connect error, or the end of the connection.
    Failed(Failure),
}

/// What the cm event handler shares with the connect worker.
#[pin_data]
struct Events {
    /// Address resolution ended.
    #[pin]
    addr: Completion,
    /// Route resolution ended.
    #[pin]
    route: Completion,
    /// The connect request ended (`state` left [`State::Pending`]).
    #[pin]
    conn: Completion,
    /// The result of address, then route resolution, written before their completion.
    #[pin]
    resolve: SpinLock<core::result::Result<(), Failure>>,
    #[pin]
    state: SpinLock<State>,
    /// The transport, to close it when an established connection ends.
    link: RpcXprtLink,
    /// The connection's device is being removed (nothing to wait for any more).
    removing: AtomicBool,
    /// The connection's port went down (`IB_EVENT_PORT_ERR`) while it was established, and
    /// has not come back since.
    port_down: AtomicBool,
    /// The level of the connection's lines (see [`Counters::conn_log`]), shared with its
    /// data path.
    log: Arc<LogLevel>,
}

/// ", N connections not logged" after a connection's line, when the per-transport limit
/// (see [`Counters::conn_log`]) held back some since the last one; nothing otherwise.
struct NotLogged(u32);

impl kernel::fmt::Display for NotLogged {
    fn fmt(&self, f: &mut kernel::fmt::Formatter<'_>) -> kernel::fmt::Result {
        match self.0 {
            0 => Ok(()),
            n => write!(f, " ({n} connections before this one not logged)"),
        }
    }
}

/// The cm event handler of a client connection.
pub(crate) struct CmEvents {
    ev: Arc<Events>,
}

impl Events {
    /// A connect failure, or the end of an established connection. Does not sleep.
    fn failed(&self, f: Failure) {
        let was = core::mem::replace(&mut *self.state.lock(), State::Failed(f));
        match was {
            State::Pending => self.conn.complete_all(),
            // Connected: sunrpc closes the transport (and our endpoint) and reconnects.
            State::Established(_) => {
                if self.log.loud() {
                    pr_info_peer!("connection lost: {} {}\n", f.what, f.status);
                } else {
                    pr_debug!("connection lost: {} {}\n", f.what, f.status);
                }
                self.link.force_disconnect();
            }
            State::Failed(_) => {}
        }
    }

    /// An event that fails a pending connect but does not end an established connection:
    /// `UNREACHABLE` (rdma_cm also reports it on a connected id when the peer's neighbour
    /// entry changes, e.g. while the link is down), `CONNECT_ERROR` and `REJECTED`. As
    /// `rpcrdma_cm_event_handler`, a connection outlives it: if the peer is really gone its QP
    /// fails (retries exhausted, flushed) and that closes the transport, otherwise (a link
    /// down for a few seconds) the connection carries on without a reconnect. Does not sleep.
    fn connect_failed(&self, f: Failure) {
        let mut s = self.state.lock();
        match *s {
            State::Pending => {
                *s = State::Failed(f);
                drop(s);
                self.conn.complete_all();
            }
            State::Established(_) => {
                drop(s);
                pr_debug!(
                    "{} {} while connected: the connection stays\n",
                    f.what,
                    f.status
                );
            }
            State::Failed(_) => {}
        }
    }
}

impl Events {
    /// The connection's port came back (`IB_EVENT_PORT_ACTIVE`) after its link went down while
    /// the connection was established: close it, so that sunrpc reconnects and sends again
    /// what is outstanding. Either end may have lost the connection meanwhile without the
    /// other hearing of it: over RoCE the server's QP runs out of retries toward a client
    /// whose link is down, and its disconnect (a MAD) is lost too. The client's calls were
    /// sent, so only the RPC timeout would notice (a minute and more with NFS's `timeo`), and
    /// an idle mount not at all until its next call. The C client has no such check. Does not
    /// sleep.
    fn port_back(&self, peer: &SockAddr) {
        let mut s = self.state.lock();
        if !matches!(*s, State::Established(_)) {
            return;
        }
        *s = State::Failed(Failure::event(ECONNABORTED, "link down and up", 0));
        drop(s);
        VERS_STATS.port_reconnect();
        pr_info_peer!(
            "link down and up: closing the connection to {} to resynchronize\n",
            peer.host()
        );
        self.link.force_disconnect();
    }
}

impl CmEvents {
    fn resolved(&self, c: &Completion, r: core::result::Result<(), Failure>) {
        *self.ev.resolve.lock() = r;
        c.complete_all();
    }

    /// A connect failure, or the end of an established connection.
    fn failed(&self, f: Failure) {
        self.ev.failed(f);
    }

    /// A connect failure that leaves an established connection up.
    fn connect_failed(&self, f: Failure) {
        self.ev.connect_failed(f);
    }
}

/// The device removal handler of a client connection (`rpcrdma_ep_removal_done`), called by
/// the module's `ib_client` when the connection's device is being removed, or when a port of
/// it changes link state.
struct Removal {
    ev: Arc<Events>,
    peer: SockAddr,
    /// The connection's port on the device.
    port: u32,
}

impl RemovalHandler for Removal {
    fn device_removed(&self) {
        pr_info!(
            "device removal (ib_client): closing the connection to {}\n",
            self.peer.host()
        );
        // A pending connect fails; an established connection is closed by sunrpc, which drops
        // the endpoint and so this notification. Either way removal waits for that.
        self.ev.removing.store(true, Ordering::Relaxed);
        self.ev
            .failed(Failure::event(ENODEV, "device removal (ib_client)", 0));
    }

    fn port_changed(&self, port: u32, active: bool) {
        if port != self.port {
            return;
        }
        if !active {
            if matches!(*self.ev.state.lock(), State::Established(_)) {
                self.ev.port_down.store(true, Ordering::Relaxed);
            }
        } else if self.ev.port_down.swap(false, Ordering::Relaxed) {
            self.ev.port_back(&self.peer);
        }
    }
}

impl Handler for CmEvents {
    type Conn = Self;

    fn addr_resolved(&self) {
        self.resolved(&self.ev.addr, Ok(()));
    }

    fn addr_error(&self, err: Error) {
        let f = Failure::event(EPROTO, "address resolution", err.to_errno());
        self.resolved(&self.ev.addr, Err(f));
    }

    fn route_resolved(&self) {
        self.resolved(&self.ev.route, Ok(()));
    }

    fn route_error(&self, err: Error) {
        let f = Failure::event(ENETUNREACH, "route resolution", err.to_errno());
        self.resolved(&self.ev.route, Err(f));
    }

    fn established(&self, pd: &[u8]) {
        let mut s = self.ev.state.lock();
        if matches!(*s, State::Pending) {
            *s = State::Established(PrivateData::decode(pd));
            drop(s);
            self.ev.conn.complete_all();
        }
    }

    fn connect_error(&self, err: Error) {
        self.connect_failed(Failure::event(ENOTCONN, "connect error", err.to_errno()));
    }

    fn unreachable(&self, err: Error) {
        self.connect_failed(Failure::event(ENETUNREACH, "unreachable", err.to_errno()));
    }

    fn rejected(&self, reason: i32, _pd: &[u8]) {
        let err = if reason == IB_CM_REJ_STALE_CONN {
            ENOTCONN
        } else {
            ECONNREFUSED
        };
        self.connect_failed(Failure::event(err, "rejected, reason", reason));
    }

    fn disconnected(&self) {
        self.failed(Failure::event(ECONNABORTED, "disconnected", 0));
    }

    fn device_removal(&self) {
        self.ev.removing.store(true, Ordering::Relaxed);
        let f = Failure::event(ENODEV, "device removal", 0);
        // A resolution in progress: rdma_cm reports nothing more for an id whose device goes
        // (cma_work_handler drops the event), and the connect worker waits for one. The
        // worker reads the result after each wait, so a resolution that ended already fails
        // too, if it had not read it yet, which is right.
        self.resolved(&self.ev.addr, Err(f));
        self.resolved(&self.ev.route, Err(f));
        self.failed(f);
    }

    fn addr_change(&self) {
        self.failed(Failure::event(ENODEV, "address change", 0));
    }
}

/// A connected endpoint. Dropping it disconnects and destroys the QP, CQs, PD and cm id.
pub(crate) struct Endpoint {
    /// The data path, with the QP. Fields drop in order: the connection (its QP drained, then
    /// destroyed with its CQs, MRs and PD) first, then the cm id.
    conn: Arc<ClientConn>,
    /// The cm id.
    id: Id<CmEvents>,
    /// Shared with the id's event handler.
    ev: Arc<Events>,
    /// Inline thresholds and remote invalidation of this connection.
    negotiated: Negotiated,
    /// The server's address (for the tracepoints).
    peer: SockAddr,
    /// The removal notification on the connection's device; unregistered last, once the QP,
    /// CQs and PD are gone (unless in-flight requests still hold the [`ClientConn`]).
    _removal: Notification<Removal>,
    /// Counted in [`super::LIVE_ENDPOINTS`].
    _live: super::Live,
}

impl Endpoint {
    /// Connects to the server of `xprt`; the error is the errno sunrpc sees. Logs the outcome
    /// (repeated failures sparsely, see [`FailureLog`]). May sleep for the whole connection
    /// setup.
    pub(crate) fn connect(
        link: &RpcXprtLink,
        xprt: &RpcXprt,
        shared: (&Arc<Counters>, &Arc<BcPool>),
        failures: &mut FailureLog,
    ) -> Result<Self> {
        let peer = xprt.peer()?;
        let r = Self::try_connect(link, xprt.net()?, &peer, xprt.max_reqs(), shared);
        match &r {
            Ok(_) => trace::xprtrdma_connect(&peer, &Ok(()), 1),
            Err(f) => trace::xprtrdma_connect(&peer, &Err(f.err), f.err.to_errno()),
        }
        match r {
            Ok(ep) => {
                // One credit until the server grants more (`rpcrdma_reset_cwnd`).
                xprt.set_credits(1);
                // (The server's Send With Invalidate flag says whether it accepts one from us;
                // a client never sends one, so it is not reported.)
                let n = &ep.negotiated;
                let (loud, missed) = shared.0.conn_log.allow();
                if loud {
                    // Connect failures are counted afresh, unless connections come and go
                    // too fast to log: a server alternating accepts and rejects.
                    *failures = FailureLog::default();
                    pr_info_peer!(
                        "connected to {}: inline send {} recv {}{}\n",
                        peer.host(),
                        n.inline.send,
                        n.inline.recv,
                        NotLogged(missed)
                    );
                } else {
                    ep.ev.log.quiet();
                    pr_debug!(
                        "connected to {}: inline send {} recv {}\n",
                        peer.host(),
                        n.inline.send,
                        n.inline.recv
                    );
                }
                Ok(ep)
            }
            Err(f) => {
                // Rate-limited too: the server picks the reject's status, so one that
                // alternates reasons would be logged at every attempt.
                match failures.record(&f) {
                    Some(1) => pr_info_peer!(
                        "connect to {} failed: {} {} (errno {} for sunrpc)\n",
                        peer.host(),
                        f.what,
                        f.status,
                        f.err.to_errno()
                    ),
                    Some(n) => pr_info_peer!(
                        "connect to {} failed again: {} {} ({} times in a row)\n",
                        peer.host(),
                        f.what,
                        f.status,
                        n
                    ),
                    None => pr_debug!(
                        "connect to {} failed again: {} {}\n",
                        peer.host(),
                        f.what,
                        f.status
                    ),
                }
                Err(f.err)
            }
        }
    }

    /// Connects to `peer` in `net`, provisioned for `slots` requests (the transport's slot
    /// table) and [`BC_MAX_REQUESTS`] backward requests, with the inline thresholds the sysctls
    /// give now (`rpcrdma_ep_create`).
    fn try_connect(
        link: &RpcXprtLink,
        net: Net<'_>,
        peer: &SockAddr,
        slots: u32,
        (counters, bc): (&Arc<Counters>, &Arc<BcPool>),
    ) -> core::result::Result<Self, Failure> {
        // Read once per connection, as `rpcrdma_ep_create` reads `xprt_rdma_max_inline_*`: our
        // private data offers them, the Send and Receive buffers are sized by them, and the
        // server's private data may only lower them. Used as the server reads them (whole
        // KiB): a server that keeps to our advertised receive size may send no more inline.
        let tun = sysctl::Client::get();
        let ours = Inline {
            send: tun.max_inline_write,
            recv: tun.max_inline_read,
        }
        .advertised();
        let log = Arc::new(LogLevel::new(), GFP_KERNEL)
            .map_err(Error::from)
            .step("allocation")?;
        let ev = Arc::pin_init(
            pin_init!(Events {
                addr <- Completion::new(),
                route <- Completion::new(),
                conn <- Completion::new(),
                resolve <- new_spinlock!(Ok(()), "rpcrdma_rs_resolve"),
                state <- new_spinlock!(State::Pending, "rpcrdma_rs_conn_state"),
                link: link.clone(),
                removing: AtomicBool::new(false),
                port_down: AtomicBool::new(false),
                log,
            }),
            GFP_KERNEL,
        )
        .step("allocation")?;
        let id = Id::new(net, CmEvents { ev: ev.clone() }, GFP_KERNEL).step("rdma_create_id")?;

        id.resolve_addr(peer, RESOLVE_TIMEOUT_MS)
            .step("rdma_resolve_addr")?;
        ev.addr.wait_for_completion();
        (*ev.resolve.lock())?;
        id.resolve_route(RESOLVE_TIMEOUT_MS)
            .step("rdma_resolve_route")?;
        ev.route.wait_for_completion();
        (*ev.resolve.lock())?;

        // Resources sized from the device, as rpcrdma_ep_create().
        let dev = id.device().step("device")?;
        // As rpcrdma_create_id(): fails if the device is already being removed. Dropped after
        // the PD, CQs and QP below (declared before them) on a failure.
        let removal = Notification::new(
            &dev,
            Removal {
                ev: ev.clone(),
                peer: *peer,
                port: id.port_num(),
            },
            GFP_KERNEL,
        )
        .step("device removal notification")?;
        let attrs = dev.attrs();
        let page = page_size();
        let depth = marshal::max_fr_depth(attrs.max_sge_rd, attrs.max_fast_reg_page_list_len, page);
        let max_rdma_segs = marshal::max_rdma_segs(depth, page);
        if depth == 0 || max_rdma_segs * depth < marshal::max_data_segs(page) {
            return Err(ENOMEM).step("device cannot register a full payload");
        }
        // As frwr_query_device(): every request may need its Send plus a REG_MR and a
        // LOCAL_INV per MR; fewer requests if the device's queues are too short. The
        // backchannel's entries first (RPCRDMA_BACKWARD_WRS): a Send per backward Reply, two
        // Receives per backward request (`credits::receives_provisioned`); then a Send and a
        // Receive per transport message without RPC ([`CTL_MESSAGES`]).
        // Receives for continued replies when the connection may settle on version 2
        // ([`CONT_RECVS`]; the version is not known before the first reply).
        let cont = if crate::max_version() >= 2 {
            CONT_RECVS
        } else {
            0
        };
        let max_wr = attrs
            .max_qp_wr
            .saturating_sub(1)
            .min(attrs.max_cqe.saturating_sub(1))
            .saturating_sub(2 * BC_MAX_REQUESTS + CTL_MESSAGES + cont);
        let reqs = slots.min(max_wr / WRS_PER_REQUEST);
        if reqs == 0 {
            return Err(ENOMEM).step("device without queue entries");
        }
        // One more entry in each queue for the drain's marker request (`ib_drain_qp` posts
        // one; on a full queue it fails to, warns and does not wait), as xprtrdma's
        // `rpcrdma_ep_create` asks; `max_wr` above left room for it.
        let caps = QpCaps {
            max_send_wr: reqs * WRS_PER_REQUEST + BC_MAX_REQUESTS + CTL_MESSAGES + 1,
            max_recv_wr: credits::receives_provisioned(reqs, BC_MAX_REQUESTS)
                + CTL_MESSAGES
                + cont
                + 1,
            max_send_sge: MAX_SEND_SGES,
            max_recv_sge: 1,
            max_inline_data: 0,
        }
        .clamp(&attrs);
        let comp_vector = 0;
        let pd = Pd::new(&dev, GFP_KERNEL).step("ib_alloc_pd")?;
        // One more entry each for the drain's marker request.
        let scq =
            Cq::new(&dev, caps.max_send_wr + 1, comp_vector, GFP_KERNEL).step("ib_alloc_cq")?;
        let rcq =
            Cq::new(&dev, caps.max_recv_wr + 1, comp_vector, GFP_KERNEL).step("ib_alloc_cq")?;
        let qp = Qp::new(&id, &pd, &scq, &rcq, caps).step("rdma_create_qp")?;
        let granted = qp.caps();
        let reqs = reqs.min(
            granted
                .max_recv_wr
                .saturating_sub(2 * BC_MAX_REQUESTS + CTL_MESSAGES + cont + 1)
                .min(
                    granted
                        .max_send_wr
                        .saturating_sub(BC_MAX_REQUESTS + CTL_MESSAGES + 1)
                        / WRS_PER_REQUEST,
                ),
        );
        if reqs == 0 {
            return Err(ENOMEM).step("QP without queue entries");
        }
        let conn = ClientConn::new(
            qp,
            link.clone(),
            (counters.clone(), bc.clone(), ev.log.clone()),
            reqs,
            slots,
            *peer,
        )
        .step("allocation")?;
        // From here on the connection must be shut down on failure (posted requests hold it).
        let guard = ShutdownGuard(&conn);
        // The MR pool, sized from the device and the slot table: the MRs of one full-sized
        // chunk (`re_max_rdma_segs`, what `rpcrdma_mrs_create` adds at a time) for every
        // request the connection provisions, so that a request waits for MRs only when the
        // server holds more than that. At least two chunks' worth (the most one call can
        // offer: a Read chunk and a Write or Reply chunk); at most half of the device's MRs
        // (it has other users), and a pool cut short by an allocation failure is kept if it
        // reaches that minimum. The connection starts with that minimum and grows by one
        // chunk's worth when sends find the pool short, as C's `rpcrdma_mrs_refresh`; a send
        // short of MRs waits for some to come back or for the pool to grow (`ClientConn`).
        let min_mrs = 2 * max_rdma_segs;
        let nmrs = match super::POOL_MRS.load(kernel::sync::atomic::Relaxed) {
            0 => reqs.saturating_mul(max_rdma_segs).min(attrs.max_mr / 2),
            n => n,
        }
        .max(min_mrs);
        ClientConn::provision(
            &conn,
            ours.send as usize,
            ours.recv as usize,
            (
                credits::receives_provisioned(reqs, BC_MAX_REQUESTS) + CTL_MESSAGES + cont,
                cont,
            ),
            (nmrs, min_mrs),
            (depth, max_rdma_segs),
        )
        .step("provisioning")?;

        let pmsg = PrivateData::new(ours.send, ours.recv, true).encode();
        id.connect(&ConnParam {
            private_data: &pmsg,
            responder_resources: u8::try_from(attrs.max_qp_rd_atom).unwrap_or(u8::MAX),
            initiator_depth: 0,
            flow_control: 0,
            retry_count: 6,
            rnr_retry_count: 0,
        })
        .step("rdma_connect")?;
        ev.conn.wait_for_completion();
        let state = *ev.state.lock();
        let peer_pd = match state {
            State::Established(p) => p,
            State::Failed(e) => return Err(e),
            State::Pending => return Err(ENOTCONN).step("connect"),
        };
        let negotiated = private_data::negotiate(ours, peer_pd.as_ref());
        // What we advertise if the connection settles on version 2 (draft Section 5.2): the
        // thresholds just negotiated, our Receive buffers, the most one MR covers, and the
        // most segments a call offers (a Read chunk and a Write or Reply chunk). Backward
        // requests are served inline.
        let props = ConnProps {
            sbsiz: negotiated.inline.send,
            rbsiz: ours.recv,
            rssiz: depth.saturating_mul(page),
            // A call's chunks together: a Read chunk and a Reply chunk at most.
            rcsiz: 2 * max_rdma_segs,
            brs: ReverseSupport::Inline,
        };
        conn.set_params(
            marshal::Connection {
                inline_send: negotiated.inline.send,
                inline_recv: negotiated.inline.recv,
                max_rdma_segs,
                // Until the server's properties say otherwise.
                max_call_segs: u32::MAX,
                // Every inline call is copied into one Send buffer, so the number of pieces of
                // its xdr_buf never limits inlining.
                max_send_sge: u32::MAX,
                send_buf_len: ours.send,
                reg: marshal::Registration {
                    max_fr_depth: depth,
                    sg_gaps: false,
                    page_size: page,
                },
            },
            props,
        );
        core::mem::forget(guard);
        Ok(Self {
            conn,
            id,
            ev,
            negotiated,
            peer: *peer,
            _removal: removal,
            _live: super::Live::new(&super::LIVE_ENDPOINTS),
        })
    }

    /// The data path.
    pub(crate) fn conn(&self) -> &Arc<ClientConn> {
        &self.conn
    }

    /// Disconnects (`rdma_disconnect`); the `DISCONNECTED` event then closes the transport.
    pub(crate) fn inject_disconnect(&self) {
        trace::xprtrdma_op_inject_dsc(&self.peer);
        self.conn.flush();
        if let Err(e) = self.id.disconnect() {
            pr_warn!("inject_disconnect: rdma_disconnect failed: {:?}\n", e);
        }
    }
}

impl Endpoint {
    /// Waits (up to [`PORT_DOWN_WAIT_MS`]) while the connection's port is down, if its
    /// disconnect would be a MAD: see [`PORT_DOWN_WAIT_MS`]. May sleep.
    fn wait_port_up(&self) {
        if !self.id.mad_port_down() {
            return;
        }
        let (waited, down) = self
            .id
            .wait_mad_port_up(PORT_DOWN_WAIT_MS, PORT_POLL_MS, || {
                self.ev.removing.load(Ordering::Relaxed)
            });
        pr_info!(
            "port was down: disconnected after {} ms{}\n",
            waited,
            if down {
                " (still down: later connects on this port may fail until the device is reset)"
            } else {
                ""
            }
        );
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        // Our own disconnect: its DISCONNECTED event must not force another close.
        let was = core::mem::replace(
            &mut *self.ev.state.lock(),
            State::Failed(Failure::event(ESHUTDOWN, "closed", 0)),
        );
        self.wait_port_up();
        // Failing (not connected, or already disconnected) is fine: the QP is drained and
        // destroyed next either way. Every posted request is flushed first.
        self.conn.flush();
        let r = self.id.disconnect();
        if let Err(e) = r {
            pr_debug!("rdma_disconnect: {:?}\n", e);
        }
        // The reason, as the C client's connect status: 1 if the connection was up (closed by
        // sunrpc), else the errno it had ended with.
        let status = match was {
            State::Established(_) => 1,
            State::Failed(f) => f.err.to_errno(),
            State::Pending => 0,
        };
        trace::xprtrdma_disconnect(&self.peer, r.err().map_or(0, |e| e.to_errno()), status);
        self.conn.shutdown();
    }
}

/// Shuts a connection down if its setup fails half way.
struct ShutdownGuard<'a>(&'a Arc<ClientConn>);

impl Drop for ShutdownGuard<'_> {
    fn drop(&mut self) {
        self.0.shutdown();
    }
}
