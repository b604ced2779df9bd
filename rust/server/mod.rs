// SPDX-License-Identifier: GPL-2.0

//! Server transport logic (the responder side of RPC-over-RDMA, svcrdma's equivalent).
//!
//! One [`SvcRdmaXprt`] object per `svc_xprt` of the `rdma` class:
//!
//! - [`listener::Listener`]: an rdma_cm listener created by `xpo_create`; connection requests
//!   are adopted in its cm event handler, queued, and accepted by `xpo_accept` in an nfsd
//!   thread;
//! - [`conn::SvcConn`]: one connection, with its PD, CQs, QP and Receives sized from the device;
//!   `xpo_recvfrom` ([`recv`]) validates each header with [`crate::proto::v1`] and pulls Read
//!   chunks with RDMA Read, `xpo_sendto` ([`send`]) pushes result payloads into Write chunks
//!   and large replies into the Reply chunk with RDMA Write, chained ahead of the Send;
//!   [`backchannel`] sends nfsd's callbacks on it and completes them with the client's
//!   Replies (RFC 8167).
//!
//! An nfsd thread waits only for the RDMA Reads of a Call's Read chunks (in `xpo_recvfrom`,
//! into pages the request owns). A reply's Write+Send chain is posted from a preallocated Send
//! context and not waited for: the Writes hold references on the reply's pages, and the Send's
//! completion releases them and the context (see [`send`] and [`conn::SendCtxt`]).

#![forbid(unsafe_code)]

use kernel::{
    prelude::*,
    sync::atomic::{
        Atomic,
        Relaxed, //
    },
    workqueue::Queue, //
};

use crate::sunrpc::svc::{
    self,
    BcRqst,
    CreateArgs,
    New,
    SvcRqst,
    SvcXprt, //
};

/// The server's messages by RPC-over-RDMA version, and the connections it closed because the
/// client stopped taking them (debugfs `rpcrdma_rs/versions`).
pub(crate) struct VersStats {
    /// Calls received in version 1 and served.
    calls_v1: Atomic<u64>,
    /// Calls received in version 2 and served.
    calls_v2: Atomic<u64>,
    /// Connections whose first accepted message was version 1.
    conns_v1: Atomic<u64>,
    /// Connections whose first accepted message was version 2.
    conns_v2: Atomic<u64>,
    /// `ERR_VERS` answers sent (any layout).
    err_vers: Atomic<u64>,
    /// Other `RDMA2_ERROR` answers sent.
    errors_v2: Atomic<u64>,
    /// Version 2 credit refreshes received (not answered).
    ignored_v2: Atomic<u64>,
    /// Version 2 replies sent with Send With Invalidate of the handle the Call named.
    reminv_v2: Atomic<u64>,
    /// `RDMA2_CONNPROP`s sent.
    connprops_sent: Atomic<u64>,
    /// `RDMA2_CONNPROP`s received and applied.
    connprops_received: Atomic<u64>,
    /// Backward Calls sent in version 2.
    backward_v2: Atomic<u64>,
    /// `RDMA2_CONNPROP`s received and not honoured (those refused with `RDMA2_ERR_BAD_XDR`
    /// count in `errors_v2`).
    connprops_bad: Atomic<u64>,
    /// Credit refreshes sent (keep-alive).
    refreshes_sent: Atomic<u64>,
    /// Connections closed by the keep-alive (the client silent).
    keepalive_dead: Atomic<u64>,
    /// Connections closed because no Send completed while a reservation of Send Queue
    /// entries waited (the client takes none of our messages).
    sq_timeouts: Atomic<u64>,
    /// Continued Calls reassembled.
    continued: Atomic<u64>,
    /// Messages of those Calls (all of each sequence).
    continued_msgs: Atomic<u64>,
    /// Messages dropped as too short to answer: no XID, or a version 2 one without its
    /// header type.
    short_dropped: Atomic<u64>,
    /// Replies sent continued (`F_MORE`), without a chunk.
    sent_continued: Atomic<u64>,
    /// Messages of those replies (all of each sequence).
    sent_continued_msgs: Atomic<u64>,
}

