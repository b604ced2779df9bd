// SPDX-License-Identifier: GPL-2.0

//! Client transport class: what `mount -o proto=rdma` reaches through `xprt_create_transport`.
//!
//! The C shim (`shim/xprt.c`) holds the class object (a flexible array) and the layout of the
//! `struct rpc_xprt`: it allocates it with `xprt_alloc` and fills it as `xprt_setup_rdma` does.
//! The class's `setup` and the transports' `rpc_xprt_ops` table are [`Adapter`]'s: the table
//! uses the generic sunrpc helpers where the C transport does (congestion control, slots,
//! rpcbind) and the adapter's functions, which call an [`RpcXprtOps`] implementation, for the
//! rest. The Rust transport object is
//! an `Arc<T>` kept in the xprt's private area (boxed with an [`RpcXprtLink`] to the xprt) from
//! `setup` until `destroy`, which hands it back to [`RpcXprtOps::destroy`] exactly once.
//!
//! Two handles give the transport logic access to the `rpc_xprt` without raw pointers:
//!
//! - [`Connect`]: the connect lock, handed to [`RpcXprtOps::connect`] and given back with
//!   [`Connect::done`]. While it exists the transport is locked (`XPRT_LOCKED`), so sunrpc
//!   cannot start destroying it.
//! - [`RpcXprtLink`]: a revocable reference for contexts that sunrpc does not serialize (rdma_cm
//!   events); the adapter revokes it before `destroy`.
//!
//! C header: [`include/linux/sunrpc/xprt.h`](srctree/include/linux/sunrpc/xprt.h)

use core::{
    ffi::c_void,
    marker::PhantomData,
    mem::{
        ManuallyDrop,
        MaybeUninit, //
    },
    ops::Range,
    ptr::{
        self,
        NonNull, //
    },
};

use kernel::{
    alloc::flags::{
        __GFP_NOWARN,
        GFP_ATOMIC,
        GFP_KERNEL,
        GFP_NOWAIT, //
    },
    c_str,
    error::to_result,
    ffi::{
        c_int,
        c_long,
        c_ulong, //
    },
    new_spinlock,
    page::{
        Page,
        PAGE_SHIFT,
        PAGE_SIZE, //
    },
    prelude::*,
    seq_file::SeqFile,
    seq_print,
    str::CString,
    sync::{
        atomic::{
            atomic_load,
            atomic_store,
            Relaxed, //
        },
        barrier::{
            smp_mb,
            Full, //
        },
        Arc,
        SpinLock, //
    },
    time::{
        msecs_to_jiffies,
        Jiffies, //
    },
    types::{
        ForeignOwnable,
        Opaque, //
    },
    workqueue::Queue, //
};

use super::{
    sysctl,
    xdr::{
        Pages,
        XdrParts, //
    },
};
use crate::{
    bindings,
    proto::marshal::XdrBuf,
    rdma::{
        cm::{
            Net,
            SockAddr,
            AF_INET,
            AF_INET6, //
        },
        verbs::{
            Done,
            Wr, //
        },
        COUNTERS,
    },
};

/// Address families a transport can be asked to reach.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    /// `AF_INET`, netid `rdma`.
    Inet,
    /// `AF_INET6`, netid `rdma6`.
    Inet6,
    /// Anything else (sunrpc validated nothing yet).
    Other(u16),
}

impl From<u16> for Family {
    fn from(v: u16) -> Self {
        match v {
            AF_INET => Self::Inet,
            AF_INET6 => Self::Inet6,
            v => Self::Other(v),
        }
    }
}

/// The arguments of a transport setup (`struct xprt_create`), borrowed for the call.
///
/// # Invariants
///
/// `ptr` points to a valid `struct xprt_create` for the lifetime `'a`.
pub(crate) struct CreateArgs<'a> {
    ptr: *mut bindings::xprt_create,
    _p: PhantomData<&'a bindings::xprt_create>,
}

impl CreateArgs<'_> {
    /// Address family of the server to reach.
    pub(crate) fn family(&self) -> Family {
        // SAFETY: By the type invariant `self.ptr` is a valid `struct xprt_create`.
        let sa = unsafe { (*self.ptr).dstaddr };
        // SAFETY: `dstaddr` is null or the valid `struct sockaddr` of the request.
        Family::from(unsafe { SockAddr::raw_family(sa) })
    }

    /// The server to reach, an IPv4 or IPv6 address.
    fn dst(&self) -> Option<SockAddr> {
        // SAFETY: By the type invariant `self.ptr` is a valid `struct xprt_create`.
        let (sa, len) = unsafe { ((*self.ptr).dstaddr, (*self.ptr).addrlen) };
        // SAFETY: `dstaddr` is null or a `struct sockaddr_storage` holding `addrlen` bytes.
        unsafe { SockAddr::from_raw(sa, len) }
    }
}

/// The defaults of a new transport, as `xprt_setup_rdma` (net/sunrpc/xprtrdma/xprt_rdma.h).
mod defaults {
    use kernel::page::PAGE_SIZE;

    /// `RPCRDMA_BIND_TO`: how long rpcbind may take, in milliseconds.
    pub(super) const BIND_TO_MS: u32 = 60 * 1000;
    /// `RPCRDMA_INIT_REEST_TO`: the first reconnect's back-off, in milliseconds. Twice this
    /// is the lowest connect timeout `set_connect_timeout` sets.
    pub(super) const INIT_REEST_TO_MS: u32 = 5 * 1000;
    /// `RPCRDMA_IDLE_DISC_TO`: an idle transport disconnects after this, in milliseconds.
    pub(super) const IDLE_DISC_TO_MS: u32 = 5 * 60 * 1000;
    /// `RPCRDMA_MAX_DATA_SEGS << PAGE_SHIFT`: the payload limit until a connection sets the
    /// real one.
    pub(super) const MAX_PAYLOAD: u32 = (((1 << 20) / PAGE_SIZE + 1) * PAGE_SIZE) as u32;
    /// The IANA port of NFS over RDMA (RFC 8267), used when the mount gives none.
    pub(super) const PORT: u16 = 20049;
}

/// Bytes as lower-case hexadecimal digits, two per byte (`%pi6` for an IPv6 address).
struct Hex<'a>(&'a [u8]);

