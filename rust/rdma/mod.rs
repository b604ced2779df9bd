// SPDX-License-Identifier: GPL-2.0

//! Abstractions over the kernel's RDMA stack, for the client and server transports.
//!
//! - [`cm`]: RDMA connection manager ids (`struct rdma_cm_id`) and their event handlers.
//! - [`verbs`]: devices, protection domains, completion queues, queue pairs, DMA-mapped buffers
//!   and the Receive and Send work requests posted on them.
//! - [`mr`]: fast-registration memory regions (FRWR) over lists of pages.
//! - [`rw`]: RDMA Read and Write contexts (`rdma_rw_ctx`) and chains of them.
//! - [`removal`]: the module's `ib_client`, and notifications of a device's removal.
//! - [`work`]: cancelling a delayed work item held through an `Arc` (timers of connections).
//!
//! Every `unsafe` block of the RDMA side lives here; the transports use these types from
//! `#![forbid(unsafe_code)]` modules. Ownership decides teardown order: a [`verbs::Qp`] holds
//! its completion queues, its protection domain and the cm id it was created on, so the QP is
//! destroyed first, then the CQs, the PD and last the cm id, whatever order the owner drops
//! them in. PDs, CQs and DMA mappings hold a reference on their device (`ib_device_try_get`),
//! so they stay valid even when they outlive the cm id.
//!
//! [`COUNTERS`] counts every object allocated and freed, so a test (and later debugfs and
//! mountstats) can check that nothing leaks.
//!
//! C headers: [`include/rdma/rdma_cm.h`](srctree/include/rdma/rdma_cm.h),
//! [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use kernel::sync::atomic::{
    Atomic,
    Relaxed, //
};

pub(crate) mod cm;
#[cfg(CONFIG_KUNIT = "y")]
mod kunit;
pub(crate) mod mr;
pub(crate) mod ratelimit;
pub(crate) mod removal;
pub(crate) mod rw;
pub(crate) mod verbs;
pub(crate) mod work;

/// Allocations and releases of one kind of object.
pub(crate) struct Counter {
    allocated: Atomic<u64>,
    freed: Atomic<u64>,
}

impl Counter {
    const fn new() -> Self {
        Self {
            allocated: Atomic::new(0),
            freed: Atomic::new(0),
        }
    }

    pub(crate) fn alloc(&self) {
        self.allocated.add(1, Relaxed);
    }

    pub(crate) fn free(&self) {
        self.freed.add(1, Relaxed);
    }

    /// Objects allocated since the module was loaded.
    pub(crate) fn allocated(&self) -> u64 {
        self.allocated.load(Relaxed)
    }

    /// Objects freed since the module was loaded.
    pub(crate) fn freed(&self) -> u64 {
        self.freed.load(Relaxed)
    }

    /// Objects alive now: negative if more were released than allocated (a double release,
    /// which must show, not be hidden).
    pub(crate) fn live(&self) -> i64 {
        // `freed` is read first: an object is counted allocated before it can be freed.
        let freed = self.freed();
        self.allocated().wrapping_sub(freed) as i64
    }
}

/// Counters of the RDMA objects this module owns.
pub(crate) struct Counters {
    /// `rdma_cm_id`s created or adopted, and destroyed.
    pub(crate) ids: Counter,
    /// References on `ib_device`s.
    pub(crate) devices: Counter,
    /// Protection domains.
    pub(crate) pds: Counter,
    /// Completion queues.
    pub(crate) cqs: Counter,
    /// Queue pairs.
    pub(crate) qps: Counter,
    /// DMA mappings of buffers.
    pub(crate) dma_maps: Counter,
    /// Work requests posted and completed (or failed to post).
    pub(crate) posted: Counter,
    /// Fast-registration memory regions.
    pub(crate) mrs: Counter,
    /// DMA mappings of memory regions (one per registration).
    pub(crate) mr_maps: Counter,
    /// rdma_rw contexts ([`rw::Ctx`]).
    pub(crate) rw_ctxs: Counter,
    /// Scatterlists for rdma_rw ([`rw::SgTable`]).
    pub(crate) sgts: Counter,
    /// Objects holding an rdma_rw context and its scatterlist, in use or cached
    /// ([`rw::RwCache`]).
    pub(crate) rw_objs: Counter,
    /// Device removal notifications ([`removal::Notification`]).
    pub(crate) removals: Counter,
    /// Backward requests of the client's backchannel (`sunrpc::xprt::BcRqst`), counted here
    /// with the module's other objects; the `rdma` layer never touches them.
    pub(crate) bc_rqsts: Counter,
}

impl Counters {
    /// The counters by name.
    fn all(&self) -> [(&'static str, &Counter); 14] {
        [
            ("cm_ids", &self.ids),
            ("devices", &self.devices),
            ("pds", &self.pds),
            ("cqs", &self.cqs),
            ("qps", &self.qps),
            ("dma_maps", &self.dma_maps),
            ("posted_wrs", &self.posted),
            ("mrs", &self.mrs),
            ("mr_maps", &self.mr_maps),
            ("rw_ctxs", &self.rw_ctxs),
            ("sgts", &self.sgts),
            ("rw_objs", &self.rw_objs),
            ("removal_notifications", &self.removals),
            ("bc_rqsts", &self.bc_rqsts),
        ]
    }

    /// Writes one line per kind of object: its name, then how many were allocated, freed,
    /// and are alive (the debugfs file `rpcrdma_rs/counters`; negative after an over-release).
    pub(crate) fn write(&self, f: &mut kernel::fmt::Formatter<'_>) -> kernel::fmt::Result {
        for (name, c) in self.all() {
            writeln!(f, "{name} {} {} {}", c.allocated(), c.freed(), c.live())?;
        }
        Ok(())
    }

    /// Logs each kind of object still alive (or over-released), for the unload line that says
    /// something leaked.
    pub(crate) fn warn_live(&self) {
        for (name, c) in self.all() {
            let live = c.live();
            if live != 0 {
                kernel::pr_warn!(
                    "{name}: {live} live ({} allocated, {} freed)\n",
                    c.allocated(),
                    c.freed()
                );
            }
        }
    }

    /// Objects of all kinds alive now, each kind counting its over-releases too; zero when
    /// nothing leaks and nothing was released twice.
    pub(crate) fn live(&self) -> u64 {
        self.all()
            .iter()
            .map(|(_, c)| c.live().unsigned_abs())
            .sum()
    }
}

/// The module's RDMA object counters.
pub(crate) static COUNTERS: Counters = Counters {
    ids: Counter::new(),
    devices: Counter::new(),
    pds: Counter::new(),
    cqs: Counter::new(),
    qps: Counter::new(),
    dma_maps: Counter::new(),
    posted: Counter::new(),
    mrs: Counter::new(),
    mr_maps: Counter::new(),
    rw_ctxs: Counter::new(),
    sgts: Counter::new(),
    rw_objs: Counter::new(),
    removals: Counter::new(),
    bc_rqsts: Counter::new(),
};
