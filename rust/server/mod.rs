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

pub(crate) mod backchannel;
pub(crate) mod conn;
pub(crate) mod listener;
mod recv;
mod send;

/// The RPC-over-RDMA server transport: a listener or a connection.
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

    fn sendto(&self, xprt: &SvcXprt, rqst: &mut SvcRqst<Self::Ctxt>) -> Result<u32> {
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