impl kernel::fmt::Display for Hex<'_> {
    fn fmt(&self, f: &mut kernel::fmt::Formatter<'_>) -> kernel::fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

/// One of the spinlocks of an `rpc_xprt`.
#[derive(Clone, Copy)]
enum Lock {
    /// `queue_lock`: the requests waiting for replies.
    Queue,
    /// `transport_lock`: the congestion window and the timeouts.
    Transport,
}

/// A `struct rpc_xprt` of this class.
///
/// # Invariants
///
/// A shared reference to an `RpcXprt` is only created (by [`Connect`], [`RpcXprtLink`] and
/// [`RpcRqst::xprt`], and by the adapter's setup and ops for the xprt sunrpc calls them with)
/// for an `rpc_xprt` set up by `XprtMem::create` that stays alive while it is
/// borrowed, or (by the server's backchannel, `sunrpc::svc`) for one set up by
/// `BcAdapter::setup_callback` (`sunrpc::svc`), of which only the address strings,
/// [`RpcXprt::complete_locked`] and [`RpcXprt::set_credits`] are used.
#[repr(transparent)]
pub(crate) struct RpcXprt(Opaque<bindings::rpc_xprt>);

impl RpcXprt {
    /// # Safety
    ///
    /// `ptr` is an `rpc_xprt` of this class that stays alive for `'a`, or a backchannel one (see
    /// the type invariants).
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::rpc_xprt) -> &'a Self {
        // SAFETY: `RpcXprt` is a transparent wrapper of `rpc_xprt`; the caller guarantees that it
        // is alive for `'a`.
        unsafe { &*ptr.cast::<Self>() }
    }

    fn as_ptr(&self) -> *mut bindings::rpc_xprt {
        self.0.get()
    }

    /// The network namespace of the transport (`xprt_net`): its connections are made there.
    pub(crate) fn net(&self) -> Result<Net<'_>> {
        // SAFETY: The xprt is alive (type invariant); `xprt_net` is set once, at allocation.
        let p = unsafe { (*self.as_ptr()).xprt_net };
        // SAFETY: An xprt holds a reference on its namespace for as long as it lives.
        unsafe { Net::from_raw(p) }
    }

    /// The slot table size (`xprt->max_reqs`): `rdma_slot_table_entries` when the transport
    /// was created. A connection provisions for this many requests (`re_max_requests`).
    pub(crate) fn max_reqs(&self) -> u32 {
        // SAFETY: The xprt is alive (type invariant); `max_reqs` is set once, at allocation.
        unsafe { (*self.as_ptr()).max_reqs }
    }

    /// The server's address (`xprt->addr`), with the port the transport connects to.
    pub(crate) fn peer(&self) -> Result<SockAddr> {
        // SAFETY: The xprt is alive (type invariant); this only takes the address of a field.
        let sa = unsafe { &raw const (*self.as_ptr()).addr }.cast::<bindings::sockaddr>();
        let len = size_of::<bindings::__kernel_sockaddr_storage>();
        // SAFETY: `sa` is the `struct sockaddr_storage` of the live xprt, aligned for any
        // address, written once at creation and by `set_port` (rpcbind), never shortened.
        unsafe { SockAddr::from_raw(sa, len) }.ok_or(EAFNOSUPPORT)
    }

    /// Fills the address strings sunrpc shows for the transport (`xprt->address_strings`:
    /// `/proc/fs/nfsfs`, mountstats, rpcbind, debug messages), as
    /// `xprt_rdma_format_addresses`: the address as `rpc_ntop` prints it (`%pI4`, or `%pI6c` with
    /// `%<scope id>` for a link-local address), its hexadecimal form (`%08x` of the IPv4 address
    /// in host order, `%pi6`), the port (see [`RpcXprt::format_port`]), the protocol `rdma` and the
    /// netid `rdma` or `rdma6`.
    pub(super) fn format_addresses(&self) {
        let Ok(peer) = self.peer() else {
            return;
        };
        let (hex, addr, netid) = match peer {
            SockAddr::V4 { addr, .. } => (
                CString::try_from_fmt(fmt!("{:08x}", u32::from_be_bytes(addr))),
                CString::try_from_fmt(fmt!("{}", peer.host())),
                bindings::RPCBIND_NETID_RDMA.as_slice(),
            ),
            SockAddr::V6 { addr, scope_id, .. } => {
                let link_local = addr[0] == 0xfe && addr[1] & 0xc0 == 0x80;
                let text = if link_local && scope_id != 0 {
                    CString::try_from_fmt(fmt!("{}%{}", peer.host(), scope_id))
                } else {
                    CString::try_from_fmt(fmt!("{}", peer.host()))
                };
                (
                    CString::try_from_fmt(fmt!("{}", Hex(&addr))),
                    text,
                    bindings::RPCBIND_NETID_RDMA6.as_slice(),
                )
            }
        };
        self.set_address(
            bindings::rpc_display_format_t_RPC_DISPLAY_NETID,
            CStr::from_bytes_with_nul(netid).ok(),
        );
        self.set_address(
            bindings::rpc_display_format_t_RPC_DISPLAY_HEX_ADDR,
            hex.as_deref().ok(),
        );
        self.set_address(
            bindings::rpc_display_format_t_RPC_DISPLAY_ADDR,
            addr.as_deref().ok(),
        );
        self.format_port();
        self.set_address(
            bindings::rpc_display_format_t_RPC_DISPLAY_PROTO,
            Some(c_str!("rdma")),
        );
    }

    /// Fills the port's address strings: decimal, and hexadecimal (`%4hx`), as
    /// `xprt_rdma_format_port`.
    fn format_port(&self) {
        let Ok(peer) = self.peer() else {
            return;
        };
        let port = match peer {
            SockAddr::V4 { port, .. } | SockAddr::V6 { port, .. } => port,
        };
        let dec = CString::try_from_fmt(fmt!("{port}"));
        let hex = CString::try_from_fmt(fmt!("{port:4x}"));
        self.set_address(
            bindings::rpc_display_format_t_RPC_DISPLAY_PORT,
            dec.as_deref().ok(),
        );
        self.set_address(
            bindings::rpc_display_format_t_RPC_DISPLAY_HEX_PORT,
            hex.as_deref().ok(),
        );
    }

    /// Frees every address string (`destroy`).
    pub(super) fn free_addresses(&self) {
        for which in 0..bindings::rpc_display_format_t_RPC_DISPLAY_MAX {
            self.set_address(which, None);
        }
    }

    /// Replaces one address string (`enum rpc_display_format_t` `which`) with a copy of `s`,
    /// or none (also if the copy fails, as in C).
    fn set_address(&self, which: bindings::rpc_display_format_t, s: Option<&CStr>) {
        let Ok(which) = usize::try_from(which) else {
            return;
        };
        // SAFETY: The xprt is alive (type invariant); this only takes the address of a field.
        let strings = unsafe { &raw mut (*self.as_ptr()).address_strings };
        // SAFETY: `strings` is valid; `which` is checked against its length.
        let Some(slot) = (unsafe { &mut *strings }).get_mut(which) else {
            return;
        };
        let copy = match s {
            // SAFETY: `s` is a string valid for the call, which `kstrdup` copies.
            Some(s) => unsafe {
                kernel::bindings::kstrdup(s.as_char_ptr(), kernel::bindings::GFP_KERNEL)
            },
            None => ptr::null_mut(),
        };
        // SAFETY: sunrpc serializes the writers of the address strings (setup, before the xprt
        // is returned; `set_port`; `destroy`, after its last use), and each is null or a
        // `kstrdup` copy owned by the xprt, replaced here once.
        unsafe { kernel::bindings::kfree(core::mem::replace(slot, copy).cast::<c_void>()) };
    }

    /// Runs `f` holding the xprt's spinlock `which`.
    fn locked<R>(&self, which: Lock, f: impl FnOnce() -> R) -> R {
        let x = self.as_ptr();
        // SAFETY: The xprt is alive (type invariant); this only takes the address of a field.
        let lock = unsafe {
            match which {
                Lock::Queue => &raw mut (*x).queue_lock,
                Lock::Transport => &raw mut (*x).transport_lock,
            }
        }
        .cast::<kernel::bindings::spinlock_t>();
        // SAFETY: A spinlock of the live xprt, which `xprt_alloc` initialised; the bindgen type
        // of the field and the kernel's are the same C type.
        unsafe { kernel::bindings::spin_lock(lock) };
        let r = f();
        // SAFETY: Taken above.
        unsafe { kernel::bindings::spin_unlock(lock) };
        r
    }

    /// The request waiting for the reply `xid`, pinned (`xprt_pin_rqst` under `queue_lock`,
    /// as `rpcrdma_reply_handler`); `None` if there is none (a late or bogus reply, counted
    /// in `bad_xids`).
    pub(crate) fn lookup(&self, xid: u32) -> Option<Pinned> {
        let x = self.as_ptr();
        // SAFETY: The xprt is alive (type invariant) and so is its `queue_lock`; a request
        // found under the lock is live, and pinned before the lock is let go.
        let p = self.locked(Lock::Queue, || unsafe {
            let r = bindings::xprt_lookup_rqst(x, xid.to_be());
            if !r.is_null() {
                bindings::xprt_pin_rqst(r);
            }
            r
        });
        // INVARIANT: `p` is null or pinned above.
        NonNull::new(p).map(|ptr| Pinned { ptr })
    }

    /// Completes the request waiting for the reply `xid` with the reply `f` places in it, in
    /// one `queue_lock` section: `f` runs on the request found (`xprt_lookup_rqst`) and
    /// returns the reply's length, with which it is completed (`xprt_complete_rqst`) before the
    /// lock is let go, so no other receiver finds it in between and none completes it twice
    /// (`svc_rdma_handle_bc_reply` copies under the lock too, but pins the request and
    /// completes it in a second section, between which a second Reply with the same XID can
    /// find it again). No pin is needed: the request cannot be released while the lock is
    /// held. `f` runs under a spinlock and must not sleep.
    ///
    /// `ENOENT` if no request waits for `xid`; if `f` fails, its error, and the request keeps
    /// waiting.
    pub(crate) fn complete_locked(
        &self,
        xid: u32,
        f: impl FnOnce(&RpcRqst) -> Result<u32>,
    ) -> Result {
        let x = self.as_ptr();
        self.locked(Lock::Queue, || {
            // SAFETY: The xprt is alive (type invariant) and its `queue_lock` is held.
            let r = unsafe { bindings::xprt_lookup_rqst(x, xid.to_be()) };
            if r.is_null() {
                return Err(ENOENT);
            }
            // SAFETY: A request found on the receive queue is live with its buffers while it is
            // on it (`RPC_TASK_NEED_RECV`): it leaves it under `queue_lock`
            // (`xprt_request_dequeue_xprt`, before `buf_free` frees the buffers), which is held
            // until `f` returns. The borrow does not outlive `f`.
            let len = f(unsafe { RpcRqst::from_raw(r) })?;
            // SAFETY: As above, the request and its task are live; completed under
            // `queue_lock`, which takes it off the receive queue, so no later lookup finds it.
            unsafe { bindings::xprt_complete_rqst((*r).rq_task, len as c_int) };
            Ok(())
        })
    }

    /// Sets the congestion window to `credits` requests (`__rpcrdma_update_cwnd_locked`).
    pub(crate) fn set_credits(&self, credits: u32) {
        let x = self.as_ptr();
        // SAFETY: The xprt is alive (type invariant); `cwnd` is written under its
        // `transport_lock`, as sunrpc does.
        self.locked(Lock::Transport, || unsafe {
            (*x).cwnd = (credits as c_ulong) << bindings::RPC_CWNDSHIFT;
        });
    }

    /// The module's transport workqueue (`rpcrdma_rs_connect`: unbound, `WQ_MEM_RECLAIM`), on
    /// which connects and a connection's other sleeping work run; drained before the module
    /// can be unloaded.
    pub(crate) fn workqueue(&self) -> &Queue {
        // SAFETY: The shim allocates the workqueue before it registers the class and destroys
        // it in module exit, after unregistering it; a live transport (type invariant) holds a
        // module reference, so the workqueue outlives the borrow of `self`.
        let wq = unsafe { bindings::rpcrdma_shim_xprt_wq_get() };
        // SAFETY: `wq` is live for the borrow (see above); the bindgen opaque type and the
        // kernel's are the same C type.
        unsafe { Queue::from_raw(wq.cast()) }
    }

    /// The transport is out of a resource a send needs (MRs, Send buffers): the next
    /// transmission waits until [`RpcXprt::write_space`] (`xprt_wait_for_buffer_space`). A send
    /// that calls this returns `EAGAIN`.
    pub(crate) fn wait_for_buffer_space(&self) {
        // SAFETY: The xprt is alive (type invariant); the function only sets a bit.
        unsafe { bindings::xprt_wait_for_buffer_space(self.as_ptr()) };
    }

    /// What a send waited for is back: wakes the transmission waiting for it
    /// (`xprt_write_space`), if any.
    pub(crate) fn write_space(&self) {
        // SAFETY: The xprt is alive (type invariant); the function only takes spinlocks.
        unsafe { bindings::xprt_write_space(self.as_ptr()) };
    }

    /// The connect cookie: a new value for each connection (and each close).
    pub(super) fn connect_cookie(&self) -> u32 {
        // SAFETY: The xprt is alive (type invariant); a plain read, as in the C transport.
        unsafe { (*self.as_ptr()).connect_cookie }
    }

    /// Requests holding a congestion slot (`cong >> RPC_CWNDSHIFT`): those sent and not yet
    /// answered, the one being sent included once it has its slot. Read without the transport
    /// lock, so it may be stale, but while a request is sent (`XPRT_LOCKED`) no other request
    /// takes a slot: the value can only be too high, never too low.
    pub(crate) fn congested_requests(&self) -> u32 {
        // SAFETY: The xprt is alive (type invariant); `cong` is written under the transport
        // lock, and a volatile load of an aligned `unsigned long` is `READ_ONCE`'s.
        let cong = unsafe { core::ptr::read_volatile(&raw const (*self.as_ptr()).cong) };
        u32::try_from(cong >> bindings::RPC_CWNDSHIFT).unwrap_or(u32::MAX)
    }

    /// Whether the transport is connected (`xprt_connected`: `XPRT_CONNECTED` of `state`).
    pub(super) fn connected(&self) -> bool {
        // SAFETY: The xprt is alive (type invariant); sunrpc changes `state` only with atomic
        // bit operations, and this load is `test_bit`'s.
        let state = unsafe { atomic_load(&raw mut (*self.as_ptr()).state, Relaxed) };
        state & (1 << bindings::XPRT_CONNECTED) != 0
    }

    /// Prints the start of mountstats' `xprt: rdma` line, as `xprt_rdma_print_stats`: the
    /// generic counters of `xprt->stat`, with the seconds idle if `idle` and connected (else
    /// 0). sunrpc updates them without a lock, as C reads them: a value may be a moment old.
    pub(super) fn print_generic_stats(&self, seq: &SeqFile, idle: bool) {
        let x = self.as_ptr();
        // SAFETY: The xprt is alive (type invariant); the counters are plain integers.
        let g = unsafe { core::ptr::read_volatile(&raw const (*x).stat) };
        let hz = kernel::bindings::HZ as c_ulong;
        let idle_secs = if idle && self.connected() {
            // SAFETY: `jiffies` and the live xprt's `last_used` are read as `READ_ONCE` would.
            let (now, last) = unsafe {
                (
                    core::ptr::read_volatile(&raw const kernel::bindings::jiffies),
                    core::ptr::read_volatile(&raw const (*x).last_used),
                )
            };
            (now.wrapping_sub(last) as c_long) / hz as c_long
        } else {
            0
        };
        seq_print!(seq, "\txprt:\trdma ");
        seq_print!(
            seq,
            "{} {} {} {} {} {} {} {} {} {} ",
            0, // need a local port?
            g.bind_count,
            g.connect_count,
            g.connect_time / hz,
            idle_secs,
            g.sends,
            g.recvs,
            g.bad_xids,
            g.req_u,
            g.bklog_u
        );
    }

    /// A reply arrived: the next reconnect needs no back-off.
    pub(crate) fn reply_seen(&self) {
        let to = self.as_ptr();
        // SAFETY: The xprt is alive (type invariant); as in the C transport, a plain store that
        // the next connect reads (`WRITE_ONCE` here), made only when it is needed.
        unsafe {
            let p = &raw mut (*to).reestablish_timeout;
            if atomic_load(p, Relaxed) != 0 {
                atomic_store(p, 0, Relaxed);
            }
        }
    }

    /// Whether a callback service is attached (`xprt->bc_serv`, as `rpcrdma_is_bcall`): only
    /// then can a backward Call be served. A hint: the service may go away right after.
    /// Never without `CONFIG_SUNRPC_BACKCHANNEL`.
    pub(crate) fn has_bc_serv(&self) -> bool {
        #[cfg(not(CONFIG_SUNRPC_BACKCHANNEL))]
        return false;
        #[cfg(CONFIG_SUNRPC_BACKCHANNEL)]
        // SAFETY: The xprt is alive (type invariant); `bc_serv` is read once (`READ_ONCE`), as
        // sunrpc sets and clears it under its own lock.
        unsafe {
            !atomic_load(&raw mut (*self.as_ptr()).bc_serv, Relaxed).is_null()
        }
    }

    /// Closes the connection from any context (`xprt_force_disconnect`): sunrpc calls
    /// [`RpcXprtOps::close`] once the transport is idle, and reconnects on demand.
    pub(crate) fn force_disconnect(&self) {
        // SAFETY: The xprt is alive (type invariant); the function only takes spinlocks.
        unsafe { bindings::xprt_force_disconnect(self.as_ptr()) };
    }
}

