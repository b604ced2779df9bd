// SPDX-License-Identifier: GPL-2.0

//! The C module's sysctls and the server's statistics, same names, modes, defaults, ranges and
//! handlers, so that an administrator's settings carry over (the two modules never load
//! together, so the names cannot clash).
//!
//! The `ctl_table`s are statics of this module ([`Table`]); each file's value is a static
//! [`Atomic`] whose address is the entry's `data`, its bounds are statics in `extra1` and
//! `extra2`, and the kernel's own handlers serve them (`proc_dointvec_minmax`, which refuses a
//! value out of range with `EINVAL` and leaves the value as it was, and `proc_dointvec`).
//! [`Registration`] puts them in `/proc/sys` for the life of the module:
//!
//! - `/proc/sys/sunrpc/`: `rdma_slot_table_entries`, `rdma_max_inline_read`,
//!   `rdma_max_inline_write` (read by [`Client::get`]: the slot table size is passed to the
//!   shim when it allocates an `rpc_xprt`), and `rdma_inline_write_padding`,
//!   `rdma_memreg_strategy`, `rdma_pad_optimize`, which the C client keeps without using them.
//!   Registered only with `CONFIG_SUNRPC_DEBUG`, as `xprt_rdma_init` does (the values keep
//!   their defaults otherwise).
//! - `/proc/sys/sunrpc/svc_rdma/`: `max_requests`, `max_req_size` (read by [`Svc::get`]),
//!   `max_outbound_read_requests` (unused, as in C), the statistics counted by
//!   [`SvcStat::inc`] (`rdma_stat_read`, `recv`, `write`, `sq_starve`: a read prints the count,
//!   any write resets it to 0, `svcrdma_counter_handler`) and five names C keeps at 0
//!   (`rdma_stat_rq_starve`, `rq_poll`, `rq_prod`, `sq_poll`, `sq_prod`: only 0 may be
//!   written).
//!
//! The statistics are `Atomic<u64>`s where C has `percpu_counter`s: the kernel crate has no
//! abstraction of those, and the raw API needs a lock class, in-place initialisation and
//! teardown, and is inline (not exported) without `CONFIG_SMP`. The price is one atomic add
//! on a cache line the counting CPUs share, once per message or rdma_rw context (never per
//! byte); in exchange an atomic needs no setup, is valid from load to unload (an event is
//! counted even before the files exist), and a read is exact.
//!
//! The transports read a value once per new connection (the slot table size once per new
//! `rpc_xprt`), so a change takes effect on the next one; the values are valid to read even
//! before the files exist (their defaults).
//!
//! C sources: `net/sunrpc/xprtrdma/transport.c` (`xr_tunables_table`),
//! `net/sunrpc/xprtrdma/svc_rdma.c` (`svcrdma_parm_table`, `svcrdma_counter_handler`).

use core::{
    fmt::Write,
    ptr::{
        self,
        NonNull, //
    }, //
};