impl VersStats {
    const fn new() -> Self {
        Self {
            calls_v1: Atomic::new(0),
            calls_v2: Atomic::new(0),
            conns_v1: Atomic::new(0),
            conns_v2: Atomic::new(0),
            err_vers: Atomic::new(0),
            errors_v2: Atomic::new(0),
            ignored_v2: Atomic::new(0),
            reminv_v2: Atomic::new(0),
            connprops_sent: Atomic::new(0),
            connprops_received: Atomic::new(0),
            connprops_bad: Atomic::new(0),
            backward_v2: Atomic::new(0),
            refreshes_sent: Atomic::new(0),
            keepalive_dead: Atomic::new(0),
            sq_timeouts: Atomic::new(0),
            continued: Atomic::new(0),
            continued_msgs: Atomic::new(0),
            short_dropped: Atomic::new(0),
            sent_continued: Atomic::new(0),
            sent_continued_msgs: Atomic::new(0),
        }
    }

    /// Counts a Call of version `vers` handed to nfsd.
    pub(crate) fn call(&self, vers: u32) {
        let c = if vers == 2 {
            &self.calls_v2
        } else {
            &self.calls_v1
        };
        c.add(1, Relaxed);
    }

    /// Counts a connection that settled on version `vers`.
    pub(crate) fn settled(&self, vers: u32) {
        let c = if vers == 2 {
            &self.conns_v2
        } else {
            &self.conns_v1
        };
        c.add(1, Relaxed);
    }

    /// Counts an `ERR_VERS` sent.
    pub(crate) fn err_vers(&self) {
        self.err_vers.add(1, Relaxed);
    }

    /// Counts another `RDMA2_ERROR` sent.
    pub(crate) fn error_v2(&self) {
        self.errors_v2.add(1, Relaxed);
    }

    /// Counts a continued Call of `msgs` messages, reassembled.
    pub(crate) fn continued(&self, msgs: u32) {
        self.continued.add(1, Relaxed);
        self.continued_msgs.add(u64::from(msgs), Relaxed);
    }

    /// Counts a reply of `msgs` messages, sent continued.
    pub(crate) fn sent_continued(&self, msgs: u32) {
        self.sent_continued.add(1, Relaxed);
        self.sent_continued_msgs.add(u64::from(msgs), Relaxed);
    }

    /// Counts a version 2 message that needs no answer.
    pub(crate) fn ignored_v2(&self) {
        self.ignored_v2.add(1, Relaxed);
    }

    /// Counts a version 2 reply sent with invalidate.
    pub(crate) fn reminv_v2(&self) {
        self.reminv_v2.add(1, Relaxed);
    }

    /// Counts an `RDMA2_CONNPROP` sent.
    pub(crate) fn connprop_sent(&self) {
        self.connprops_sent.add(1, Relaxed);
    }

    /// Counts an `RDMA2_CONNPROP` received: applied if `ok`, not honoured otherwise.
    pub(crate) fn connprop_received(&self, ok: bool) {
        if ok {
            self.connprops_received.add(1, Relaxed);
        } else {
            self.connprops_bad.add(1, Relaxed);
        }
    }

    /// Counts a credit refresh sent.
    pub(crate) fn refresh_sent(&self) {
        self.refreshes_sent.add(1, Relaxed);
    }

    /// Counts a connection closed by the keep-alive.
    pub(crate) fn keepalive_dead(&self) {
        self.keepalive_dead.add(1, Relaxed);
    }

    /// Counts a connection closed because its Send Queue stayed full.
    pub(crate) fn sq_timeout(&self) {
        self.sq_timeouts.add(1, Relaxed);
    }

    /// Counts a message dropped as too short to answer.
    pub(crate) fn short_dropped(&self) {
        self.short_dropped.add(1, Relaxed);
    }

    /// Counts a backward Call sent in version 2.
    pub(crate) fn backward_v2(&self) {
        self.backward_v2.add(1, Relaxed);
    }