/// The layout of one `struct xdr_buf` of a request.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct XdrLayout {
    /// The pieces, as the marshaling code sees them.
    pub(crate) buf: XdrBuf,
    /// `xdr->len`.
    pub(crate) len: u32,
    /// `xdr->buflen`.
    pub(crate) buflen: u32,
}

impl From<&bindings::xdr_buf> for XdrLayout {
    fn from(b: &bindings::xdr_buf) -> Self {
        let p = XdrParts::of(b);
        Self {
            buf: XdrBuf {
                head_len: p.head_len,
                page_base: p.page_base,
                page_len: p.page_len,
                tail_len: p.tail_len,
                // `offset_in_page()` of the tail.
                tail_page_offset: (p.tail as usize & (PAGE_SIZE - 1)) as u32,
            },
            len: b.len,
            buflen: b.buflen,
        }
    }
}

/// One of the three `xdr_buf`s of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RqstBuf {
    /// `rq_snd_buf`, the call.
    Call,
    /// `rq_rcv_buf`, where the reply goes.
    Reply,
    /// `rq_private_buf`, which sunrpc decodes the reply from.
    Private,
}

/// One of the two buffers of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Buf {
    /// The call (`rq_snd_buf`).
    Call,
    /// The reply buffer (`rq_rcv_buf`).
    Reply,
}

/// What the send path needs to know of a request.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RqstInfo {
    /// The transaction id, in host order.
    pub(crate) xid: u32,
    /// The call (`rq_snd_buf`).
    pub(crate) snd: XdrLayout,
    /// The reply buffer (`rq_rcv_buf`).
    pub(crate) rcv: XdrLayout,
    /// The auth flavour leaves the payload alone, so it may be placed directly.
    pub(crate) ddp_allowed: bool,
    /// The call's page list is a payload (`XDRBUF_WRITE`).
    pub(crate) write_payload: bool,
    /// The reply's page list receives a payload (`XDRBUF_READ`).
    pub(crate) read_payload: bool,
}

/// An RPC request of this transport (`struct rpc_rqst`), borrowed from sunrpc for a callback
/// or kept alive by a [`Pinned`] reference.
///
/// # Invariants
///
/// A shared reference to a `RpcRqst` exists only while the request is alive and its buffers are
/// not freed.
#[repr(transparent)]
pub(crate) struct RpcRqst(Opaque<bindings::rpc_rqst>);

impl RpcRqst {
    /// # Safety
    ///
    /// `ptr` is a live request whose buffers stay allocated for `'a`.
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::rpc_rqst) -> &'a Self {
        // SAFETY: `RpcRqst` is a transparent wrapper; the caller guarantees the lifetime.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// The C request, for the tracepoints.
    pub(crate) fn as_ptr(&self) -> *mut bindings::rpc_rqst {
        self.0.get()
    }

    /// An identity of the request, stable while it lives (its address).
    pub(crate) fn id(&self) -> usize {
        self.as_ptr() as usize
    }

    /// The transport of the request (`rq_xprt`).
    pub(crate) fn xprt(&self) -> &RpcXprt {
        // SAFETY: The request is alive (type invariant), and a request holds its transport,
        // which `rq_xprt` points to as long as it lives.
        unsafe { RpcXprt::from_raw((*self.as_ptr()).rq_xprt) }
    }

    /// Whether the request has the buffers of `buf_alloc` (a backward Reply has none).
    pub(super) fn has_buffer(&self) -> bool {
        // SAFETY: The request is alive (type invariant); `rq_buffer` is set by `buf_alloc`
        // before the request is sent and cleared by `buf_free` after.
        !unsafe { (*self.as_ptr()).rq_buffer }.is_null()
    }

    /// The request's connect cookie: that of the connection it was last sent on.
    pub(super) fn connect_cookie(&self) -> u32 {
        // SAFETY: The request is alive (type invariant); sunrpc sets the cookie when the
        // request is sent, under the transport lock its sender holds.
        unsafe { (*self.as_ptr()).rq_connect_cookie }
    }

    /// `rq_xtime = ktime_get()`, before the request is sent.
    pub(super) fn xmit_start(&self) {
        // SAFETY: The request is alive (type invariant) and being sent: its sender alone
        // writes `rq_xtime`. `ktime_get` may be called in any context.
        unsafe { (*self.as_ptr()).rq_xtime = kernel::bindings::ktime_get() };
    }

    /// `rq_xmit_bytes_sent += rq_snd_buf.len`, once it is sent.
    pub(super) fn xmit_done(&self) {
        let r = self.as_ptr();
        // SAFETY: The request is alive (type invariant) and being sent: its sender alone
        // writes `rq_xmit_bytes_sent`, and the call no longer changes.
        unsafe { (*r).rq_xmit_bytes_sent += (*r).rq_snd_buf.len as usize };
    }

    /// Allocates the pages of the reply buffer that the upper layer leaves to the transport
    /// (`XDRBUF_SPARSE_PAGES`, e.g. GETACL's), as `rpcrdma_alloc_sparse_pages`; the upper layer
    /// frees them. `ENOBUFS` if memory is short.
    pub(crate) fn alloc_sparse_pages(&self) -> Result {
        // SAFETY: The request is alive (type invariant) and being sent: nothing else changes
        // its reply buffer's layout meanwhile.
        let flags = unsafe { (*self.as_ptr()).rq_rcv_buf.flags };
        if flags & bindings::XDRBUF_SPARSE_PAGES == 0 {
            return Ok(());
        }
        let b = self.xdr_buf(RqstBuf::Reply);
        let first = (b.page_base as usize) >> PAGE_SHIFT;
        for n in 0..(b.page_len as usize).div_ceil(PAGE_SIZE) {
            // SAFETY: The page list of a live request has an entry for each page its
            // `page_base` and `page_len` cover; the request is being sent, so nothing else
            // uses its reply buffer.
            let slot = unsafe { &mut *b.pages.add(first + n) };
            if slot.is_null() {
                let page = Page::alloc_page(GFP_NOWAIT | __GFP_NOWARN).map_err(|_| ENOBUFS)?;
                // The upper layer owns and frees the page from now on.
                *slot = ManuallyDrop::new(page).as_ptr().cast();
            }
        }
        Ok(())
    }

    /// The pieces of one of the request's `xdr_buf`s.
    pub(super) fn xdr_buf(&self, which: RqstBuf) -> XdrParts {
        let r = self.as_ptr();
        // SAFETY: The request is alive (type invariant). Its buffers' layouts are set by sunrpc
        // before the request is sent and change after only on the transport's receive path
        // (`Pinned::place_reply`), which asks for them itself.
        XdrParts::of(unsafe {
            match which {
                RqstBuf::Call => &(*r).rq_snd_buf,
                RqstBuf::Reply => &(*r).rq_rcv_buf,
                RqstBuf::Private => &(*r).rq_private_buf,
            }
        })
    }

    /// The layout of the call and reply buffers.
    pub(crate) fn info(&self) -> RqstInfo {
        let r = self.as_ptr();
        // SAFETY: The request is alive (type invariant) and being sent: sunrpc built its call
        // and set up its reply buffer, and changes neither meanwhile. Its credential, if any,
        // is held by the request and holds its auth, whose flags are set before it is used.
        let (xid, snd, rcv, datatouch) = unsafe {
            let cred = (*r).rq_cred;
            let auth = if cred.is_null() {
                ptr::null_mut()
            } else {
                (*cred).cr_auth
            };
            (
                (*r).rq_xid,
                &(*r).rq_snd_buf,
                &(*r).rq_rcv_buf,
                !auth.is_null() && (*auth).au_flags & (1 << bindings::RPCAUTH_AUTH_DATATOUCH) != 0,
            )
        };
        RqstInfo {
            xid: u32::from_be(xid),
            snd: XdrLayout::from(snd),
            rcv: XdrLayout::from(rcv),
            ddp_allowed: !datatouch,
            write_payload: snd.flags & bindings::XDRBUF_WRITE != 0,
            read_payload: rcv.flags & bindings::XDRBUF_READ != 0,
        }
    }

    /// The bytes `offset..offset + len` of `buf`, page by page; `EINVAL` if the range is
    /// empty or past the buffer's end. Whoever registers them for DMA must end that
    /// registration before the request is released (`buf_free`).
    pub(crate) fn pages(&self, buf: Buf, offset: u32, len: u32) -> Result<Pages<'_>> {
        let b = self.xdr_buf(match buf {
            Buf::Call => RqstBuf::Call,
            Buf::Reply => RqstBuf::Reply,
        });
        // SAFETY: `b` describes a buffer of the request, allocated while it is borrowed
        // (type invariant).
        unsafe { Pages::new(b, offset, len) }
    }

    /// Copies the bytes of the call at `offset` into `dst`; `EINVAL` past its end.
    pub(crate) fn copy_call(&self, offset: u32, dst: &mut [u8]) -> Result {
        if dst.is_empty() {
            return Ok(());
        }
        let len = u32::try_from(dst.len()).map_err(|_| EINVAL)?;
        // SAFETY: The call is complete once it is sent: nothing writes to it any more.
        unsafe { self.pages(Buf::Call, offset, len)?.read(dst) }
    }
}

/// A request found by its reply's XID and pinned (`xprt_pin_rqst`): sunrpc cannot release it
/// (nor its transport) until it is completed or dropped, which unpins it.
///
/// # Invariants
///
/// `ptr` is a request pinned by this object, hence alive with its buffers.
pub(crate) struct Pinned {
    ptr: NonNull<bindings::rpc_rqst>,
}