use kernel::{
    prelude::*,
    str::Formatter,
    sync::atomic::{
        Atomic,
        Relaxed, //
    }, //
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
/// The smallest `max_outbound_read_requests` (`min_ord` in svc_rdma.c).
const MIN_ORD: u32 = 1;
/// The largest `max_outbound_read_requests` (`max_ord` in svc_rdma.c).
const MAX_ORD: u32 = 255;

/// `RPCRDMA_MIN_SLOT_TABLE`, the smallest `rdma_slot_table_entries`.
const MIN_SLOTS: u32 = bindings::RPCRDMA_MIN_SLOT_TABLE;
/// `RPCRDMA_MAX_SLOT_TABLE`, the largest `rdma_slot_table_entries`.
const MAX_SLOTS: u32 = bindings::RPCRDMA_MAX_SLOT_TABLE;

// ---- the values --------------------------------------------------------------------------

/// `rdma_slot_table_entries` (`xprt_rdma_slot_table_entries`).
static SLOT_TABLE_ENTRIES: Atomic<u32> = Atomic::new(bindings::RPCRDMA_DEF_SLOT_TABLE);
/// `rdma_max_inline_read` (`xprt_rdma_max_inline_read`).
static MAX_INLINE_READ: Atomic<u32> = Atomic::new(bindings::RPCRDMA_DEF_INLINE);
/// `rdma_max_inline_write` (`xprt_rdma_max_inline_write`).
static MAX_INLINE_WRITE: Atomic<u32> = Atomic::new(bindings::RPCRDMA_DEF_INLINE);

/// `svc_rdma/max_requests` (`svcrdma_max_requests`).
static SVC_MAX_REQUESTS: Atomic<u32> = Atomic::new(bindings::RPCRDMA_MAX_REQUESTS);
/// `svc_rdma/max_req_size` (`svcrdma_max_req_size`).
static SVC_MAX_REQ_SIZE: Atomic<u32> = Atomic::new(bindings::RPCRDMA_DEF_INLINE_THRESH);
/// `svc_rdma/max_outbound_read_requests` (`svcrdma_ord`): accepted and kept, and, as in C
/// since the server took its initiator depth from the client's connect request, used by
/// nothing.
static SVC_ORD: Atomic<u32> = Atomic::new(16);
/// The value of the five `rdma_stat_*` names C keeps only for their names: always 0.
static SVC_STAT_UNUSED: Atomic<u32> = Atomic::new(0);

/// `svc_rdma/rdma_stat_read` (`svcrdma_stat_read`).
static STAT_READ: Atomic<u64> = Atomic::new(0);
/// `svc_rdma/rdma_stat_recv` (`svcrdma_stat_recv`).
static STAT_RECV: Atomic<u64> = Atomic::new(0);
/// `svc_rdma/rdma_stat_write` (`svcrdma_stat_write`).
static STAT_WRITE: Atomic<u64> = Atomic::new(0);
/// `svc_rdma/rdma_stat_sq_starve` (`svcrdma_stat_sq_starve`).
static STAT_SQ_STARVE: Atomic<u64> = Atomic::new(0);

// ---- the API of the transports -----------------------------------------------------------

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
        // The handler enforces the ranges; clamped again so no caller depends on it.
        Self {
            slot_table_entries: SLOT_TABLE_ENTRIES.load(Relaxed).clamp(MIN_SLOTS, MAX_SLOTS),
            max_inline_read: MAX_INLINE_READ.load(Relaxed).clamp(MIN_INLINE, MAX_INLINE),
            max_inline_write: MAX_INLINE_WRITE.load(Relaxed).clamp(MIN_INLINE, MAX_INLINE),
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
        Self {
            max_requests: SVC_MAX_REQUESTS
                .load(Relaxed)
                .clamp(MIN_REQUESTS, MAX_REQUESTS),
            max_req_size: SVC_MAX_REQ_SIZE
                .load(Relaxed)
                .clamp(MIN_REQ_SIZE, MAX_REQ_SIZE),
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
    /// The counter of the statistic.
    const fn counter(self) -> &'static Atomic<u64> {
        match self {
            Self::Read => &STAT_READ,
            Self::Recv => &STAT_RECV,
            Self::Write => &STAT_WRITE,
            Self::SqStarve => &STAT_SQ_STARVE,
        }
    }

    /// Counts one event; from any context.
    pub(crate) fn inc(self) {
        self.counter().add(1, Relaxed);
    }
}

// ---- the tables --------------------------------------------------------------------------

/// A bound of a sysctl's range, pointed to by `extra1` or `extra2` (an `int`, as
/// `proc_dointvec_minmax` reads it).
type Bound = c_int;

/// A bound from a constant of the headers (all of them are far below `INT_MAX`).
const fn bound(v: u32) -> Bound {
    assert!(v <= i32::MAX as u32);
    v as Bound
}

// The bounds of the sysctls, named as the statics of transport.c and svc_rdma.c.

/// 0 (`SYSCTL_ZERO`, `zero`).
static ZERO: Bound = 0;
/// `min_max_requests`.
static MIN_MAX_REQUESTS: Bound = bound(MIN_REQUESTS);
/// `max_max_requests`.
static MAX_MAX_REQUESTS: Bound = bound(MAX_REQUESTS);
/// `min_max_inline`.
static MIN_MAX_INLINE: Bound = bound(MIN_REQ_SIZE);
/// `max_max_inline`.
static MAX_MAX_INLINE: Bound = bound(MAX_REQ_SIZE);
/// `min_ord`.
static MIN_ORD_BOUND: Bound = bound(MIN_ORD);
/// `max_ord`.
static MAX_ORD_BOUND: Bound = bound(MAX_ORD);

/// A `struct ctl_table` array, registered with `register_sysctl_sz`.
///
/// # Invariants
///
/// The entries never change. Each one's name is a static C string; its value (`data`) is a
/// static [`Atomic`] of the size in `maxlen`, which its handler only accesses atomically
/// (`proc_dointvec_minmax` and `proc_dointvec` with `READ_ONCE`/`WRITE_ONCE`,
/// [`counter_handler`] through the [`Atomic`]); its bounds (`extra1`, `extra2`) are null or
/// static [`Bound`]s, which the handler only reads.
#[repr(transparent)]
struct Table<const N: usize>([kernel::bindings::ctl_table; N]);

// SAFETY: A `Table` is never written, and its raw pointers only refer to statics that live as
// long as the module: immutable strings and bounds, and atomics that any thread may access
// (type invariants). So sharing it between threads (as the sysctl core does) is sound.
unsafe impl<const N: usize> Sync for Table<N> {}

impl<const N: usize> Table<N> {
    /// Registers the table as the directory `path` of `/proc/sys` (`register_sysctl`).
    fn register(
        &'static self,
        path: &'static CStr,
    ) -> Result<NonNull<kernel::bindings::ctl_table_header>> {
        // SAFETY: `path` is a C string and `self.0` an array of `N` valid entries (type
        // invariants), both static: the sysctl core keeps pointers to them and to what they
        // point to, all of which stay valid until the module is unloaded, after the header is
        // unregistered (`Registration`).
        let header =
            unsafe { kernel::bindings::register_sysctl_sz(path.as_char_ptr(), self.0.as_ptr(), N) };
        NonNull::new(header).ok_or(ENOMEM)
    }
}

/// The `maxlen` of an `unsigned int` sysctl.
const UINT_LEN: c_int = size_of::<c_uint>() as c_int;

/// An `unsigned int` sysctl, mode 0644, refused with `EINVAL` outside `[*min, *max]`
/// (`proc_dointvec_minmax`).
const fn minmax(
    name: &'static CStr,
    value: &'static Atomic<u32>,
    min: &'static Bound,
    max: &'static Bound,
) -> kernel::bindings::ctl_table {
    kernel::bindings::ctl_table {
        procname: name.to_bytes_with_nul().as_ptr(),
        data: value.as_ptr().cast(),
        maxlen: UINT_LEN,
        mode: 0o644,
        proc_handler: Some(kernel::bindings::proc_dointvec_minmax),
        poll: ptr::null_mut(),
        // The handler only reads the bounds: the pointers are `*mut` in C's structure only.
        extra1: ptr::from_ref(min).cast_mut().cast(),
        extra2: ptr::from_ref(max).cast_mut().cast(),
    }
}

/// A statistic, mode 0644, served by [`counter_handler`].
const fn counter(name: &'static CStr, stat: SvcStat) -> kernel::bindings::ctl_table {
    kernel::bindings::ctl_table {
        procname: name.to_bytes_with_nul().as_ptr(),
        data: stat.counter().as_ptr().cast(),
        maxlen: size_of::<u64>() as c_int,
        mode: 0o644,
        proc_handler: Some(counter_handler),
        poll: ptr::null_mut(),
        extra1: ptr::null_mut(),
        extra2: ptr::null_mut(),
    }
}

/// One of the five statistics C keeps only for their names: 0, and only 0 may be written.
const fn unused(name: &'static CStr) -> kernel::bindings::ctl_table {
    minmax(name, &SVC_STAT_UNUSED, &ZERO, &ZERO)
}

/// `svcrdma_parm_table`: `/proc/sys/sunrpc/svc_rdma/`.
static SVC_TABLE: Table<12> = Table([
    minmax(
        c"max_requests",
        &SVC_MAX_REQUESTS,
        &MIN_MAX_REQUESTS,
        &MAX_MAX_REQUESTS,
    ),
    minmax(
        c"max_req_size",
        &SVC_MAX_REQ_SIZE,
        &MIN_MAX_INLINE,
        &MAX_MAX_INLINE,
    ),
    minmax(
        c"max_outbound_read_requests",
        &SVC_ORD,
        &MIN_ORD_BOUND,
        &MAX_ORD_BOUND,
    ),
    counter(c"rdma_stat_read", SvcStat::Read),
    counter(c"rdma_stat_recv", SvcStat::Recv),
    counter(c"rdma_stat_write", SvcStat::Write),
    counter(c"rdma_stat_sq_starve", SvcStat::SqStarve),
    unused(c"rdma_stat_rq_starve"),
    unused(c"rdma_stat_rq_poll"),
    unused(c"rdma_stat_rq_prod"),
    unused(c"rdma_stat_sq_poll"),
    unused(c"rdma_stat_sq_prod"),
]);

/// The client's table, `xr_tunables_table`: `/proc/sys/sunrpc/rdma_*`, with the values only
/// it has.
#[cfg(CONFIG_SUNRPC_DEBUG)]
mod client_table {
    use core::ptr;

    use kernel::sync::atomic::Atomic;

    use super::{
        bindings,
        bound,
        minmax,
        Bound,
        Table,
        MAX_INLINE,
        MAX_INLINE_READ,
        MAX_INLINE_WRITE,
        MAX_SLOTS,
        MIN_INLINE,
        MIN_SLOTS,
        SLOT_TABLE_ENTRIES,
        UINT_LEN,
        ZERO, //
    };

    /// `rdma_memreg_strategy` (`xprt_rdma_memreg_strategy`): only FRWR exists (in C too),
    /// kept for the file's sake.
    static MEMREG_STRATEGY: Atomic<u32> = Atomic::new(bindings::rpcrdma_memreg_RPCRDMA_FRWR);
    /// `rdma_pad_optimize` (`xprt_rdma_pad_optimize`): unused in C as well (no padding
    /// optimization is left to turn off).
    static PAD_OPTIMIZE: Atomic<i32> = Atomic::new(0);
    /// `rdma_inline_write_padding`: a dummy in C since padding went away.
    static INLINE_WRITE_PADDING: Atomic<u32> = Atomic::new(0);

    /// `min_slot_table_size`.
    static MIN_SLOT_TABLE_SIZE: Bound = bound(MIN_SLOTS);
    /// `max_slot_table_size`.
    static MAX_SLOT_TABLE_SIZE: Bound = bound(MAX_SLOTS);
    /// `min_inline_size`.
    static MIN_INLINE_SIZE: Bound = bound(MIN_INLINE);
    /// `max_inline_size`.
    static MAX_INLINE_SIZE: Bound = bound(MAX_INLINE);
    /// `max_padding`.
    static MAX_PADDING: Bound = bound(kernel::page::PAGE_SIZE as u32);
    /// `min_memreg`.
    static MIN_MEMREG: Bound = bound(bindings::rpcrdma_memreg_RPCRDMA_BOUNCEBUFFERS);
    /// `max_memreg`.
    static MAX_MEMREG: Bound = bound(bindings::rpcrdma_memreg_RPCRDMA_LAST - 1);

    /// `xr_tunables_table`.
    pub(super) static TABLE: Table<6> = Table([
        minmax(
            c"rdma_slot_table_entries",
            &SLOT_TABLE_ENTRIES,
            &MIN_SLOT_TABLE_SIZE,
            &MAX_SLOT_TABLE_SIZE,
        ),
        minmax(
            c"rdma_max_inline_read",
            &MAX_INLINE_READ,
            &MIN_INLINE_SIZE,
            &MAX_INLINE_SIZE,
        ),
        minmax(
            c"rdma_max_inline_write",
            &MAX_INLINE_WRITE,
            &MIN_INLINE_SIZE,
            &MAX_INLINE_SIZE,
        ),
        minmax(
            c"rdma_inline_write_padding",
            &INLINE_WRITE_PADDING,
            &ZERO,
            &MAX_PADDING,
        ),
        minmax(
            c"rdma_memreg_strategy",
            &MEMREG_STRATEGY,
            &MIN_MEMREG,
            &MAX_MEMREG,
        ),
        kernel::bindings::ctl_table {
            procname: c"rdma_pad_optimize".to_bytes_with_nul().as_ptr(),
            data: PAD_OPTIMIZE.as_ptr().cast(),
            maxlen: UINT_LEN,
            mode: 0o644,
            proc_handler: Some(kernel::bindings::proc_dointvec),
            poll: ptr::null_mut(),
            extra1: ptr::null_mut(),
            extra2: ptr::null_mut(),
        },
    ]);
}

/// `svcrdma_counter_handler`: a read prints the counter's value and a newline, honouring the
/// offset `*ppos` and the room `*lenp`; a write of anything resets it to 0.
///
/// (C formats into an 8-byte buffer, so that a counter of 1,000,000 or more reads as
/// `EFAULT`, and copies from the start of the text whatever the offset; the buffer here holds
/// any value, and a read from an offset gets the rest of the text.)
///
/// # Safety
///
/// Called by the sysctl core for an entry built by [`counter`]: `table` is that entry, whose
/// `data` points to a static `Atomic<u64>`; `lenp` and `ppos` are valid, and for a read
/// `buffer` is valid for writes of `*lenp` bytes.
unsafe extern "C" fn counter_handler(
    table: *const kernel::bindings::ctl_table,
    dir: c_int,
    buffer: *mut c_void,
    lenp: *mut usize,
    ppos: *mut kernel::bindings::loff_t,
) -> c_int {
    // SAFETY: `table` is an entry built by `counter` (function safety requirement), which
    // never changes and whose `data` points to a static `Atomic<u64>`.
    let stat = unsafe { &*(*table).data.cast::<Atomic<u64>>() };
    // SYSCTL_USER_TO_KERN(dir): a write.
    if dir != 0 {
        stat.store(0, Relaxed);
        return 0;
    }
    let mut text = [0u8; 24];
    let mut f = Formatter::new(&mut text);
    if writeln!(f, "{}", stat.load(Relaxed)).is_err() {
        return EFAULT.to_errno();
    }
    let len = f.bytes_written();
    // SAFETY: `lenp` and `ppos` are valid (function safety requirement).
    let (room, pos) = unsafe { (&mut *lenp, &mut *ppos) };
    // A negative offset is past the end too: nothing to read.
    let rest = usize::try_from(*pos)
        .ok()
        .and_then(|p| text.get(p..len))
        .unwrap_or(&[]);
    let n = rest.len().min(*room);
    // SAFETY: `buffer` is valid for writes of `*room` bytes, at least `n` (function safety
    // requirement); `rest` is on this stack, so the two do not overlap.
    unsafe { ptr::copy_nonoverlapping(rest.as_ptr(), buffer.cast::<u8>(), n) };
    *room = n;
    // At most the 24 bytes of `text`.
    *pos += n as kernel::bindings::loff_t;
    0
}

// ---- registration ------------------------------------------------------------------------

/// The sysctl files, registered for as long as this object lives.
///
/// # Invariants
///
/// `svc` (and `client`) are the headers `register_sysctl_sz` returned for [`SVC_TABLE`]
/// (and the client's table), not yet unregistered.
pub(crate) struct Registration {
    /// `/proc/sys/sunrpc/svc_rdma/`.
    svc: NonNull<kernel::bindings::ctl_table_header>,
    /// `/proc/sys/sunrpc/rdma_*`.
    #[cfg(CONFIG_SUNRPC_DEBUG)]
    client: NonNull<kernel::bindings::ctl_table_header>,
}

// SAFETY: A `Registration` only holds the headers, to unregister them, which may be done from
// any thread.
unsafe impl Send for Registration {}

// SAFETY: A `Registration` has no method that takes `&self`.
unsafe impl Sync for Registration {}

impl Registration {
    /// Registers the server's files, then (with `CONFIG_SUNRPC_DEBUG`) the client's.
    pub(crate) fn new() -> Result<Self> {
        let svc = SVC_TABLE.register(c"sunrpc/svc_rdma")?;
        #[cfg(CONFIG_SUNRPC_DEBUG)]
        let client = match client_table::TABLE.register(c"sunrpc") {
            Ok(client) => client,
            Err(e) => {
                // SAFETY: Registered just above, and no longer used.
                unsafe { kernel::bindings::unregister_sysctl_table(svc.as_ptr()) };
                return Err(e);
            }
        };
        // INVARIANT: Registered just above.
        Ok(Self {
            svc,
            #[cfg(CONFIG_SUNRPC_DEBUG)]
            client,
        })
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // The reverse order of `new`.
        #[cfg(CONFIG_SUNRPC_DEBUG)]
        // SAFETY: Registered and not yet unregistered (type invariants); no handler of the
        // table runs once this returns, so the table and its values may go with the module.
        unsafe {
            kernel::bindings::unregister_sysctl_table(self.client.as_ptr());
        }
        // SAFETY: As above.
        unsafe { kernel::bindings::unregister_sysctl_table(self.svc.as_ptr()) };
    }
}
