// SPDX-License-Identifier: GPL-2.0

//! The client's backchannel (RFC 8167): backward Calls from the server, e.g. NFSv4.1
//! callbacks (CB_RECALL of a delegation), served by the NFS callback service.
//!
//! As net/sunrpc/xprtrdma/backchannel.c:
//!
//! - every connection provisions [`BC_MAX_REQUESTS`] backward requests: twice as many extra
//!   Receives (`credits + 2 * bc slots`, [`credits::receives_provisioned`]) and as many extra
//!   Send buffers, for the Replies;
//! - the Receive completion recognises a backward Call before any XID lookup
//!   ([`backchannel::classify`], `rpcrdma_is_bcall`), takes a backward request from the
//!   transport's [`BcPool`] and lends it, with the Receive holding the Call, to the callback
//!   service (`rpcrdma_bc_receive_call`, `xprt_enqueue_bc_request`);
//! - the service's Reply is sent inline as `RDMA_MSG` ([`backchannel::encode_header`],
//!   `xprt_rdma_bc_send_reply`) on the connection the Call came in on;
//! - when sunrpc frees the request (`xprt_rdma_bc_free_rqst`) the Receive is re-posted, unless
//!   its connection is gone, and the request goes back to the pool.
//!
//! The pool belongs to the transport and outlives its connections: `bc_setup` (the NFS
//! client's session setup, and again after a reconnect re-binds it) preallocates the requests
//! it asks for, and a Call finding the pool empty allocates one more, up to
//! [`BC_MAX_REQUESTS`], as `rpcrdma_bc_rqst_get`. Every backward Call that cannot be served is
//! dropped, its Receive re-posted, and counted in [`BC_STATS`] (debugfs
//! `rpcrdma_rs/backchannel`): too large for the inline threshold, more Calls than slots, no
//! callback service, a malformed one, or one arriving while its connection is being torn down
//! (a reconnect); and so is a Reply whose Call came in on a connection that is gone (the server
//! retransmits the Call on the new one).
//!
//! [`credits::receives_provisioned`]: crate::proto::credits::receives_provisioned
//! [`backchannel::classify`]: crate::proto::backchannel::classify
//! [`backchannel::encode_header`]: crate::proto::backchannel::encode_header

#![forbid(unsafe_code)]

use kernel::{
    new_spinlock,
    prelude::*,
    sync::{
        atomic::{
            Atomic,
            Relaxed, //
        },
        SpinLock, //
    }, //
};

use super::RpcRdmaXprt;
use crate::sunrpc::xprt::{
    BcRqst,
    RpcXprt,
    RpcXprtLink, //
};

/// Backward requests a connection takes at once (`RPCRDMA_BACKWARD_WRS >> 1`): the session's
/// backchannel slots the client offers at most (`bc_num_slots`), and the `rdma_credit` of our
/// backward Replies.
pub(crate) const BC_MAX_REQUESTS: u32 = 16;

/// Counters of the backchannel, for all transports since the module was loaded (debugfs
/// `rpcrdma_rs/backchannel`). Each bad input is counted under its reason.
pub(crate) struct BcStats {
    /// Backward Calls handed to the callback service (`bcall_count`).
    calls: Atomic<u64>,
    /// Backward Replies sent.
    replies: Atomic<u64>,
    /// Calls dropped: larger than the connection's inline threshold allows (`bc_maxpayload`).
    drop_too_large: Atomic<u64>,
    /// Calls dropped: every backward request was in use (more Calls than slots).
    drop_no_slot: Atomic<u64>,
    /// Calls dropped: their connection was being torn down (a reconnect).
    drop_closing: Atomic<u64>,
    /// Calls dropped: no callback service attached (e.g. an NFSv3 or v4.0 mount).
    drop_no_service: Atomic<u64>,
    /// Calls dropped: malformed (their RPC XID is not their transport XID).
    drop_bad_call: Atomic<u64>,
    /// Replies not sent: their Call came in on a connection that is gone.
    drop_stale_reply: Atomic<u64>,
    /// Replies not sent: larger than the inline threshold, or the post failed.
    drop_reply: Atomic<u64>,
}

/// The reasons a backward Call or Reply is dropped.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Reason {
    /// See [`BcStats::drop_too_large`].
    TooLarge,
    /// See [`BcStats::drop_no_slot`].
    NoSlot,
    /// See [`BcStats::drop_closing`].
    Closing,
    /// See [`BcStats::drop_no_service`].
    NoService,
    /// See [`BcStats::drop_bad_call`].
    BadCall,
    /// See [`BcStats::drop_stale_reply`].
    StaleReply,
    /// See [`BcStats::drop_reply`].
    Reply,
}

impl BcStats {
    /// Counters, all zero.
    const fn new() -> Self {
        Self {
            calls: Atomic::new(0),
            replies: Atomic::new(0),
            drop_too_large: Atomic::new(0),
            drop_no_slot: Atomic::new(0),
            drop_closing: Atomic::new(0),
            drop_no_service: Atomic::new(0),
            drop_bad_call: Atomic::new(0),
            drop_stale_reply: Atomic::new(0),
            drop_reply: Atomic::new(0),
        }
    }

    /// A backward Call went to the callback service.
    pub(crate) fn call(&self) {
        self.calls.add(1, Relaxed);
    }