// SAFETY: A pinned request may be completed or unpinned from any context (the shim takes the
// transport's queue lock).
unsafe impl Send for Pinned {}

impl Pinned {
    /// The request.
    pub(crate) fn rqst(&self) -> &RpcRqst {
        // SAFETY: Pinned, so alive with its buffers (type invariant).
        unsafe { RpcRqst::from_raw(self.ptr.as_ptr()) }
    }

    /// Places an inline reply into the receive buffer, as `rpcrdma_inline_fixup`: head, pages,
    /// tail, or, when a Write chunk delivered `ddp_len` bytes into the pages, head and tail
    /// around them (the head ends where the inline bytes do, and what follows goes after the
    /// payload's XDR pad). Returns the bytes copied into pages.
    pub(crate) fn place_reply(&mut self, src: &[u8], ddp_len: u32) -> Result<u32> {
        let rqst = self.rqst();
        // sunrpc decodes the reply from `rq_private_buf` and checks `rq_rcv_buf` against it.
        let mut b = rqst.xdr_buf(RqstBuf::Private);
        let place = |b: XdrParts, at: u32, src: &[u8]| -> Result {
            if src.is_empty() {
                return Ok(());
            }
            let len = u32::try_from(src.len()).map_err(|_| EINVAL)?;
            // SAFETY: `b` describes a buffer of the pinned request; no reply was placed yet,
            // so only this receive path touches it.
            unsafe { Pages::new(b, at, len)?.write(src) }
        };
        let n = src.len().min(b.head_len as usize);
        let (head, mut rest) = src.split_at(n);
        place(b, 0, head)?;
        if ddp_len != 0 && (n as u32) < b.head_len {
            // The payload was placed at the start of the page list: end the head here.
            // The head of `rq_private_buf` and `rq_rcv_buf` ends after `n` bytes, and their
            // `buflen` shrinks to match (as C computes it, modulo 2^32).
            let r = self.ptr.as_ptr();
            // SAFETY: The request is pinned and only this receive path changes its buffers.
            unsafe {
                for x in [&raw mut (*r).rq_private_buf, &raw mut (*r).rq_rcv_buf] {
                    let cut = (*x).head[0].iov_len.wrapping_sub(n) as u32;
                    (*x).buflen = (*x).buflen.wrapping_sub(cut);
                    (*x).head[0].iov_len = n;
                }
            }
            b.head_len = n as u32;
        }
        let mut pages = 0;
        if ddp_len == 0 && !rest.is_empty() && b.page_len != 0 {
            let (p, r) = rest.split_at(rest.len().min(b.page_len as usize));
            place(b, b.head_len, p)?;
            pages = p.len() as u32;
            rest = r;
        }
        // Inline content after a Write chunk follows the payload's XDR pad.
        let pad = (4 - ddp_len % 4) % 4;
        if !rest.is_empty() && pad < b.tail_len {
            let t = &rest[..rest.len().min((b.tail_len - pad) as usize)];
            place(b, b.head_len + b.page_len + pad, t)?;
        }
        Ok(pages)
    }

    /// Completes the RPC with a reply of `len` bytes, or fails it with the error, and unpins it.
    pub(crate) fn complete(self, r: Result<u32>) {
        let (status, len) = match r {
            Ok(len) => (0, len),
            Err(e) => (e.to_errno(), 0),
        };
        let r = self.ptr.as_ptr();
        core::mem::forget(self);
        // SAFETY: Pinned (type invariant), so the request, its task and its xprt are live;
        // completing and unpinning it under `queue_lock`, once (`self` is forgotten), is
        // `rpcrdma_complete_rqst`'s sequence.
        let xprt = unsafe { RpcXprt::from_raw((*r).rq_xprt) };
        // SAFETY: As above.
        xprt.locked(Lock::Queue, || unsafe {
            if status < 0 {
                (*(*r).rq_task).tk_status = status;
            }
            bindings::xprt_complete_rqst((*r).rq_task, len as c_int);
            bindings::xprt_unpin_rqst(r);
        });
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        let r = self.ptr.as_ptr();
        // SAFETY: Pinned by this object (type invariant), so the request and its xprt are
        // live; unpinned once, under `queue_lock`.
        let xprt = unsafe { RpcXprt::from_raw((*r).rq_xprt) };
        // SAFETY: As above.
        xprt.locked(Lock::Queue, || unsafe { bindings::xprt_unpin_rqst(r) });
    }
}

/// A backward request and the Receive it goes with, as [`BcRqst::enqueue`] gives them back.
pub(crate) type BcLent<X> = (BcRqst<X>, KBox<Wr<<X as RpcXprtOps>::BcRecv>>);

/// The memory of a backward request: the `rpc_rqst` sunrpc sees (first, so that a pointer to
/// it is one to the whole), the page its Reply is built in (`rq_snd_buf`), and the Receive
/// lent with it while sunrpc has it (`into_foreign` of a `KBox<Wr<_>>`, else null).
#[cfg(CONFIG_SUNRPC_BACKCHANNEL)]
#[repr(C)]
struct BcMem {
    rqst: bindings::rpc_rqst,
    page: KBox<MaybeUninit<[u8; PAGE_SIZE]>>,
    hold: *mut c_void,
}

#[cfg(CONFIG_SUNRPC_BACKCHANNEL)]
impl BcMem {
    /// The Receive lent with the backward request `rqst` (`hold`).
    ///
    /// # Safety
    ///
    /// `rqst` is the `rqst` of a live `BcMem`.
    unsafe fn hold(rqst: *mut bindings::rpc_rqst) -> *mut *mut c_void {
        // SAFETY: As required by the function; `rqst` is the first field of a `repr(C)`
        // `BcMem`, so the pointers are the same.
        unsafe { &raw mut (*rqst.cast::<BcMem>()).hold }
    }

    /// `xdr_buf_init`: `buf` describes `len` bytes at `start`, none of them used yet.
    ///
    /// # Safety
    ///
    /// `buf` is valid for writes.
    unsafe fn xdr_buf_init(buf: *mut bindings::xdr_buf, start: *mut c_void, len: usize) {
        // SAFETY: As required by the function.
        unsafe {
            (*buf).head[0].iov_base = start;
            (*buf).head[0].iov_len = len;
            (*buf).tail[0].iov_len = 0;
            (*buf).pages = ptr::null_mut();
            (*buf).page_len = 0;
            (*buf).flags = 0;
            (*buf).len = 0;
            (*buf).buflen = len as u32;
        }
    }
}

/// A backward request of a transport (RFC 8167): an `rpc_rqst` allocated with a page for its
/// Reply (a [`BcMem`]), as the C transport's `rpcrdma_bc_rqst_get` makes an `rpcrdma_req`, idle
/// in the transport's pool. [`BcRqst::enqueue`] lends it to the callback service with the
/// Receive holding its Call; the transport's [`RpcXprtOps::bc_free_rqst`] gets both back.
///
/// # Invariants
///
/// `ptr` is the `rqst` of a `BcMem` of [`BcRqst::new`] (a leaked `KBox`) for an `rpc_xprt`
/// of the class registered with `Adapter<X>`, is not lent to sunrpc, and is freed only by
/// `drop`.
pub(crate) struct BcRqst<X: RpcXprtOps> {
    ptr: NonNull<bindings::rpc_rqst>,
    _p: PhantomData<X>,
}

// SAFETY: An idle backward request is plain memory that any thread may hand on or free.
unsafe impl<X: RpcXprtOps> Send for BcRqst<X> {}

impl<X: RpcXprtOps> BcRqst<X> {
    /// A new backward request of `xprt`, a transport of `X`; `atomic`: without sleeping.
    /// `ENOMEM` without `CONFIG_SUNRPC_BACKCHANNEL` (there are none then).
    pub(crate) fn new(xprt: &RpcXprt, atomic: bool) -> Result<Self> {
        #[cfg(not(CONFIG_SUNRPC_BACKCHANNEL))]
        let p: *mut bindings::rpc_rqst = {
            let _ = (xprt, atomic);
            ptr::null_mut()
        };
        #[cfg(CONFIG_SUNRPC_BACKCHANNEL)]
        let p = {
            let flags = if atomic {
                GFP_ATOMIC | __GFP_NOWARN
            } else {
                GFP_KERNEL
            };
            let page = KBox::new_uninit(flags)?;
            // SAFETY: `rpc_rqst` is a C structure for which all zeroes is a valid value (C
            // allocates it with `kzalloc`).
            let rqst: bindings::rpc_rqst = unsafe { core::mem::zeroed() };
            let mem = KBox::new(
                BcMem {
                    rqst,
                    page,
                    hold: ptr::null_mut(),
                },
                flags,
            )?;
            let m = KBox::into_raw(mem);
            // SAFETY: `m` is the new, unshared `BcMem`; the xprt is alive (type invariant of
            // `RpcXprt`). As `rpcrdma_bc_rqst_get`: a preallocated backchannel request of
            // `xprt` (bit `RPC_BC_PA_IN_USE` of its state, as `__set_bit` sets it: `xprt_release`
            // gives it back to `bc_free_rqst`), off every list, whose Reply is built in its page.
            unsafe {
                let r = &raw mut (*m).rqst;
                (*r).rq_xprt = xprt.as_ptr();
                (*r).rq_bc_pa_state |= 1 << bindings::RPC_BC_PA_IN_USE;
                kernel::bindings::INIT_LIST_HEAD((&raw mut (*r).rq_bc_pa_list).cast());
                let page = (*m).page.as_mut_ptr().cast::<c_void>();
                BcMem::xdr_buf_init(&raw mut (*r).rq_snd_buf, page, PAGE_SIZE);
                r
            }
        };
        let ptr = NonNull::new(p).ok_or(ENOMEM)?;
        COUNTERS.bc_rqsts.alloc();
        // INVARIANT: Just allocated for `xprt`, whose class the module registered with
        // `Adapter<X>` (the module has one client transport type).
        Ok(Self {
            ptr,
            _p: PhantomData,
        })
    }

