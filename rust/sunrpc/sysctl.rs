// SPDX-License-Identifier: GPL-2.0

//! The C module's sysctls and the server's statistics, same names, defaults and ranges.
//!
//! The `ctl_table`s, the values and the percpu counters live in the C shim
//! (`shim/sysctl.c`); [`Registration`] puts them in `/proc/sys` for the life of the module:
//!
//! - `/proc/sys/sunrpc/`: `rdma_slot_table_entries`, `rdma_max_inline_read`,
//!   `rdma_max_inline_write` (read by [`Client::get`] and, for the slot table, by the shim when
//!   it allocates an `rpc_xprt`), and `rdma_inline_write_padding`, `rdma_memreg_strategy`,
//!   `rdma_pad_optimize`, which the C client keeps without using them. Registered only with
//!   `CONFIG_SUNRPC_DEBUG`, as `xprt_rdma_init` does.
//! - `/proc/sys/sunrpc/svc_rdma/`: `max_requests`, `max_req_size` (read by [`Svc::get`]),
//!   `max_outbound_read_requests` (unused, as in C), the statistics counted by
//!   [`SvcStat::inc`] (`rdma_stat_read`, `recv`, `write`, `sq_starve`; a write resets one)
//!   and five names C keeps at 0 (`rdma_stat_rq_starve`, `rq_poll`, `rq_prod`, `sq_poll`,
//!   `sq_prod`).
//!
//! A value out of range is refused with `EINVAL` by the shim's handler
//! (`proc_dointvec_minmax`). The transports read the values once per new connection, so a
//! change takes effect on the next one; the values are valid to read even before the files
//! exist (their defaults).
//!
//! C sources: `net/sunrpc/xprtrdma/transport.c` (`xr_tunables_table`),
//! `net/sunrpc/xprtrdma/svc_rdma.c` (`svcrdma_parm_table`).

use kernel::{
    error::to_result,
    prelude::*, //
};

use crate::bindings;

/// `RPCRDMA_MIN_INLINE`, the smallest inline threshold the client's sysctls accept.
const MIN_INLINE: u32 = bindings::RPCRDMA_MIN_INLINE;
/// `RPCRDMA_MAX_INLINE`, the largest.
const MAX_INLINE: u32 = bindings::RPCRDMA_MAX_INLINE;
/// `RPCRDMA_DEF_INLINE_THRESH`, the smallest `max_req_size`.
const MIN_REQ_SIZE: u32 = bindings::RPCRDMA_DEF_INLINE_THRESH;
/// `RPCRDMA_MAX_INLINE_THRESH`, the largest `max_req_size`.
const MAX_REQ_SIZE: u32 = bindings::RPCRDMA_MAX_INLINE_THRESH;
/// The smallest `max_requests` (`min_max_requests` in svc_rdma.c, which no header exports).
const MIN_REQUESTS: u32 = 4;
/// The largest `max_requests` (`max_max_requests` in svc_rdma.c).
const MAX_REQUESTS: u32 = 16384;

/// `RPCRDMA_MIN_SLOT_TABLE`, the smallest `rdma_slot_table_entries`.
const MIN_SLOTS: u32 = bindings::RPCRDMA_MIN_SLOT_TABLE;
/// `RPCRDMA_MAX_SLOT_TABLE`, the largest `rdma_slot_table_entries`.
const MAX_SLOTS: u32 = bindings::RPCRDMA_MAX_SLOT_TABLE;

/// The client's tunables as set now (`xprt_rdma_slot_table_entries`,
/// `xprt_rdma_max_inline_{read,write}`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Client {
    /// `rdma_slot_table_entries`: the slot table size of a new transport.
    pub(crate) slot_table_entries: u32,
    /// `rdma_max_inline_read`: the largest message we accept in a Receive.
    pub(crate) max_inline_read: u32,
    /// `rdma_max_inline_write`: the largest message we Send.
    pub(crate) max_inline_write: u32,
}