    /// A backward Reply was posted.
    pub(crate) fn reply(&self) {
        self.replies.add(1, Relaxed);
    }

    /// Counts a drop.
    pub(crate) fn dropped(&self, why: Reason) {
        let c = match why {
            Reason::TooLarge => &self.drop_too_large,
            Reason::NoSlot => &self.drop_no_slot,
            Reason::Closing => &self.drop_closing,
            Reason::NoService => &self.drop_no_service,
            Reason::BadCall => &self.drop_bad_call,
            Reason::StaleReply => &self.drop_stale_reply,
            Reason::Reply => &self.drop_reply,
        };
        c.add(1, Relaxed);
    }

    /// Writes one line per counter: its name and value.
    pub(crate) fn write(&self, f: &mut kernel::fmt::Formatter<'_>) -> kernel::fmt::Result {
        for (name, c) in [
            ("calls", &self.calls),
            ("replies", &self.replies),
            ("drop_too_large", &self.drop_too_large),
            ("drop_no_slot", &self.drop_no_slot),
            ("drop_closing", &self.drop_closing),
            ("drop_no_service", &self.drop_no_service),
            ("drop_bad_call", &self.drop_bad_call),
            ("drop_stale_reply", &self.drop_stale_reply),
            ("drop_reply", &self.drop_reply),
        ] {
            writeln!(f, "{name} {}", c.load(Relaxed))?;
        }
        Ok(())
    }
}

/// The module's backchannel counters.
pub(crate) static BC_STATS: BcStats = BcStats::new();

/// The mutable state of a [`BcPool`].
struct Pool {
    /// Idle backward requests.
    idle: KVec<BcRqst<RpcRdmaXprt>>,
    /// Backward requests allocated: idle or lent to sunrpc.
    total: u32,
    /// Requests the sessions' `bc_setup` asked for, not yet given back by `bc_destroy`.
    wanted: u32,
}

/// The backward requests of a transport (`bc_pa_list`).
#[pin_data]
pub(crate) struct BcPool {
    #[pin]
    pool: SpinLock<Pool>,
}

impl BcPool {
    /// An empty pool, with room for [`BC_MAX_REQUESTS`].
    pub(crate) fn new() -> Result<impl PinInit<Self, Error>> {
        let idle = KVec::with_capacity(BC_MAX_REQUESTS as usize, GFP_KERNEL)?;
        Ok(try_pin_init!(Self {
            pool <- new_spinlock!(
                Pool {
                    idle,
                    total: 0,
                    wanted: 0,
                },
                "rpcrdma_rs_bc_pool"
            ),
        }))
    }

    /// `bc_setup`: makes sure `reqs` more requests (up to [`BC_MAX_REQUESTS`] in all) are
    /// allocated for `xprt`. May sleep.
    pub(crate) fn setup(&self, xprt: &RpcXprt, reqs: u32) -> Result {
        let target = {
            let mut p = self.pool.lock();
            p.wanted = p.wanted.saturating_add(reqs);
            p.wanted.min(BC_MAX_REQUESTS)
        };
        loop {
            let mut p = self.pool.lock();
            if p.total >= target {
                return Ok(());
            }
            // Counted first, so that a Call allocating meanwhile cannot overshoot the maximum.
            p.total += 1;
            drop(p);
            match BcRqst::new(xprt, false) {
                Ok(r) => self.put(r),
                Err(e) => {
                    self.pool.lock().total -= 1;
                    return Err(e);
                }
            }
        }
    }

    /// A backward request for a Call, from the idle ones or newly allocated (without
    /// sleeping) if fewer than [`BC_MAX_REQUESTS`] exist; `None` if all are in use.
    pub(crate) fn get(&self, link: &RpcXprtLink) -> Option<BcRqst<RpcRdmaXprt>> {
        let mut p = self.pool.lock();
        if let Some(r) = p.idle.pop() {
            return Some(r);
        }
        if p.total >= BC_MAX_REQUESTS {
            return None;
        }
        p.total += 1;
        drop(p);
        let r = link.with(|x| BcRqst::new(x, true)).and_then(|r| r.ok());
        if r.is_none() {
            self.pool.lock().total -= 1;
        }
        r
    }

    /// Takes back a request sunrpc is done with.
    pub(crate) fn put(&self, r: BcRqst<RpcRdmaXprt>) {
        let mut p = self.pool.lock();
        // Cannot fail: there are never more than `BC_MAX_REQUESTS`, the vector's capacity (a
        // request that could not be kept would be freed).
        if p.idle.push(r, GFP_ATOMIC).is_err() {
            p.total -= 1;
        }
    }

    /// `bc_destroy`: a session's backchannel of `reqs` requests goes away; the idle requests
    /// are freed, as `xprt_rdma_bc_destroy` does (those in use come back to the pool and are
    /// freed with the transport, or reused by a later session).
    pub(crate) fn destroy(&self, reqs: u32) {
        {
            let mut p = self.pool.lock();
            p.wanted = p.wanted.saturating_sub(reqs);
        }
        loop {
            let r = {
                let mut p = self.pool.lock();
                let r = p.idle.pop();
                if r.is_some() {
                    p.total -= 1;
                }
                r
            };
            // Freed outside the lock.
            match r {
                Some(r) => drop(r),
                None => break,
            }
        }
    }
}