    /// Lends the request to the callback service with the backward Call `xid`, the bytes
    /// `call` of the first buffer of the Receive `recv`, which goes with it
    /// (`rpcrdma_bc_receive_call`, `xprt_enqueue_bc_request`). Both come back to
    /// [`RpcXprtOps::bc_free_rqst`], perhaps before this returns (when no callback service is
    /// attached); neither is touched meanwhile. Gives both back if `call` is not in the buffer.
    pub(crate) fn enqueue(
        self,
        xid: u32,
        recv: KBox<Wr<X::BcRecv>>,
        call: Range<usize>,
    ) -> core::result::Result<(), BcLent<X>> {
        let Some(bytes) = recv.buf(0).and_then(|b| b.as_slice().get(call)) else {
            return Err((self, recv));
        };
        let Ok(len) = u32::try_from(bytes.len()) else {
            return Err((self, recv));
        };
        let p = bytes.as_ptr().cast_mut().cast::<c_void>();
        // The Receive's buffer is heap memory of its own: it stays where it is while the
        // box is lent, and nothing writes to it (a lent Receive is not posted).
        let hold = recv.into_foreign();
        let rqst = self.ptr;
        // Lent: sunrpc frees it through `bc_free_rqst`.
        core::mem::forget(self);
        #[cfg(CONFIG_SUNRPC_BACKCHANNEL)]
        // SAFETY: `rqst` is the `rqst` of an idle `BcMem` (type invariant); `p` is valid for
        // `len` bytes until `hold`, which owns them, comes back to `Adapter::bc_free_rqst`,
        // which rebuilds both. As `rpcrdma_bc_receive_call`: the Call is the receive buffer,
        // the Reply is built in the request's page (the last Reply left its own layout there:
        // `svc_process_bc` copies `rq_res` over it), and the request is queued for the
        // callback service.
        unsafe {
            let r = rqst.as_ptr();
            *BcMem::hold(r) = hold;
            (*r).rq_reply_bytes_recvd = 0;
            (*r).rq_xid = xid.to_be();
            (*r).rq_private_buf.len = len;
            let buf = &raw mut (*r).rq_rcv_buf;
            buf.write(core::mem::zeroed());
            (*buf).head[0].iov_base = p;
            (*buf).head[0].iov_len = len as usize;
            (*buf).len = len;
            let page = (*r.cast::<BcMem>()).page.as_mut_ptr().cast::<c_void>();
            BcMem::xdr_buf_init(&raw mut (*r).rq_snd_buf, page, PAGE_SIZE);
            // Balances the decrement of `svc_process_bc` (C's transport leaves it unbalanced).
            kernel::bindings::atomic_inc((&raw mut (*(*r).rq_xprt).bc_slot_count).cast());
            bindings::xprt_enqueue_bc_request(r);
        };
        // Without the backchannel there is no backward request (see `new`).
        #[cfg(not(CONFIG_SUNRPC_BACKCHANNEL))]
        let _ = (rqst, xid, p, len, hold);
        Ok(())
    }
}

impl<X: RpcXprtOps> Drop for BcRqst<X> {
    fn drop(&mut self) {
        // SAFETY: The `rqst` of a `BcMem` leaked from a `KBox` (type invariant), idle, freed
        // once. (Without the backchannel there is no backward request: see `new`.)
        #[cfg(CONFIG_SUNRPC_BACKCHANNEL)]
        drop(unsafe { KBox::from_raw(self.ptr.as_ptr().cast::<BcMem>()) });
        COUNTERS.bc_rqsts.free();
    }
}

/// The RDMA counters a transport reports in `/proc/self/mountstats`, named as the C
/// transport's `struct rpcrdma_stats`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Stats {
    /// Calls with a Read chunk.
    pub(crate) read_chunk_count: u64,
    /// Calls with a Write chunk.
    pub(crate) write_chunk_count: u64,
    /// Calls with a Reply chunk.
    pub(crate) reply_chunk_count: u64,
    /// Bytes offered by RDMA Read (Read chunks).
    pub(crate) total_rdma_request: u64,
    /// Bytes received by RDMA Write (Write and Reply chunks).
    pub(crate) total_rdma_reply: u64,
    /// Bytes copied into Send buffers.
    pub(crate) pullup_copy_count: u64,
    /// Bytes copied from Receive buffers into reply pages.
    pub(crate) fixup_copy_count: u64,
    /// Registrations that had to allocate (none: MRs are preallocated).
    pub(crate) hardway_register_count: u64,
    /// Calls that could not be marshaled.
    pub(crate) failed_marshal_count: u64,
    /// Replies with a bad transport header.
    pub(crate) bad_reply_count: u64,
    /// Calls sent as `RDMA_NOMSG` (Position-Zero Read chunk).
    pub(crate) nomsg_call_count: u64,
    /// MRs destroyed and reallocated after a failure.
    pub(crate) mrs_recycled: u64,
    /// MRs lost to a failure.
    pub(crate) mrs_orphaned: u64,
    /// MRs allocated.
    pub(crate) mrs_allocated: u64,
    /// Replies whose MRs needed a LOCAL_INV.
    pub(crate) local_inv_needed: u64,
    /// Calls delayed for lack of a Send buffer.
    pub(crate) empty_sendctx_q: u64,
}

/// The connect lock of a transport (`xprt_lock_connect`), handed to [`RpcXprtOps::connect`].
///
/// Give it back with [`Connect::done`]; dropping it ends the attempt with `ENOTCONN`.
///
/// # Invariants
///
/// `xprt` is an `rpc_xprt` of this class whose connect lock this object holds, so the
/// transport stays locked (`XPRT_LOCKED`) and alive until the lock is given back.
pub(crate) struct Connect {
    xprt: NonNull<bindings::rpc_xprt>,
}

// SAFETY: The connect lock may be given back from any task (the C transport does so from its
// connect worker).
unsafe impl Send for Connect {}

impl Connect {
    /// The transport being connected.
    pub(crate) fn xprt(&self) -> &RpcXprt {
        // SAFETY: By the type invariant the xprt is alive while `self` is.
        unsafe { RpcXprt::from_raw(self.xprt.as_ptr()) }
    }

    /// Ends the attempt: on `Ok` the transport is marked connected; either way the connect lock
    /// is released and the RPCs waiting for the connection are woken with the outcome. The
    /// transport may be destroyed as soon as this returns.
    pub(crate) fn done(self, r: Result) {
        let xprt = self.xprt;
        core::mem::forget(self);
        Self::release(xprt, r);
    }

    fn release(xprt: NonNull<bindings::rpc_xprt>, r: Result) {
        let rc = match r {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        };
        let x = xprt.as_ptr();
        // SAFETY: The caller owned the connect lock of this live xprt and gives it back here,
        // once (`done` forgets the token). This is `xprt_rdma_connect_worker`'s ending:
        // `XPRT_CONNECTING` cleared between full barriers (`xprt_clear_connecting`), on success
        // the statistics (written by the connect lock's owner only) and `XPRT_CONNECTED`, then
        // the lock released and the waiting tasks woken (`-EAGAIN` on success: they retry).
        unsafe {
            smp_mb(Full);
            kernel::bindings::clear_bit(bindings::XPRT_CONNECTING as usize, &raw mut (*x).state);
            smp_mb(Full);
            let rc = if rc == 0 {
                (*x).connect_cookie = (*x).connect_cookie.wrapping_add(1);
                let stat = &raw mut (*x).stat;
                (*stat).connect_count = (*stat).connect_count.wrapping_add(1);
                let now = core::ptr::read_volatile(&raw const kernel::bindings::jiffies);
                (*stat).connect_time = (*stat)
                    .connect_time
                    .wrapping_add(now.wrapping_sub((*stat).connect_start));
                kernel::bindings::set_bit(bindings::XPRT_CONNECTED as usize, &raw mut (*x).state);
                EAGAIN.to_errno()
            } else {
                rc
            };
            bindings::xprt_unlock_connect(x, x.cast::<c_void>());
            bindings::xprt_wake_pending_tasks(x, rc);
        }
    }
}

impl Drop for Connect {
    fn drop(&mut self) {
        Self::release(self.xprt, Err(ENOTCONN));
    }
}

/// The pointer inside a [`RpcXprtLink`].
struct XprtPtr(Option<NonNull<bindings::rpc_xprt>>);

// SAFETY: The pointer is only dereferenced under the lock, while the xprt is alive.
unsafe impl Send for XprtPtr {}

/// A revocable reference to a transport's `rpc_xprt`, for contexts sunrpc does not serialize
/// with `destroy` (rdma_cm event handlers).
///
/// # Invariants
///
/// The pointer under the lock is null or a live `rpc_xprt` of this class: the adapter sets it
/// once the xprt exists and clears it before the xprt is destroyed.
#[pin_data]
pub(crate) struct RpcXprtLinkInner {
    #[pin]
    ptr: SpinLock<XprtPtr>,
}

/// A shared [`RpcXprtLinkInner`].
#[derive(Clone)]
pub(crate) struct RpcXprtLink(Arc<RpcXprtLinkInner>);

impl RpcXprtLink {
    fn new() -> Result<Self> {
        Ok(Self(Arc::pin_init(
            pin_init!(RpcXprtLinkInner {
                ptr <- new_spinlock!(XprtPtr(None), "rpcrdma_rs_xprt_link"),
            }),
            GFP_KERNEL,
        )?))
    }

    fn set(&self, p: Option<NonNull<bindings::rpc_xprt>>) {
        self.0.ptr.lock().0 = p;
    }

    /// Runs `f` on the transport unless it is being destroyed; `f` must not sleep (a spinlock
    /// is held).
    pub(crate) fn with<R>(&self, f: impl FnOnce(&RpcXprt) -> R) -> Option<R> {
        let g = self.0.ptr.lock();
        // SAFETY: By the type invariants the pointer is live while the lock is held: the adapter
        // clears it under the lock before destroying the xprt.
        g.0.map(|p| f(unsafe { RpcXprt::from_raw(p.as_ptr()) }))
    }

    /// `xprt_force_disconnect`, unless the transport is being destroyed.
    pub(crate) fn force_disconnect(&self) {
        self.with(|x| x.force_disconnect());
    }
}

/// The client-side RDMA transport.
///
/// The transport logic implements this trait; [`Registration`] bridges it to the C class.
/// Callbacks other than `setup` get the object `setup` returned.
pub(crate) trait RpcXprtOps: Send + Sync + Sized + 'static {
    /// Sets up a new transport for `args` (`xprt_class::setup`); `link` will point to its
    /// `rpc_xprt` once that is allocated. An error fails the setup (and the mount).
    fn setup(args: &CreateArgs<'_>, link: &RpcXprtLink) -> Result<Arc<Self>>;

    /// Starts connecting, after `delay` jiffies of back-off, in process context of its own
    /// (`rpc_xprt_ops::connect`). Ends with [`Connect::done`]. Work queued on `queue`, the
    /// module's connect workqueue, is drained before the module can be unloaded.
    fn connect(this: &Arc<Self>, connect: Connect, queue: &Queue, delay: Jiffies);

    /// Tears the connection down (`rpc_xprt_ops::close`); the transport is locked.
    fn close(&self);

    /// Frees the transport (`rpc_xprt_ops::destroy`): no callback runs any more, the
    /// [`RpcXprtLink`] is revoked. Must wait for everything still using `this`.
    fn destroy(this: Arc<Self>);

    /// Sends the RPC Call `rqst` (`rpc_xprt_ops::send_request`). The transport is locked and
    /// connected, the request holds a congestion slot. `ENOTCONN` closes the connection;
    /// `EAGAIN` (after [`RpcXprt::wait_for_buffer_space`]) retries once [`RpcXprt::write_space`] is
    /// called; `ENOBUFS` makes sunrpc retry after a delay.
    fn send_request(&self, rqst: &RpcRqst) -> Result;

    /// `rqst` is being released (`rpc_xprt_ops::buf_free`): no registration of its buffers may
    /// remain once this returns. May sleep.
    fn buf_free(&self, rqst: &RpcRqst);

    /// The RDMA counters for `/proc/self/mountstats`.
    fn stats(&self) -> Stats;

    /// An RPC timed out waiting for its reply (`rpc_xprt_ops::timer`).
    fn timer(&self);

    /// Drops the connection to simulate a fault (`rpc_xprt_ops::inject_disconnect`).
    fn inject_disconnect(&self);

    /// The Receive work requests lent with backward requests ([`BcRqst::enqueue`]).
    type BcRecv: Done;

    /// A session's backchannel wants `reqs` more backward requests on `xprt`
    /// (`rpc_xprt_ops::bc_setup`). May sleep.
    fn bc_setup(this: &Arc<Self>, xprt: &RpcXprt, reqs: u32) -> Result;

    /// The largest backward RPC message, Call or Reply, in bytes (`bc_maxpayload`).
    fn bc_maxpayload(&self) -> usize;

    /// How many backward requests a connection takes at once (`bc_num_slots`).
    fn bc_num_slots(&self) -> u32;

    /// Sends the backward Reply of `rqst`, lent with the Receive `recv` of its Call, as
    /// [`RpcXprtOps::send_request`] (`xprt_rdma_bc_send_reply`): locked, connected, with a
    /// congestion slot; `ENOTCONN` closes the connection.
    fn bc_send_reply(&self, rqst: &RpcRqst, recv: &Wr<Self::BcRecv>) -> Result;

    /// sunrpc is done with the backward request `rqst` and gives it back with the Receive
    /// `recv` it was lent with (`bc_free_rqst`). Does not sleep.
    fn bc_free_rqst(&self, rqst: BcRqst<Self>, recv: KBox<Wr<Self::BcRecv>>);

    /// A session's backchannel of `reqs` requests goes away (`bc_destroy`).
    fn bc_destroy(&self, reqs: u32);
}