    /// Writes one `server_<name> <value>` line per counter.
    pub(crate) fn write(&self, f: &mut kernel::fmt::Formatter<'_>) -> kernel::fmt::Result {
        for (name, c) in [
            ("calls_v1", &self.calls_v1),
            ("calls_v2", &self.calls_v2),
            ("conns_v1", &self.conns_v1),
            ("conns_v2", &self.conns_v2),
            ("err_vers", &self.err_vers),
            ("errors_v2", &self.errors_v2),
            ("ignored_v2", &self.ignored_v2),
            ("reminv_v2", &self.reminv_v2),
            ("connprops_sent", &self.connprops_sent),
            ("connprops_received", &self.connprops_received),
            ("connprops_bad", &self.connprops_bad),
            ("backward_v2", &self.backward_v2),
            ("refreshes_sent", &self.refreshes_sent),
            ("keepalive_dead", &self.keepalive_dead),
            ("sq_timeouts", &self.sq_timeouts),
            ("continued", &self.continued),
            ("continued_msgs", &self.continued_msgs),
            ("sent_continued", &self.sent_continued),
            ("sent_continued_msgs", &self.sent_continued_msgs),
            ("short_dropped", &self.short_dropped),
        ] {
            writeln!(f, "server_{name} {}", c.load(Relaxed))?;
        }
        Ok(())
    }
}

/// The module's server version counters.
pub(crate) static VERS_STATS: VersStats = VersStats::new();

pub(crate) mod backchannel;
pub(crate) mod conn;
pub(crate) mod listener;
mod recv;
mod send;

/// The RPC-over-RDMA server transport: a listener or a connection.
// Each is allocated on its own (a `KBox` handed to sunrpc) and there are few listeners: the
// bytes a listener leaves unused cost less than a second allocation for every connection.
#[expect(clippy::large_enum_variant)]
pub(crate) enum SvcRdmaXprt {
    /// A listening endpoint.
    Listener(listener::Listener),
    /// A connection accepted on a listener.
    Conn(conn::SvcConn),
}

impl svc::SvcXprtOps for SvcRdmaXprt {
    type Ctxt = conn::RecvCtxt;

    fn create(args: &CreateArgs<'_>) -> Result<New> {
        listener::Listener::create(args)
    }

    fn accept(&self, xprt: &SvcXprt) -> Option<New> {
        match self {
            Self::Listener(l) => l.accept(xprt),
            Self::Conn(_) => None,
        }
    }

    fn recvfrom(&self, xprt: &SvcXprt, rqst: &mut SvcRqst<Self::Ctxt>) -> Result<u32> {
        match self {
            Self::Conn(c) => c.recvfrom(xprt, rqst),
            Self::Listener(_) => Ok(0),
        }
    }

    fn sendto(&self, xprt: &SvcXprt, rqst: &mut SvcRqst<Self::Ctxt>) -> Result {
        match self {
            Self::Conn(c) => c.sendto(xprt, rqst),
            Self::Listener(_) => Err(ENOTCONN),
        }
    }

    fn result_payload(&self, rqst: &mut SvcRqst<Self::Ctxt>, offset: u32, length: u32) -> Result {
        match self {
            Self::Conn(c) => c.result_payload(rqst, offset, length),
            Self::Listener(_) => Ok(()),
        }
    }

    fn release_ctxt(&self, ctxt: KBox<Self::Ctxt>) {
        match self {
            Self::Conn(c) => c.release_ctxt(ctxt),
            Self::Listener(_) => drop(ctxt),
        }
    }

    fn detach(&self, xprt: &SvcXprt) {
        match self {
            Self::Listener(l) => l.detach(),
            Self::Conn(c) => c.detach(xprt),
        }
    }

    fn has_wspace(&self) -> bool {
        match self {
            Self::Conn(c) => c.has_wspace(),
            Self::Listener(_) => true,
        }
    }

    fn bc_send(&self, _xprt: &SvcXprt, rqst: &BcRqst) -> Result {
        match self {
            Self::Conn(c) => c.bc_send(rqst),
            Self::Listener(_) => Err(ENOTCONN),
        }
    }

    fn free(this: KBox<Self>, deferred: &Queue) {
        conn::SvcConn::free(this, deferred);
    }
}