impl Client {
    /// The values now, each within its sysctl's range.
    pub(crate) fn get() -> Self {
        let mut c = bindings::rpcrdma_shim_sysctl_client::default();
        // SAFETY: `c` is a valid output; the function only reads the shim's static values.
        unsafe { bindings::rpcrdma_shim_sysctl_client_get(&mut c) };
        // The handler enforces the ranges; clamped again so no caller depends on it.
        Self {
            slot_table_entries: c.slot_table_entries.clamp(MIN_SLOTS, MAX_SLOTS),
            max_inline_read: c.max_inline_read.clamp(MIN_INLINE, MAX_INLINE),
            max_inline_write: c.max_inline_write.clamp(MIN_INLINE, MAX_INLINE),
        }
    }
}

/// The server's tunables as set now (`svcrdma_max_requests`, `svcrdma_max_req_size`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Svc {
    /// `max_requests`: the credits a connection grants at most.
    pub(crate) max_requests: u32,
    /// `max_req_size`: the inline threshold both ways, and the size of each Receive buffer.
    pub(crate) max_req_size: u32,
}

impl Svc {
    /// The values now, each within its sysctl's range.
    pub(crate) fn get() -> Self {
        let mut s = bindings::rpcrdma_shim_sysctl_svc::default();
        // SAFETY: `s` is a valid output; the function only reads the shim's static values.
        unsafe { bindings::rpcrdma_shim_sysctl_svc_get(&mut s) };
        Self {
            max_requests: s.max_requests.clamp(MIN_REQUESTS, MAX_REQUESTS),
            max_req_size: s.max_req_size.clamp(MIN_REQ_SIZE, MAX_REQ_SIZE),
        }
    }
}

/// A statistic of the server, `/proc/sys/sunrpc/svc_rdma/rdma_stat_<name>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SvcStat {
    /// `rdma_stat_read`: an rdma_rw context built to RDMA Read a segment of a Read chunk
    /// (`svc_rdma_build_read_segment`).
    Read,
    /// `rdma_stat_recv`: a received message taken by `xpo_recvfrom` (`svc_rdma_recvfrom`).
    Recv,
    /// `rdma_stat_write`: an rdma_rw context built to RDMA Write (part of) a segment of a Write
    /// or Reply chunk (`svc_rdma_build_writes`).
    Write,
    /// `rdma_stat_sq_starve`: a thread found too few free Send Queue entries and waited
    /// (`svc_rdma_sq_wait`).
    SqStarve,
}

impl SvcStat {
    /// Counts one event.
    pub(crate) fn inc(self) {
        let stat = match self {
            Self::Read => bindings::rpcrdma_shim_svc_stat_RPCRDMA_SHIM_SVC_STAT_READ,
            Self::Recv => bindings::rpcrdma_shim_svc_stat_RPCRDMA_SHIM_SVC_STAT_RECV,
            Self::Write => bindings::rpcrdma_shim_svc_stat_RPCRDMA_SHIM_SVC_STAT_WRITE,
            Self::SqStarve => bindings::rpcrdma_shim_svc_stat_RPCRDMA_SHIM_SVC_STAT_SQ_STARVE,
        };
        // An index out of range is ignored by the shim.
        let stat = c_int::try_from(stat).unwrap_or(-1);
        // SAFETY: The shim checks the index and does nothing while its counters are not
        // initialised; a percpu counter may be incremented from any context.
        unsafe { bindings::rpcrdma_shim_svc_stat_inc(stat) };
    }
}

/// The sysctl files, registered for as long as this object lives.
///
/// # Invariants
///
/// While a `Registration` exists the shim's tables are registered (there is at most one: the
/// shim refuses a second with `EBUSY`).
pub(crate) struct Registration(());

impl Registration {
    /// Registers the files and initialises the statistics.
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: No precondition: the shim refuses a second registration.
        to_result(unsafe { bindings::rpcrdma_shim_sysctl_register() })?;
        // INVARIANT: Registered just above.
        Ok(Self(()))
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // SAFETY: Registered (type invariant); no handler runs once this returns, and the
        // statistics ignore increments from then on.
        unsafe { bindings::rpcrdma_shim_sysctl_unregister() };
    }
}