/// What the xprt's private area points to: the transport and the link to revoke.
struct Private<T> {
    transport: Arc<T>,
    link: RpcXprtLink,
}

/// This module (`THIS_MODULE`).
fn this_module() -> *mut kernel::bindings::module {
    <crate::LocalModule as kernel::ModuleMetadata>::THIS_MODULE.as_ptr()
}

/// As the start of `xprt_setup_rdma` and `xprt_setup_rdma_bc`: an `rpc_xprt` (`xprt_alloc` of
/// `size` bytes, zeroed, with `slots` (preallocated, most) slots) in `net` for the server
/// address of `addrlen` bytes at `addr`, bound, holding a module reference that whoever frees
/// it puts.
///
/// # Safety
///
/// `net` is a live namespace and `addr` is valid for `addrlen` bytes.
pub(super) unsafe fn alloc_xprt(
    net: *mut bindings::net,
    size: usize,
    slots: (u32, u32),
    addr: *const u8,
    addrlen: usize,
) -> Result<NonNull<bindings::rpc_xprt>> {
    if addrlen > size_of::<bindings::__kernel_sockaddr_storage>() {
        return Err(EBADF);
    }
    // SAFETY: This module is live while its code runs.
    if !unsafe { kernel::bindings::try_module_get(this_module()) } {
        return Err(EIO);
    }
    // SAFETY: `net` is live (function requirement).
    let x = unsafe { bindings::xprt_alloc(net, size, slots.0, slots.1) };
    let Some(x) = NonNull::new(x) else {
        // SAFETY: Taken above.
        unsafe { kernel::bindings::module_put(this_module()) };
        return Err(ENOMEM);
    };
    let xp = x.as_ptr();
    // SAFETY: `xp` is new and not shared; `addr` fits `xprt.addr` (checked above) and is valid
    // (function requirement). `resvport` stays 0 (zeroed).
    unsafe {
        ptr::copy_nonoverlapping(addr, (&raw mut (*xp).addr).cast::<u8>(), addrlen);
        (*xp).addrlen = addrlen;
        kernel::bindings::set_bit(bindings::XPRT_BOUND as usize, &raw mut (*xp).state);
    }
    Ok(x)
}

/// `xprt_rdma_default_timeout` (and the server backchannel's `xprt_rdma_bc_timeout`): 60
/// seconds, no retries.
pub(super) static DEFAULT_TIMEOUT: bindings::rpc_timeout = bindings::rpc_timeout {
    to_initval: 60 * kernel::bindings::HZ as c_ulong,
    to_maxval: 60 * kernel::bindings::HZ as c_ulong,
    to_increment: 0,
    to_retries: 0,
    to_exponential: 0,
};

/// An `rpc_xprt` of this class as allocated (`xprt_alloc` of this size, zeroed), as the C
/// transport's `struct rpcrdma_xprt`: the generic transport first, so that a pointer to it is
/// one to the whole.
#[repr(C)]
struct XprtMem {
    /// The generic transport sunrpc sees.
    xprt: bindings::rpc_xprt,
    /// The copy of its timeouts that `set_connect_timeout` points `xprt.timeout` at.
    timeout: bindings::rpc_timeout,
    /// The transport's [`Private`] (`into_foreign`), taken back by `destroy`.
    private: *mut c_void,
}

impl XprtMem {
    /// As `xprt_setup_rdma`: an `rpc_xprt` of the class in `net` for the server `dst`, whose
    /// ops are `Adapter<T>`'s and which holds a module reference until [`XprtMem::free`].
    ///
    /// # Safety
    ///
    /// `net` is a live namespace; `private` came from `into_foreign` of a `Private<T>`, and the
    /// transport owns it on success (the caller keeps it on failure).
    unsafe fn create<T: RpcXprtOps>(
        net: *mut bindings::net,
        dst: &SockAddr,
        private: *mut c_void,
    ) -> Result<NonNull<bindings::rpc_xprt>> {
        let addr = dst.to_raw();
        let slots = sysctl::Client::get().slot_table_entries;
        // SAFETY: `net` is live (function requirement); `addr` is valid for its length.
        let x = unsafe {
            alloc_xprt(
                net,
                size_of::<Self>(),
                (0, slots),
                addr.as_ptr().cast(),
                addr.len(),
            )
        }?;
        let xp = x.as_ptr();
        let ops: &'static bindings::rpc_xprt_ops = &Adapter::<T>::OPS;
        // SAFETY: `xp` is the new `XprtMem` (its size was asked for), not yet shared; the
        // timeouts, the ops and the class are statics. `xprt.addr` holds the server's TCP
        // address, for side protocols that peek at it (`prot`).
        unsafe {
            (*xp).timeout = &DEFAULT_TIMEOUT;
            (*xp).connect_timeout = DEFAULT_TIMEOUT.to_initval;
            (*xp).max_reconnect_timeout = DEFAULT_TIMEOUT.to_maxval;
            (*xp).bind_timeout = msecs_to_jiffies(defaults::BIND_TO_MS);
            (*xp).reestablish_timeout = msecs_to_jiffies(defaults::INIT_REEST_TO_MS);
            (*xp).idle_timeout = msecs_to_jiffies(defaults::IDLE_DISC_TO_MS);
            (*xp).ops = ops;
            (*xp).prot = kernel::bindings::IPPROTO_TCP as c_int;
            (*xp).xprt_class = &raw mut bindings::rpcrdma_shim_xprt_class;
            (*xp).max_payload = defaults::MAX_PAYLOAD as usize;
            (*xp.cast::<Self>()).private = private;
        }
        Ok(x)
    }

    /// The end of `xprt_rdma_destroy`: frees the address strings and the `rpc_xprt`, and puts
    /// its module reference.
    ///
    /// # Safety
    ///
    /// `xprt` is an `rpc_xprt` of [`XprtMem::create`] that nothing uses any more, and whose
    /// `private` was taken back.
    unsafe fn free(xprt: *mut bindings::rpc_xprt) {
        // SAFETY: As required by the function.
        unsafe { RpcXprt::from_raw(xprt) }.free_addresses();
        // SAFETY: As required by the function; freed once, and the module reference
        // `alloc_xprt` took for it put last, as `xprt_rdma_destroy` does (the return into
        // this module after it is the window the C transport leaves too).
        unsafe {
            bindings::xprt_free(xprt);
            kernel::bindings::module_put(this_module())
        };
    }
}

/// Bridges sunrpc's `rpc_xprt_ops` and the class's setup to a [`RpcXprtOps`].
struct Adapter<T: RpcXprtOps>(PhantomData<T>);

impl<T: RpcXprtOps> Adapter<T> {
    /// The transports' `rpc_xprt_ops`, as `xprt_rdma_procs`: the generic sunrpc helpers where
    /// the C transport uses them (congestion control, slots, rpcbind), the shim's `buf_alloc`
    /// and `set_connect_timeout` (they only fill fields of the request and the xprt), and the
    /// adapter's functions for the rest.
    const OPS: bindings::rpc_xprt_ops = bindings::rpc_xprt_ops {
        reserve_xprt: Some(bindings::xprt_reserve_xprt_cong),
        release_xprt: Some(bindings::xprt_release_xprt_cong),
        alloc_slot: Some(bindings::xprt_alloc_slot),
        free_slot: Some(bindings::xprt_free_slot),
        release_request: Some(bindings::xprt_release_rqst_cong),
        wait_for_reply_request: Some(bindings::xprt_wait_for_reply_request_def),
        timer: Some(Self::timer),
        rpcbind: Some(bindings::rpcb_getport_async),
        set_port: Some(Self::set_port),
        connect: Some(Self::connect),
        buf_alloc: Some(bindings::rpcrdma_shim_rqst_buf_alloc),
        buf_free: Some(Self::buf_free),
        send_request: Some(Self::send_request),
        close: Some(Self::close),
        destroy: Some(Self::destroy),
        set_connect_timeout: Some(Self::set_connect_timeout),
        print_stats: Some(Self::print_stats),
        inject_disconnect: Some(Self::inject_disconnect),
        // Called unchecked by sunrpc (`xprt_enable_swap`): a transport must have them.
        enable_swap: Some(Self::enable_swap),
        disable_swap: Some(Self::disable_swap),
        #[cfg(CONFIG_SUNRPC_BACKCHANNEL)]
        bc_setup: Some(Self::bc_setup),
        #[cfg(CONFIG_SUNRPC_BACKCHANNEL)]
        bc_maxpayload: Some(Self::bc_maxpayload),
        #[cfg(CONFIG_SUNRPC_BACKCHANNEL)]
        bc_num_slots: Some(Self::bc_num_slots),
        #[cfg(CONFIG_SUNRPC_BACKCHANNEL)]
        bc_free_rqst: Some(Self::bc_free_rqst),
        #[cfg(CONFIG_SUNRPC_BACKCHANNEL)]
        bc_destroy: Some(Self::bc_destroy),
        // SAFETY: Every field of `rpc_xprt_ops` is an `Option` of a function pointer, for which
        // all zeroes is `None`: the ops the transport does not have.
        ..unsafe { MaybeUninit::zeroed().assume_init() }
    };

    /// `enable_swap`: swap over this transport is refused (`swapon` fails with
    /// `EOPNOTSUPP`). Its requests allocate their buffers per RPC, with no reserve for the
    /// writeback that frees memory; the C transport preallocates them and accepts swap.
    ///
    /// # Safety
    ///
    /// Called by sunrpc with a live xprt of this class.
    unsafe extern "C" fn enable_swap(_xprt: *mut bindings::rpc_xprt) -> c_int {
        EOPNOTSUPP.to_errno()
    }

