// SPDX-License-Identifier: GPL-2.0

//! The server's backchannel (RFC 8167; svcrdma's `svc_rdma_backchannel.c`): nfsd's callbacks
//! to an NFSv4.1+ client, on the client's own connection.
//!
//! nfsd's callback client creates a transport of the `rdma backchannel` class over the
//! connection (`sunrpc::svc::BcRegistration`, `shim/svc_bc.c`), which sends its Calls through
//! [`SvcConn::bc_send`]: inline, in an `RDMA_MSG` with empty chunk lists, in a Send context of
//! the connection, within its Send Queue accounting like any reply (so callbacks neither
//! overrun the Send Queue nor jump the queue of threads waiting for it). The connection keeps
//! [`BC_MAX_REQUESTS`] Sends and Receives for them beyond the credits (see `conn`).
//!
//! The client's Replies arrive among its Calls: `xpo_recvfrom` tells them apart
//! ([`crate::proto::backchannel::direction`]) and hands them to [`SvcConn::bc_reply`], which
//! completes the Call they answer. A Reply no Call waits for (an unknown XID, a connection
//! without backchannel) or too large for the Call's buffer is dropped and counted
//! (`srv_drop_reply` in debugfs `rpcrdma_rs/backchannel`, [`write_stats`]); it never reaches
//! nfsd as a Call.

#![forbid(unsafe_code)]

use kernel::{
    fmt,
    prelude::*,
    sync::atomic::{
        Atomic,
        Relaxed, //
    },
};

use super::{
    conn::{
        SvcConn,
        BC_MAX_REQUESTS, //
    },
    VERS_STATS,
};
use crate::{
    proto::{
        backchannel::{
            self,
            Message, //
        },
        v1, v2,
        xdr::Encoder,
    },
    rdma::ratelimit::pr_warn_peer,
    sunrpc::svc::{
        BcRqst,
        SvcXprt, //
    },
};

/// Backward Replies dropped, on every connection since the module was loaded: no Call waited
/// for them (an unknown XID, or a connection without backchannel) or they were larger than
/// the Call's receive buffer. `srv_drop_reply` in debugfs `rpcrdma_rs/backchannel`.
static DROP_REPLY: Atomic<u64> = Atomic::new(0);

/// Writes the server's backchannel counters, one `name value` line each, after the client's
/// ([`crate::client::BC_STATS`]) in debugfs `rpcrdma_rs/backchannel`; their names start with
/// `srv_`.
pub(crate) fn write_stats(f: &mut fmt::Formatter<'_>) -> fmt::Result {
    writeln!(f, "srv_drop_reply {}", DROP_REPLY.load(Relaxed))
}

impl SvcConn {
    /// Sends the backchannel Call `rqst` (`rpcrdma_bc_send_request`): a Call larger than the
    /// client's receive inline threshold fails with `EMSGSIZE`; `ENOTCONN` if it could not be
    /// posted (the shim closes the connection then, as svcrdma). Framed in the connection's
    /// version: version 2 as the draft's `RDMA2_MSG`, without `RDMA2_F_RESPONSE` (the XID is
    /// ours).
    pub(crate) fn bc_send(&self, rqst: &BcRqst) -> Result {
        let len = rqst.len() as usize;
        let v2 = self.vers.load(Relaxed) == v2::VERSION;
        let vers = if v2 { v2::VERSION } else { v1::VERSION };
        let total = backchannel::header_len(vers).saturating_add(len);
        let limit = self.inline_send.load(Relaxed);
        if total > limit as usize {
            pr_warn_peer!(
                "backchannel Call of {len} bytes does not fit the client's inline threshold ({limit})\n"
            );
            return Err(EMSGSIZE);
        }
        let mut sc = self.send_ctxt(total)?;
        let built = sc.buf_mut(0).ok_or(EINVAL).and_then(|b| {
            let out = b.as_mut_slice();
            let mut e = Encoder::new(out);
            let hdr = if v2 {
                backchannel::encode_header_v2(&mut e, rqst.xid(), BC_MAX_REQUESTS, false)
            } else {
                backchannel::encode_header(&mut e, rqst.xid(), BC_MAX_REQUESTS)
            }
            .map_err(|_| EINVAL)?;
            rqst.copy(out.get_mut(hdr..total).ok_or(EINVAL)?)
        });
        if let Err(e) = built {
            self.put_send_ctxt(sc);
            return Err(e);
        }
        self.post_send(KVec::new(), sc, total, None)
            .map_err(|_| ENOTCONN)?;
        if v2 {
            VERS_STATS.backward_v2();
        }
        Ok(())
    }

    /// A backward Reply `r` received in `buf` (`svc_rdma_handle_bc_reply`): completes the Call
    /// it answers on `xprt`'s backchannel, with the client's credit grant as its congestion
    /// window, or drops and counts it.
    pub(super) fn bc_reply(&self, xprt: &SvcXprt, r: &Message, buf: &[u8]) {
        let Err(e) = xprt.bc_reply(r.xid, r.rpc(buf), r.grant(BC_MAX_REQUESTS)) else {
            return;
        };
        DROP_REPLY.fetch_add(1, Relaxed);
        let why = match e {
            ENOTCONN => "no backchannel on this connection",
            ENOENT => "no Call waits for it",
            EMSGSIZE => "larger than the Call's receive buffer",
            _ => "error",
        };
        pr_warn_peer!(
            "backchannel Reply {:#010x} of {} bytes dropped: {why}\n",
            r.xid,
            r.rpc_len
        );
    }
}