    /// `disable_swap`: nothing to undo ([`Self::enable_swap`] never succeeds).
    ///
    /// # Safety
    ///
    /// Called by sunrpc with a live xprt of this class.
    unsafe extern "C" fn disable_swap(_xprt: *mut bindings::rpc_xprt) {}

    /// Sets up a transport for `args`, as `xprt_setup_rdma`: the Rust object, then the
    /// `rpc_xprt` allocated around it ([`XprtMem`]), then its address strings.
    fn setup(args: *mut bindings::xprt_create) -> Result<*mut bindings::rpc_xprt> {
        // INVARIANT: sunrpc passes a valid `xprt_create` for the duration of the call.
        let cargs = CreateArgs {
            ptr: args,
            _p: PhantomData,
        };
        let link = RpcXprtLink::new()?;
        let transport = T::setup(&cargs, &link)?;
        let private = KBox::new(
            Private {
                transport,
                link: link.clone(),
            },
            GFP_KERNEL,
        )?
        .into_foreign();
        let create = |mut dst: SockAddr| {
            let (SockAddr::V4 { port, .. } | SockAddr::V6 { port, .. }) = &mut dst;
            if *port == 0 {
                *port = defaults::PORT;
            }
            // SAFETY: `args` is valid for the call.
            let net = unsafe { (*args).net };
            // SAFETY: `private` came from `into_foreign`; the transport owns it from here on.
            unsafe { XprtMem::create::<T>(net, &dst, private) }
        };
        match cargs.dst().ok_or(EAFNOSUPPORT).and_then(create) {
            Ok(p) => {
                // SAFETY: The shim just set up `p`, which sunrpc does not have yet.
                unsafe { RpcXprt::from_raw(p.as_ptr()) }.format_addresses();
                link.set(Some(p));
                Ok(p.as_ptr())
            }
            Err(e) => {
                // SAFETY: `XprtMem::create` did not take `private` (it failed), so it is ours
                // again.
                let private = unsafe { KBox::<Private<T>>::from_foreign(private) };
                let Private { transport, .. } = KBox::into_inner(private);
                T::destroy(transport);
                Err(e)
            }
        }
    }

    /// The class's `setup` (`xprt_setup_rdma`).
    ///
    /// # Safety
    ///
    /// Called by sunrpc with a valid `struct xprt_create` that outlives the call.
    unsafe extern "C" fn setup_callback(
        args: *mut bindings::xprt_create,
    ) -> *mut bindings::rpc_xprt {
        match Self::setup(args) {
            Ok(p) => p,
            Err(e) => e.to_ptr(),
        }
    }

    /// What [`Self::setup`] gave the shim for `xprt`.
    ///
    /// # Safety
    ///
    /// `xprt` is a live xprt set up by [`Self::setup`], not yet destroyed, and stays so for
    /// `'a`.
    unsafe fn private<'a>(xprt: *mut bindings::rpc_xprt) -> &'a Private<T> {
        // SAFETY: By the safety requirements `xprt` is one of ours, alive.
        let private = unsafe { (*xprt.cast::<XprtMem>()).private };
        // SAFETY: `private` came from `into_foreign` in `setup` and is only reclaimed by
        // `destroy`, after which sunrpc calls nothing else.
        unsafe { KBox::<Private<T>>::borrow(private) }
    }

    /// `connect`, as `xprt_rdma_connect`: takes over the connect lock and lets the transport
    /// queue the worker, at once. The C transport backs off only if its endpoint is still there
    /// with a connect error, which never holds here (a failed or closed connection has freed it
    /// by then), so it reconnects without delay too: sunrpc paces the retries
    /// (`call_connect_status` delays the task 3 s after a refused or unreachable connect). A
    /// backoff of ours would grow to the mount's `to_maxval` (180 s for timeo=600), holding the
    /// transport, and an unmount, that long.
    ///
    /// # Safety
    ///
    /// Called by sunrpc with a live xprt of this class, locked (`XPRT_LOCKED`) by `task`.
    unsafe extern "C" fn connect(xprt: *mut bindings::rpc_xprt, task: *mut bindings::rpc_task) {
        // SAFETY: As required by the function: `task` holds `XPRT_LOCKED`, which it hands to
        // the connect worker here (`xprt_rdma_connect`); `Connect` releases it.
        let locked = unsafe { bindings::xprt_lock_connect(xprt, task, xprt.cast::<c_void>()) };
        kernel::warn_on!(!locked);
        // SAFETY: As required by the function.
        let p = unsafe { Self::private(xprt) };
        let Some(xprt) = NonNull::new(xprt) else {
            return;
        };
        // SAFETY: The class is registered while a transport exists (each holds a module
        // reference until it is destroyed, and the registration ends in module exit), so the
        // connect workqueue is live during this call.
        let wq = unsafe { bindings::rpcrdma_shim_xprt_wq_get() };
        // SAFETY: `wq` is a live workqueue for the duration of the call (see above); the
        // bindgen opaque type and the kernel's are the same C type.
        let queue = unsafe { Queue::from_raw(wq.cast()) };
        // INVARIANT: The shim took over the connect lock of this live xprt for us.
        T::connect(&p.transport, Connect { xprt }, queue, 0);
    }

    /// `close`, as `xprt_rdma_close`.
    ///
    /// # Safety
    ///
    /// Called by sunrpc with a live xprt of this class, locked (`XPRT_LOCKED`).
    unsafe extern "C" fn close(xprt: *mut bindings::rpc_xprt) {
        // SAFETY: As required by the function.
        let p = unsafe { Self::private(xprt) };
        // SAFETY: As required by the function.
        Self::close_locked(p, unsafe { RpcXprt::from_raw(xprt) });
    }

    /// Tears down the connection of the locked `xprt`, as the `close` op.
    fn close_locked(p: &Private<T>, xprt: &RpcXprt) {
        p.transport.close();
        let x = xprt.as_ptr();
        // SAFETY: The xprt is alive (type invariant) and locked, as the close op is: its
        // connect cookie is changed only under that lock (the reestablish timeout is also
        // cleared by `reply_seen`, hence `WRITE_ONCE`). As the end of `xprt_rdma_close`: a new
        // cookie, and `xprt_disconnect_done`.
        unsafe {
            atomic_store(&raw mut (*x).reestablish_timeout, 0, Relaxed);
            (*x).connect_cookie = (*x).connect_cookie.wrapping_add(1);
            bindings::xprt_disconnect_done(x);
        }
    }

    /// `destroy`, as `xprt_rdma_destroy`.
    ///
    /// # Safety
    ///
    /// Called by sunrpc with an xprt of this class that nothing uses any more; no other op
    /// runs or follows.
    unsafe extern "C" fn destroy(xprt: *mut bindings::rpc_xprt) {
        // SAFETY: `xprt` is ours, alive until the end of the call.
        let private = unsafe { (*xprt.cast::<XprtMem>()).private };
        // SAFETY: `private` came from `into_foreign` in `setup`, and this is its last use.
        let private = unsafe { KBox::<Private<T>>::from_foreign(private) };
        let Private { transport, link } = KBox::into_inner(private);
        // Revoke the link first: from here on no event handler reaches the xprt.
        link.set(None);
        T::destroy(transport);
        // SAFETY: No op runs or follows, and the transport object that used `xprt` is gone.
        unsafe { XprtMem::free(xprt) };
    }

    /// `send_request`, as `xprt_rdma_send_request`: a Call, or a backward Reply (which has no
    /// buffer of `buf_alloc`).
    ///
    /// # Safety
    ///
    /// Called by sunrpc with a live request of a live xprt of this class, locked
    /// (`XPRT_LOCKED`), whose buffers stay allocated during the call.
    unsafe extern "C" fn send_request(rqst: *mut bindings::rpc_rqst) -> c_int {
        // SAFETY: As required by the function.
        let rqst = unsafe { RpcRqst::from_raw(rqst) };
        let xprt = rqst.xprt();
        // SAFETY: The request's transport is one of ours, alive during the call.
        let p = unsafe { Self::private(xprt.as_ptr()) };
        #[cfg(CONFIG_SUNRPC_BACKCHANNEL)]
        if !rqst.has_buffer() {
            return Self::send_bc_reply(p, xprt, rqst).map_or_else(|e| e.to_errno(), |()| 0);
        }
        Self::send_call(p, xprt, rqst).map_or_else(|e| e.to_errno(), |()| 0)
    }

    /// Whether `rqst` may be sent on the locked `xprt`: connected, with a congestion slot.
    fn may_send(xprt: &RpcXprt, rqst: &RpcRqst) -> Result {
        if !xprt.connected() {
            return Err(ENOTCONN);
        }
        // SAFETY: As above; the transport is locked, as `xprt_request_get_cong` needs.
        if !unsafe { bindings::xprt_request_get_cong(xprt.as_ptr(), rqst.as_ptr()) } {
            return Err(EBADSLT);
        }
        Ok(())
    }

    /// `xprt_rdma_send_request`: sends the Call `rqst` on `xprt`, locked (`XPRT_LOCKED`).
    fn send_call(p: &Private<T>, xprt: &RpcXprt, rqst: &RpcRqst) -> Result {
        let rp = rqst.as_ptr();
        Self::may_send(xprt, rqst)?;
        // A retransmission on the same connection would overrun the credits: reconnect.
        if rqst.connect_cookie() == xprt.connect_cookie() {
            return Self::drop_connection(p, xprt);
        }
        rqst.xmit_start();
        match p.transport.send_request(rqst) {
            Err(e) if e == ENOTCONN => return Self::drop_connection(p, xprt),
            Err(e) => return Err(e),
            Ok(()) => {}
        }
        rqst.xmit_done();
        // An RPC with no reply throws off credit accounting: reset the grant.
        // SAFETY: The request is live, and so is its task while it is being sent.
        if !unsafe { bindings::rpcrdma_shim_rqst_reply_expected(rp) } {
            return Self::drop_connection(p, xprt);
        }
        Ok(())
    }

    /// `xprt_rdma_bc_send_reply`: sends the backward Reply of `rqst`, a backward request lent
    /// by [`BcRqst::enqueue`], on `xprt`, locked (`XPRT_LOCKED`).
    #[cfg(CONFIG_SUNRPC_BACKCHANNEL)]
    fn send_bc_reply(p: &Private<T>, xprt: &RpcXprt, rqst: &RpcRqst) -> Result {
        Self::may_send(xprt, rqst)?;
        // SAFETY: Only backward requests have no buffer of `buf_alloc`; the request is live.
        let hold = unsafe { *BcMem::hold(rqst.as_ptr()) };
        // SAFETY: `hold` came from `into_foreign` of a `KBox<Wr<T::BcRecv>>` in
        // `BcRqst::<T>::enqueue` and is reclaimed only by `bc_free_rqst`, which cannot run
        // while the request is being sent.
        let recv = unsafe { KBox::<Wr<T::BcRecv>>::borrow(hold) };
        match p.transport.bc_send_reply(rqst, recv) {
            Err(e) if e == ENOTCONN => Self::drop_connection(p, xprt),
            Err(e) => Err(e),
            Ok(()) => {
                rqst.xmit_done();
                Ok(())
            }
        }
    }

    /// Closes the connection of the locked `xprt` (`xprt_rdma_close`); `ENOTCONN` for sunrpc.
    fn drop_connection(p: &Private<T>, xprt: &RpcXprt) -> Result {
        Self::close_locked(p, xprt);
        Err(ENOTCONN)
    }

    /// `buf_free`, as `xprt_rdma_free`: no registration of the buffers may outlive them.
    ///
    /// # Safety
    ///
    /// Called by sunrpc with the task of a live request of a live xprt of this class, whose
    /// buffers are freed here.
    unsafe extern "C" fn buf_free(task: *mut bindings::rpc_task) {
        // SAFETY: As required by the function: `task` is live, and so is its request.
        let rp = unsafe { (*task).tk_rqstp };
        // SAFETY: As required by the function; the buffers are freed only below.
        let rqst = unsafe { RpcRqst::from_raw(rp) };
        // SAFETY: The request's transport is one of ours, alive during the call.
        unsafe { Self::private(rqst.xprt().as_ptr()) }
            .transport
            .buf_free(rqst);
        // SAFETY: No registration of the buffers is left.
        unsafe { bindings::rpcrdma_shim_rqst_buf_free(rp) };
    }

    /// `set_port`: rpcbind found the server's port. The op may come before [`Self::setup`]
    /// returned, so it does not reach the transport.
    ///
    /// # Safety
    ///
    /// Called by sunrpc with a live xprt of this class.
    unsafe extern "C" fn set_port(xprt: *mut bindings::rpc_xprt, port: c_ushort) {
        // SAFETY: As required by the function.
        unsafe { bindings::rpcrdma_shim_xprt_set_port(xprt, port) };
        // SAFETY: As required by the function.
        unsafe { RpcXprt::from_raw(xprt) }.format_port();
    }

    /// `set_connect_timeout`, as `xprt_rdma_set_connect_timeout`: lowers the connect timeout
    /// (never below twice the initial reestablish timeout) and the largest reconnect delay.
    ///
    /// # Safety
    ///
    /// Called by sunrpc with a live xprt of this class.
    unsafe extern "C" fn set_connect_timeout(
        xprt: *mut bindings::rpc_xprt,
        connect_timeout: c_ulong,
        reconnect_timeout: c_ulong,
    ) {
        let min = msecs_to_jiffies(2 * defaults::INIT_REEST_TO_MS);
        // SAFETY: As required by the function; `timeout` is its own copy of the timeouts
        // (`XprtMem`), and it and the fields below are written under its
        // `transport_lock` only. `xprt->timeout` points at the class's defaults or at that
        // copy, both live as long as the xprt.
        let own = unsafe { &raw mut (*xprt.cast::<XprtMem>()).timeout };
        // SAFETY: As required by the function.
        let x = unsafe { RpcXprt::from_raw(xprt) };
        // SAFETY: As above: these fields are written under `transport_lock` only.
        x.locked(Lock::Transport, || unsafe {
            if connect_timeout < (*xprt).connect_timeout {
                let mut to = *(*xprt).timeout;
                let initval = connect_timeout.max(min);
                to.to_initval = initval;
                to.to_maxval = initval;
                *own = to;
                (*xprt).timeout = own;
                (*xprt).connect_timeout = connect_timeout;
            }
            if reconnect_timeout < (*xprt).max_reconnect_timeout {
                (*xprt).max_reconnect_timeout = reconnect_timeout;
            }
        });
    }

    /// `print_stats`, as `xprt_rdma_print_stats`: the same fields in the same order, for
    /// mountstats(8).
    ///
    /// # Safety
    ///
    /// Called by sunrpc with a live xprt of this class and a live `seq_file`.
    unsafe extern "C" fn print_stats(xprt: *mut bindings::rpc_xprt, seq: *mut bindings::seq_file) {
        // SAFETY: As required by the function.
        let s = unsafe { Self::private(xprt) }.transport.stats();
        // SAFETY: A live `seq_file` for the call; the bindgen opaque type and the kernel's are
        // the same C type.
        let seq = unsafe { SeqFile::from_raw(seq.cast()) };
        // SAFETY: As required by the function.
        unsafe { RpcXprt::from_raw(xprt) }.print_generic_stats(seq, true);
        seq_print!(
            seq,
            "{} {} {} {} {} {} {} {} {} {} {} ",
            s.read_chunk_count,
            s.write_chunk_count,
            s.reply_chunk_count,
            s.total_rdma_request,
            s.total_rdma_reply,
            s.pullup_copy_count,
            s.fixup_copy_count,
            s.hardway_register_count,
            s.failed_marshal_count,
            s.bad_reply_count,
            s.nomsg_call_count
        );
        seq_print!(
            seq,
            "{} {} {} {} {} {}\n",
            s.mrs_recycled,
            s.mrs_orphaned,
            s.mrs_allocated,
            s.local_inv_needed,
            s.empty_sendctx_q,
            0 // was reply_waits_for_send; column preserved
        );
    }

    /// `timer`: an RPC timed out waiting for its reply.
    ///
    /// # Safety
    ///
    /// Called by sunrpc with a live xprt of this class.
    unsafe extern "C" fn timer(xprt: *mut bindings::rpc_xprt, _task: *mut bindings::rpc_task) {
        // SAFETY: As required by the function.
        unsafe { Self::private(xprt) }.transport.timer();
    }

    /// `inject_disconnect`.
    ///
    /// # Safety
    ///
    /// Called by sunrpc with a live xprt of this class.
    unsafe extern "C" fn inject_disconnect(xprt: *mut bindings::rpc_xprt) {
        // SAFETY: As required by the function.
        unsafe { Self::private(xprt) }.transport.inject_disconnect();
    }

    /// `bc_setup`.
    ///
    /// # Safety
    ///
    /// Called by sunrpc with a live xprt of this class.
    #[cfg(CONFIG_SUNRPC_BACKCHANNEL)]
    unsafe extern "C" fn bc_setup(xprt: *mut bindings::rpc_xprt, reqs: c_uint) -> c_int {
        // SAFETY: As required by the function.
        let p = unsafe { Self::private(xprt) };
        // SAFETY: As required by the function; it stays alive during the call.
        let xprt = unsafe { RpcXprt::from_raw(xprt) };
        match T::bc_setup(&p.transport, xprt, reqs) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// `bc_maxpayload`.
    ///
    /// # Safety
    ///
    /// Called by sunrpc with a live xprt of this class.
    #[cfg(CONFIG_SUNRPC_BACKCHANNEL)]
    unsafe extern "C" fn bc_maxpayload(xprt: *mut bindings::rpc_xprt) -> usize {
        // SAFETY: As required by the function.
        unsafe { Self::private(xprt) }.transport.bc_maxpayload()
    }

    /// `bc_num_slots`.
    ///
    /// # Safety
    ///
    /// Called by sunrpc with a live xprt of this class.
    #[cfg(CONFIG_SUNRPC_BACKCHANNEL)]
    unsafe extern "C" fn bc_num_slots(xprt: *mut bindings::rpc_xprt) -> c_uint {
        // SAFETY: As required by the function.
        unsafe { Self::private(xprt) }.transport.bc_num_slots()
    }

    /// `bc_free_rqst`, as `xprt_rdma_bc_free_rqst`: gives the backward request back with its
    /// Receive, and drops the reference `xprt_enqueue_bc_request` took.
    ///
    /// # Safety
    ///
    /// Called by sunrpc with a backward request of a live xprt of this class, lent by
    /// [`BcRqst::enqueue`], which sunrpc gives back.
    #[cfg(CONFIG_SUNRPC_BACKCHANNEL)]
    unsafe extern "C" fn bc_free_rqst(rqst: *mut bindings::rpc_rqst) {
        let Some(ptr) = NonNull::new(rqst) else {
            return;
        };
        // SAFETY: As required by the function: the request is live, and holds its transport.
        let xprt = unsafe { (*rqst).rq_xprt };
        // SAFETY: As required by the function: its hold is set, and this is the one place it
        // is taken, once per lending.
        let hold = unsafe { BcMem::hold(rqst).replace(ptr::null_mut()) };
        // SAFETY: `hold` came from `into_foreign` of a `KBox<Wr<T::BcRecv>>` in
        // `BcRqst::<T>::enqueue`, taken back once (above).
        let recv = unsafe { KBox::<Wr<T::BcRecv>>::from_foreign(hold) };
        // INVARIANT: A backward request allocated for this xprt, given back by sunrpc: idle.
        let rqst = BcRqst {
            ptr,
            _p: PhantomData,
        };
        // SAFETY: The request holds a reference on `xprt` until the `xprt_put` below.
        unsafe { Self::private(xprt) }
            .transport
            .bc_free_rqst(rqst, recv);
        // SAFETY: Drops the reference of the request (`xprt_enqueue_bc_request`), once; the
        // request may be reused or freed already, and nothing here uses the transport after.
        unsafe { bindings::xprt_put(xprt) };
    }

    /// `bc_destroy`.
    ///
    /// # Safety
    ///
    /// Called by sunrpc with a live xprt of this class.
    #[cfg(CONFIG_SUNRPC_BACKCHANNEL)]
    unsafe extern "C" fn bc_destroy(xprt: *mut bindings::rpc_xprt, reqs: c_uint) {
        // SAFETY: As required by the function.
        unsafe { Self::private(xprt) }.transport.bc_destroy(reqs);
    }
}

/// The `XPRT_TRANSPORT_RDMA` ident shared by the client and server classes.
pub(crate) fn ident() -> i32 {
    bindings::xprt_transports_XPRT_TRANSPORT_RDMA
}

/// A registration of the `rdma` client transport class; unregistered on drop.
///
/// # Invariants
///
/// While a `Registration` exists, the C class is registered with `Adapter::<T>::OPS`.
pub(crate) struct Registration<T: RpcXprtOps> {
    _p: PhantomData<T>,
}

impl<T: RpcXprtOps> Registration<T> {
    /// Registers the class. Fails with `EEXIST` if another module (rpcrdma.ko) holds the ident.
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: `setup_callback` is a function whose code stays valid while the module is
        // loaded, which outlives the registration (it is undone in `drop`) and every transport
        // (each holds a module reference until `destroy` returns).
        to_result(unsafe {
            bindings::rpcrdma_shim_xprt_register(Some(Adapter::<T>::setup_callback))
        })?;
        // INVARIANT: The class was registered just above.
        Ok(Self { _p: PhantomData })
    }

    /// Waits for the work queued so far on the transport workqueue ([`RpcXprt::workqueue`]),
    /// including work of transports already destroyed (a connection's last reference may be
    /// a work item's).
    pub(crate) fn flush(&self) {
        // SAFETY: By the type invariant the class, and so its workqueue, is registered.
        unsafe { bindings::rpcrdma_shim_xprt_flush() };
    }
}

impl<T: RpcXprtOps> Drop for Registration<T> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the class is registered; unregistering waits for nothing
        // and no new `setup` call can start afterwards.
        unsafe { bindings::rpcrdma_shim_xprt_unregister() };
    }
}
