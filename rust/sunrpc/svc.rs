// SPDX-License-Identifier: GPL-2.0

//! Server transport class: the `svc_xprt_class` named `rdma` that nfsd listens on.
//!
//! The C shim (`shim/svc.c`) defines the class and a container of `struct svc_xprt` whose
//! private pointer is the Rust transport object (a [`KBox`] of an [`SvcXprtOps`]
//! implementation), from [`New`] until `xpo_free`. The class's `svc_xprt_ops` table is Rust's
//! ([`Adapter`]), as are the `rpc_xprt_ops` of the backchannel ([`BcAdapter`]).
//!
//! Handles the transport logic gets instead of raw pointers:
//!
//! - [`SvcXprt`]: a borrowed `struct svc_xprt` (flags, enqueueing, addresses); reference counted
//!   as `ARef<SvcXprt>` (`svc_xprt_get`/`svc_xprt_put`).
//! - [`SvcXprtLink`]: a revocable counted reference for contexts sunrpc does not serialize
//!   (completions, rdma_cm events). Its users act on the transport under its lock and never
//!   take the last reference, so `xpo_free` never runs in those contexts.
//! - [`SvcRqst`]: the request being received or answered (`struct svc_rqst`), with its
//!   per-request context ([`SvcXprtOps::Ctxt`], kept in `rq_xprt_ctxt`).
//!
//! C header: [`include/linux/sunrpc/svc_xprt.h`](srctree/include/linux/sunrpc/svc_xprt.h)

use core::{
    ffi::c_void,
    marker::PhantomData,
    ptr::NonNull, //
};

use kernel::{
    error::to_result,
    new_spinlock,
    page::{
        PAGE_SHIFT,
        PAGE_SIZE, //
    },
    prelude::*,
    seq_file::SeqFile,
    seq_print,
    sync::{
        aref::{
            ARef,
            AlwaysRefCounted, //
        },
        atomic::{
            atomic_load,
            cmpxchg,
            Full,
            Relaxed, //
        },
        rcu,
        Arc,
        SpinLock, //
    },
    types::{
        ForeignOwnable,
        Opaque, //
    },
    workqueue::Queue, //
};

use super::{
    xdr::{
        Pages,
        XdrParts, //
    },
    xprt::{
        Family,
        RpcRqst,
        RpcXprt,
        RqstBuf, //
    }, //
};
use crate::{
    bindings,
    rdma::{
        cm::{
            Net,
            SockAddr, //
        },
        rw::{
            RwCache,
            SgTable, //
        },
    }, //
};

/// The arguments of `xpo_create`: where to listen, borrowed for the call.
///
/// # Invariants
///
/// `sa` is null or points to a valid `struct sockaddr` of `salen` bytes, aligned as the kernel
/// aligns its address structures, and `serv` and `net` are the live service and namespace of the
/// call, for the lifetime `'a`.
pub(crate) struct CreateArgs<'a> {
    sa: *const bindings::sockaddr,
    salen: usize,
    serv: *mut bindings::svc_serv,
    net: *mut bindings::net,
    flags: i32,
    _p: PhantomData<&'a bindings::sockaddr>,
}

impl CreateArgs<'_> {
    /// Address family of the listening address.
    pub(crate) fn family(&self) -> Family {
        // SAFETY: By the type invariant `self.sa` is null or a valid `struct sockaddr`.
        Family::from(unsafe { SockAddr::raw_family(self.sa) })
    }

    /// The address to listen on; `EAFNOSUPPORT` unless it is IPv4 or IPv6.
    pub(crate) fn addr(&self) -> Result<SockAddr> {
        // SAFETY: `self.sa` is null or valid for `salen` bytes and aligned (type invariant).
        unsafe { SockAddr::from_raw(self.sa, self.salen) }.ok_or(EAFNOSUPPORT)
    }

    /// The network namespace of the service (`xpo_create`'s `net`): listeners are made there.
    pub(crate) fn net(&self) -> Result<Net<'_>> {
        // SAFETY: `net` is the live namespace of the call for `'a` (type invariant).
        unsafe { Net::from_raw(self.net) }
    }

    /// The `SVC_SOCK_*` flags of the request.
    pub(crate) fn flags(&self) -> i32 {
        self.flags
    }

    /// A listener of the service being created, owning `obj`.
    pub(crate) fn new_listener<T: SvcXprtOps>(&self, obj: KBox<T>) -> Result<New> {
        // SAFETY: `serv` and `net` are live (type invariant).
        unsafe { New::alloc(self.serv, self.net, obj, true) }
    }
}

/// A transport of the `rdma` class (`struct svc_xprt`).
///
/// # Invariants
///
/// The object is a live `svc_xprt`, the `xprt` of a `SvcXprtMem` allocated by [`New::alloc`].
#[repr(transparent)]
pub(crate) struct SvcXprt(Opaque<bindings::svc_xprt>);

// SAFETY: The functions called on an `SvcXprt` are safe from any thread (atomic flag updates,
// svc_xprt_enqueue, the kref).
unsafe impl Send for SvcXprt {}
// SAFETY: As above.
unsafe impl Sync for SvcXprt {}

// SAFETY: `svc_xprt_get`/`svc_xprt_put` manage the kref of the transport; the last put frees it
// through `xpo_free`.
unsafe impl AlwaysRefCounted for SvcXprt {
    fn inc_ref(&self) {
        // SAFETY: The transport is live (type invariant).
        unsafe { bindings::rpcrdma_shim_svc_xprt_get(self.as_ptr()) };
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: The caller gives back a reference it holds.
        unsafe { bindings::svc_xprt_put(obj.cast().as_ptr()) };
    }
}

impl SvcXprt {
    /// # Safety
    ///
    /// `ptr` is a live transport of our class for `'a`.
    unsafe fn from_raw<'a>(ptr: *mut bindings::svc_xprt) -> &'a Self {
        // SAFETY: `SvcXprt` is a transparent wrapper; validity is the caller's promise.
        unsafe { &*ptr.cast() }
    }

    fn as_ptr(&self) -> *mut bindings::svc_xprt {
        self.0.get()
    }

    /// Sets (`on`) or clears the flag `bit` (`XPT_*`) of `xpt_flags`.
    fn set_flag(&self, bit: u32, on: bool) {
        let flags = self.flags();
        // SAFETY: `flags` is the live transport's `xpt_flags`, which sunrpc changes only with
        // atomic bit operations, as these; `bit` is one of the kernel's `XPT_*` bits.
        unsafe {
            if on {
                kernel::bindings::set_bit(bit as usize, flags);
            } else {
                kernel::bindings::clear_bit(bit as usize, flags);
            }
        }
    }

    /// `&xpt_flags`.
    fn flags(&self) -> *mut usize {
        // SAFETY: The transport is live; this only takes the address of a field.
        unsafe { &raw mut (*self.as_ptr()).xpt_flags }
    }

    /// Whether the flag `bit` (`XPT_*`) of `xpt_flags` is set.
    fn test_flag(&self, bit: u32) -> bool {
        // SAFETY: `flags()` is the live transport's `xpt_flags`, changed only with atomic bit
        // operations; this load is `test_bit`'s.
        let flags = unsafe { atomic_load(self.flags(), Relaxed) };
        flags & (1 << bit) != 0
    }

    /// `svc_xprt_enqueue`: a thread looks at the transport's flags.
    fn enqueue(&self) {
        // SAFETY: The transport is live.
        unsafe { bindings::svc_xprt_enqueue(self.as_ptr()) };
    }

    /// A connection accepted on this listener, in the same service and namespace, owning
    /// `obj`.
    pub(crate) fn new_connection<T: SvcXprtOps>(&self, obj: KBox<T>) -> Result<New> {
        // SAFETY: The transport is live, so are its service and namespace, set once when it
        // was initialised.
        unsafe {
            New::alloc(
                (*self.as_ptr()).xpt_server,
                (*self.as_ptr()).xpt_net,
                obj,
                false,
            )
        }
    }

    /// Sets the local address (`xpt_local`).
    pub(crate) fn set_local(&self, a: &SockAddr) {
        let a = a.to_raw();
        // SAFETY: The transport is live; `a` is a valid `sockaddr` of `a.len()` bytes that
        // outlives the call.
        unsafe { bindings::rpcrdma_shim_svc_xprt_set_local(self.as_ptr(), a.as_ptr(), a.len()) };
    }

    /// Sets the peer's address (`xpt_remote`, with port 0 as svcrdma does for the reply
    /// cache, and `xpt_remotebuf`, with the real port).
    pub(crate) fn set_remote(&self, a: &SockAddr) {
        let a = a.to_raw();
        // SAFETY: The transport is live; `a` is a valid `sockaddr` of `a.len()` bytes that
        // outlives the call.
        unsafe { bindings::rpcrdma_shim_svc_xprt_set_remote(self.as_ptr(), a.as_ptr(), a.len()) };
        // As svcrdma: the client's source port is arbitrary and changes on reconnect; a fixed
        // value keeps the duplicate reply cache effective across reconnects.
        // SAFETY: The transport is live.
        unsafe { bindings::rpcrdma_shim_svc_xprt_set_remote_port(self.as_ptr(), 0) };
    }

    /// Marks data pending (`XPT_DATA`) and enqueues the transport for a thread.
    pub(crate) fn enqueue_data(&self) {
        self.set_flag(bindings::XPT_DATA, true);
        self.enqueue();
    }

    /// Marks a connection pending on a listener (`XPT_CONN`), and enqueues it if `enqueue`.
    pub(crate) fn conn_pending(&self, enqueue: bool) {
        self.set_flag(bindings::XPT_CONN, true);
        if enqueue {
            self.enqueue();
        }
    }

    /// Marks data pending (`XPT_DATA`) without enqueueing the transport: for the thread that
    /// holds it (`XPT_BUSY`), whose [`SvcXprt::received`] enqueues it.
    pub(crate) fn set_data(&self) {
        self.set_flag(bindings::XPT_DATA, true);
    }

    /// Clears `XPT_DATA`: nothing is left to receive.
    pub(crate) fn clear_data(&self) {
        self.set_flag(bindings::XPT_DATA, false);
    }

    /// Lets another thread pick the transport up (`svc_xprt_received`); once per receive.
    pub(crate) fn received(&self) {
        // SAFETY: The transport is live.
        unsafe { bindings::svc_xprt_received(self.as_ptr()) };
    }

    /// Pages of the largest RPC message of the transport's service (`svc_serv_maxpages`):
    /// what a receive context may describe (`rc_maxpages`).
    pub(crate) fn max_pages(&self) -> u32 {
        // SAFETY: The transport is live, so is its service.
        unsafe { bindings::rpcrdma_shim_svc_xprt_maxpages(self.as_ptr()) }
    }

    /// Asks sunrpc to close the transport (`svc_xprt_deferred_close`).
    pub(crate) fn deferred_close(&self) {
        // SAFETY: The transport is live.
        unsafe { bindings::svc_xprt_deferred_close(self.as_ptr()) };
    }

    /// Completes the backchannel Call `xid` with the RPC Reply `msg` and sets the
    /// backchannel's congestion window to `credits` requests (`svc_rdma_handle_bc_reply`).
    /// The Call is looked up, the Reply copied into it and the Call completed in one
    /// `queue_lock` section ([`RpcXprt::complete_locked`]): a second Reply with the same XID,
    /// taken by another nfsd thread, finds no Call then, and is dropped.
    ///
    /// `ENOTCONN` if the connection has no backchannel, `ENOENT` if no Call `xid` waits for a
    /// Reply, `EMSGSIZE` if `msg` is larger than the Call's receive buffer: the Reply is not
    /// used then.
    pub(crate) fn bc_reply(&self, xid: u32, msg: &[u8], credits: u32) -> Result {
        let len = u32::try_from(msg.len()).map_err(|_| EMSGSIZE)?;
        // The backchannel transport is used only inside this RCU read-side section, which
        // nothing below sleeps in (spinlocks, `kmap_local_page` copies, task wakeups): the
        // destroy op that unlinks a transport still linked (`BcAdapter::destroy_callback`)
        // waits for a grace period before freeing it. Not a reference (`xprt_get`): it would
        // be taken even then, the count not being zero.
        let rcu = rcu::read_lock();
        // SAFETY: The transport is live; `xpt_bc_xprt` is read once (`READ_ONCE`, ordered
        // before the uses of what it points to by their address dependency, as
        // `rcu_dereference`), as it is set and cleared (`cmpxchg`) when the backchannel is
        // linked and unlinked.
        let bc = unsafe { atomic_load(&raw mut (*self.as_ptr()).xpt_bc_xprt, Relaxed) };
        if bc.is_null() {
            return Err(ENOTCONN);
        }
        // SAFETY: A live connection holds a reference on its backchannel transport
        // (`xpt_bc_xprt`, put by `svc_xprt_free`), one of `BcAdapter::setup_callback`'s, of which
        // only `complete_locked` and `set_credits` are used, and only until `rcu` is dropped.
        // The one transport freed with that reference held, by `xprt_create_transport` failing
        // after the link, is unlinked first and freed only after a grace period, so it stays
        // live until then for a reader that loaded it just before the unlink.
        let bc = unsafe { RpcXprt::from_raw(bc) };
        bc.complete_locked(xid, |rqst| {
            // The Reply goes into the head of the receive buffer (`rq_rbuffer`), whole or not
            // at all.
            let b = rqst.xdr_buf(RqstBuf::Private);
            if len > b.head_len {
                return Err(EMSGSIZE);
            }
            if len != 0 {
                // SAFETY: `b` describes the receive buffer of a Call waiting for its Reply, found
                // under `queue_lock`, which is held until the Call is completed: no other
                // receiver finds it meanwhile, and its task reads the buffer only once it is
                // completed. The copy maps each page with `kmap_local_page` and does not sleep.
                unsafe { Pages::new(b, 0, len)?.write(msg)? };
            }
            Ok(len)
        })?;
        // After the completion, under `transport_lock` (never nested in `queue_lock`, as
        // sunrpc's own receive paths): the window only gates the Calls sent from now on.
        bc.set_credits(credits);
        drop(rcu);
        Ok(())
    }
}

/// A backchannel Call being sent (the `struct rpc_rqst` of a backchannel `rpc_xprt`, RFC 8167),
/// borrowed for the transport's `bc_send`.
///
/// # Invariants
///
/// The object is a live `rpc_rqst` of our backchannel class whose Call (`rq_snd_buf`) is
/// built and does not change while it is borrowed.
#[repr(transparent)]
pub(crate) struct BcRqst(Opaque<bindings::rpc_rqst>);

impl BcRqst {
    /// # Safety
    ///
    /// `ptr` satisfies the type invariants for `'a`.
    unsafe fn from_raw<'a>(ptr: *mut bindings::rpc_rqst) -> &'a Self {
        // SAFETY: Transparent wrapper; validity is the caller's promise.
        unsafe { &*ptr.cast() }
    }

    fn as_ptr(&self) -> *mut bindings::rpc_rqst {
        self.0.get()
    }

    /// The request, as the client's requests.
    fn rqst(&self) -> &RpcRqst {
        // SAFETY: The request is live and its buffers allocated while `self` is borrowed (type
        // invariant).
        unsafe { RpcRqst::from_raw(self.as_ptr()) }
    }

    /// The Call's XID (`rq_xid`).
    pub(crate) fn xid(&self) -> u32 {
        self.rqst().info().xid
    }

    /// The Call's length (`rq_snd_buf.len`).
    pub(crate) fn len(&self) -> u32 {
        self.rqst().info().snd.len
    }

    /// Copies the first `dst.len()` bytes of the Call into `dst`; `EINVAL` if it is shorter.
    pub(crate) fn copy(&self, dst: &mut [u8]) -> Result {
        if dst.len() > self.len() as usize {
            return Err(EINVAL);
        }
        self.rqst().copy_call(0, dst)
    }
}

/// A transport allocated for a Rust object and not yet handed to sunrpc; freed (through
/// `xpo_free`) if dropped.
///
/// # Invariants
///
/// `ptr` is a live transport from [`New::alloc`] (the `xprt` of a `SvcXprtMem`) with its birth
/// reference, unknown to sunrpc.
pub(crate) struct New {
    ptr: NonNull<bindings::svc_xprt>,
}

/// A transport of our class as allocated: the generic `svc_xprt` (first, so that a pointer to
/// it is one to the whole) and the Rust object (listener or connection, `into_foreign`).
#[repr(C)]
struct SvcXprtMem {
    xprt: bindings::svc_xprt,
    private: *mut c_void,
}

impl New {
    /// # Safety
    ///
    /// `serv` and `net` are live.
    unsafe fn alloc<T: SvcXprtOps>(
        serv: *mut bindings::svc_serv,
        net: *mut bindings::net,
        obj: KBox<T>,
        listener: bool,
    ) -> Result<Self> {
        let priv_ = obj.into_foreign();
        // SAFETY: `svc_xprt` is a C structure for which all zeroes is a valid value (svcrdma
        // allocates it with `kzalloc`); `svc_xprt_init` sets it up below.
        let xprt: bindings::svc_xprt = unsafe { core::mem::zeroed() };
        let mem = KBox::new(
            SvcXprtMem {
                xprt,
                private: priv_,
            },
            GFP_KERNEL,
        );
        match mem {
            Ok(mem) => {
                let m = KBox::into_raw(mem);
                // SAFETY: `m` is new and not shared; `serv` and `net` are live; the class is
                // static. The container owns `priv_` from now on and hands it to
                // `Adapter::<T>::free_callback`. A listener's `xpt_remotebuf` says so, as
                // svcrdma's.
                let ptr = unsafe {
                    let x = &raw mut (*m).xprt;
                    bindings::svc_xprt_init(
                        net,
                        &raw mut bindings::rpcrdma_shim_svc_class,
                        x,
                        serv,
                    );
                    if listener {
                        let name = b"listener\0";
                        let buf = &mut (*x).xpt_remotebuf;
                        for (d, s) in buf.iter_mut().zip(name) {
                            *d = *s as c_char;
                        }
                    }
                    NonNull::new_unchecked(x)
                };
                // INVARIANT: Just allocated, with its birth reference.
                let new = Self { ptr };
                // As svcrdma: RDMA transports count as congestion controlled (RFC 7530, 3.1).
                new.xprt().set_flag(bindings::XPT_CONG_CTRL, true);
                if listener {
                    new.xprt().set_flag(bindings::XPT_LISTENER, true);
                }
                Ok(new)
            }
            Err(e) => {
                // SAFETY: The allocation failed, so `priv_` is still ours.
                drop(unsafe { KBox::<T>::from_foreign(priv_) });
                Err(e.into())
            }
        }
    }

    /// The transport.
    pub(crate) fn xprt(&self) -> &SvcXprt {
        // SAFETY: Live while `self` holds the birth reference.
        unsafe { SvcXprt::from_raw(self.ptr.as_ptr()) }
    }

    fn into_raw(self) -> *mut bindings::svc_xprt {
        let p = self.ptr.as_ptr();
        core::mem::forget(self);
        p
    }
}

impl Drop for New {
    fn drop(&mut self) {
        // SAFETY: Never handed to sunrpc (type invariant): give back the birth reference.
        unsafe { bindings::rpcrdma_shim_svc_xprt_discard(self.ptr.as_ptr()) };
    }
}

/// A revocable counted reference to a transport, for contexts sunrpc does not serialize.
///
/// [`SvcXprtLink::with`] runs its closure under the link's spinlock, so it must not sleep; the
/// reference itself is only dropped by [`SvcXprtLink::clear`], in the caller's (process) context.
pub(crate) struct SvcXprtLink(Arc<SpinLock<Option<ARef<SvcXprt>>>>);

impl SvcXprtLink {
    /// An empty link.
    pub(crate) fn new() -> Result<Self> {
        Ok(Self(Arc::pin_init(new_spinlock!(None), GFP_KERNEL)?))
    }

    /// Points the link at `xprt`, taking a reference; the previous one is dropped.
    pub(crate) fn set(&self, xprt: &SvcXprt) {
        let old = self.0.lock().replace(ARef::from(xprt));
        drop(old);
    }

    /// Revokes the link and drops its reference (may free the transport; may sleep).
    pub(crate) fn clear(&self) {
        let old = self.0.lock().take();
        drop(old);
    }

    /// Runs `f` on the transport if the link is set, under the link's lock.
    pub(crate) fn with(&self, f: impl FnOnce(&SvcXprt)) {
        if let Some(x) = self.0.lock().as_ref() {
            f(x);
        }
    }
}

/// A request being received or answered (`struct svc_rqst`), with the transport context
/// `C` of [`SvcXprtOps::Ctxt`].
///
/// # Invariants
///
/// The object is the live `svc_rqst` of the current `xpo_*` call on a transport of our class;
/// its `rq_xprt_ctxt` is null or a `KBox<C>` from `into_foreign`.
#[repr(transparent)]
pub(crate) struct SvcRqst<C>(Opaque<bindings::svc_rqst>, PhantomData<C>);

/// Where the Call of a received message lies, for [`SvcRqst::set_call`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arg {
    /// `len` bytes at `offset` in the context's receive buffer ([`CallBuf::bytes`]).
    Inline {
        /// Offset of the Call in the buffer.
        offset: usize,
        /// Length of the Call.
        len: usize,
    },
    /// The first `len` bytes of `rq_pages`, filled by [`SvcRqst::fill_pages`] and RDMA Reads.
    Pages(u32),
}

/// A per-request context that holds the receive buffer an inline Call points into.
pub(crate) trait CallBuf {
    /// The received bytes; they must not move while the context exists.
    fn bytes(&self) -> &[u8];
}

impl<C: CallBuf + Send + 'static> SvcRqst<C> {
    /// # Safety
    ///
    /// `ptr` satisfies the type invariants for `'a`.
    unsafe fn from_raw<'a>(ptr: *mut bindings::svc_rqst) -> &'a mut Self {
        // SAFETY: Transparent wrapper; validity is the caller's promise.
        unsafe { &mut *ptr.cast() }
    }

    fn as_ptr(&self) -> *mut bindings::svc_rqst {
        self.0.get()
    }

    /// Bytes `rq_pages` can hold (`u32::MAX` rounded down to a page at most).
    pub(crate) fn arg_capacity(&self) -> u32 {
        // SAFETY: The request is live; `rq_maxpages` is set when its thread starts.
        let pages = unsafe { (*self.as_ptr()).rq_maxpages };
        (pages.min(u32::MAX as usize >> PAGE_SHIFT) << PAGE_SHIFT) as u32
    }

    /// The bytes `offset..offset + len` of `rq_res` (`res`) or of `rq_pages`, page by page.
    fn pages(&self, res: bool, offset: u32, len: u32) -> Result<Pages<'_>> {
        let b = if res {
            // SAFETY: The request is live; nfsd built its reply before `xpo_sendto`, the only
            // caller of `res_*`, and changes it no more.
            XdrParts::of(unsafe { &(*self.as_ptr()).rq_res })
        } else {
            // SAFETY: The request is live; `rq_pages` is set when its thread starts.
            XdrParts::pages(unsafe { (*self.as_ptr()).rq_pages }, self.arg_capacity())
        };
        // SAFETY: `b` describes `rq_res` or `rq_pages`, which the request holds while it is
        // borrowed.
        unsafe { Pages::new(b, offset, len) }
    }

    /// Copies `src` into `rq_pages` at `offset`, or zeroes `len` bytes there if `src` is
    /// `None`.
    pub(crate) fn fill_pages(&mut self, offset: u32, src: Option<&[u8]>, len: u32) -> Result {
        let len = match src {
            Some(s) => u32::try_from(s.len()).map_err(|_| EINVAL)?,
            None => len,
        };
        if len == 0 {
            return if offset <= self.arg_capacity() {
                Ok(())
            } else {
                Err(EINVAL)
            };
        }
        let pages = self.pages(false, offset, len)?;
        // SAFETY: `&mut self`: nothing else reads or writes the request's pages meanwhile (the
        // RDMA Read tables over them borrow `self`).
        unsafe {
            match src {
                Some(s) => pages.write(s),
                None => pages.zero(),
            }
        }
    }

    /// A scatterlist over `rq_pages[offset..offset + len]` in an object of `cache`, an RDMA
    /// Read sink.
    pub(crate) fn arg_sgt(
        &self,
        cache: &Arc<RwCache>,
        offset: u32,
        len: u32,
    ) -> Result<SgTable<'_>> {
        // SAFETY: Pages the request owns; the borrow of `self` keeps `fill_pages` (the only
        // CPU writer, `&mut self`) off them while the table lives.
        unsafe { SgTable::new(cache, self.pages(false, offset, len)?, len) }
    }

    /// A scatterlist over `rq_res[offset..offset + len]` in an object of `cache`, holding a
    /// reference on each of its pages, an RDMA Write source that may outlive the request
    /// (`xpo_sendto` returns before the Write is done, as `svc_rdma_save_io_pages` lets svcrdma
    /// do). `EOPNOTSUPP` if part of the range is memory without page references.
    pub(crate) fn res_sgt_owned(
        &self,
        cache: &Arc<RwCache>,
        offset: u32,
        len: u32,
    ) -> Result<SgTable<'static>> {
        // SAFETY: The reply is complete when it is sent: nfsd writes no more into it, and its
        // pages, released by the thread after `xpo_sendto`, are not reused while referenced
        // (page cache pages spliced into a READ reply may change under a concurrent write, as
        // with any transport that sends them without copying).
        unsafe { SgTable::new_ref(cache, self.pages(true, offset, len)?, len) }
    }

    /// Length of the reply (`rq_res.len`).
    pub(crate) fn res_len(&self) -> u32 {
        // SAFETY: The request is live, and its reply complete (see `pages`).
        unsafe { (*self.as_ptr()).rq_res.len }
    }

    /// Copies `dst.len()` bytes of the reply at `offset` into `dst`.
    pub(crate) fn res_read(&self, offset: u32, dst: &mut [u8]) -> Result {
        if dst.is_empty() {
            return Ok(());
        }
        let len = u32::try_from(dst.len()).map_err(|_| EINVAL)?;
        // SAFETY: The reply is complete when it is sent: nfsd writes no more into it.
        unsafe { self.pages(true, offset, len)?.read(dst) }
    }

    /// Completes a receive: the Call is `arg`, and `ctxt` stays with the request (in
    /// `rq_xprt_ctxt`) until sunrpc releases it through [`SvcXprtOps::release_ctxt`]. Sets
    /// the addresses and marks the request secure (RDMA has no privileged ports), as svcrdma
    /// does. Returns the Call's length.
    pub(crate) fn set_call(&mut self, ctxt: KBox<C>, arg: Arg) -> Result<u32> {
        // `rq_arg`: its head, the first page of `rq_pages` it takes up, its page list's length.
        let (head, head_len, first_page, page_len) = match arg {
            Arg::Inline { offset, len } => {
                let b = ctxt.bytes().get(offset..).ok_or(EINVAL)?;
                if b.len() < len {
                    return Err(EINVAL);
                }
                let len = u32::try_from(len).map_err(|_| EINVAL)?;
                (b.as_ptr().cast_mut(), len, 0, 0)
            }
            Arg::Pages(len) => {
                if len > self.arg_capacity() {
                    return Err(EINVAL);
                }
                // As svc_rdma_read_complete_multiple(): the head is the first page.
                // SAFETY: The request is live; `rq_pages` has a first page.
                let first =
                    unsafe { bindings::rpcrdma_shim_svc_rqst_page_address(self.as_ptr(), 0) };
                let head_len = len.min(PAGE_SIZE as u32);
                (first.cast::<u8>(), head_len, 1, len - head_len)
            }
        };
        let r = self.as_ptr();
        // SAFETY: The request is live and its thread's alone. `head` points into the buffer of
        // `ctxt`, which does not move and lives in `rq_xprt_ctxt` (set below) until released
        // after the request, or is the first page of `rq_pages`, whose next pages hold the
        // `page_len` bytes after it. The transport is live (it serves the request).
        unsafe {
            let arg = &mut (*r).rq_arg;
            arg.head[0].iov_base = head.cast();
            arg.head[0].iov_len = head_len as usize;
            arg.pages = (*r).rq_pages.add(first_page as usize);
            arg.page_base = 0;
            arg.page_len = page_len;
            arg.tail[0].iov_base = core::ptr::null_mut();
            arg.tail[0].iov_len = 0;
            arg.len = head_len + page_len;
            arg.buflen = arg.len;
            (*r).rq_prot = kernel::bindings::IPPROTO_MAX;
            bindings::svc_xprt_copy_addrs(r, (*r).rq_xprt);
            // As svcrdma: RDMA has no privileged ports; exports need not say "insecure".
            kernel::bindings::set_bit(bindings::RQ_SECURE as usize, &raw mut (*r).rq_flags);
        }
        self.release_ctxt_now();
        // SAFETY: The request is live; the context is a `KBox<C>` (type invariant).
        unsafe { (*r).rq_xprt_ctxt = ctxt.into_foreign() };
        Ok(head_len + page_len)
    }

    fn release_ctxt_now(&mut self) {
        // SAFETY: The request is live, and its thread's alone.
        let old = unsafe { (*self.as_ptr()).rq_xprt_ctxt };
        if !old.is_null() {
            // SAFETY: A `KBox<C>` by the type invariant; cleared right after.
            drop(unsafe { KBox::<C>::from_foreign(old) });
            // SAFETY: The request is live, and its thread's alone.
            unsafe { (*self.as_ptr()).rq_xprt_ctxt = core::ptr::null_mut() };
        }
    }

    /// The context of the Call being answered.
    pub(crate) fn ctxt(&self) -> Option<&C> {
        // SAFETY: The request is live, and its thread's alone.
        let p = unsafe { (*self.as_ptr()).rq_xprt_ctxt };
        // SAFETY: Null or a `KBox<C>` (type invariant), borrowed with `self`.
        (!p.is_null()).then(|| unsafe { KBox::<C>::borrow(p) })
    }

    /// The context of the Call being answered, mutably.
    pub(crate) fn ctxt_mut(&mut self) -> Option<&mut C> {
        // SAFETY: The request is live, and its thread's alone.
        let p = unsafe { (*self.as_ptr()).rq_xprt_ctxt };
        // SAFETY: Null or a `KBox<C>` (type invariant), exclusively borrowed with `self`.
        (!p.is_null()).then(|| unsafe { KBox::<C>::borrow_mut(p) })
    }
}

/// The server-side RDMA transport: one object per listener or connection.
pub(crate) trait SvcXprtOps: Send + Sync + Sized + 'static {
    /// What a received Call keeps until its reply is sent (`rq_xprt_ctxt`).
    type Ctxt: CallBuf + Send + 'static;

    /// Creates a listener (`xpo_create`).
    fn create(args: &CreateArgs<'_>) -> Result<New>;

    /// The next connection of a listener (`xpo_accept`); `xprt` is the listener.
    fn accept(&self, xprt: &SvcXprt) -> Option<New>;

    /// Receives one Call into `rqst` (`xpo_recvfrom`): its length, or 0 if there is none.
    fn recvfrom(&self, xprt: &SvcXprt, rqst: &mut SvcRqst<Self::Ctxt>) -> Result<u32>;

    /// Sends the reply of `rqst` (`xpo_sendto`). `xpo_sendto` then returns 0, as
    /// `svc_rdma_sendto` does (`svc_send` traces it as the status).
    fn sendto(&self, xprt: &SvcXprt, rqst: &mut SvcRqst<Self::Ctxt>) -> Result;

    /// nfsd's result payload at `offset`, `length` bytes of the reply being built
    /// (`xpo_result_payload`).
    fn result_payload(&self, rqst: &mut SvcRqst<Self::Ctxt>, offset: u32, length: u32) -> Result;

    /// The context of a finished request (`xpo_release_ctxt`).
    fn release_ctxt(&self, ctxt: KBox<Self::Ctxt>) {
        drop(ctxt);
    }

    /// The transport is being closed (`xpo_detach`).
    fn detach(&self, xprt: &SvcXprt);

    /// Whether a reply can be sent without waiting (`xpo_has_wspace`).
    fn has_wspace(&self) -> bool;

    /// Sends the backchannel Call `rqst` on the connection `xprt` (the backchannel's
    /// `send_request`, `xprt_rdma_bc_send_request`). `ENOTCONN` closes the connection.
    fn bc_send(&self, xprt: &SvcXprt, rqst: &BcRqst) -> Result {
        let _ = (xprt, rqst);
        Err(ENOTCONN)
    }

    /// The transport is freed (`xpo_free`): sunrpc is done with it, and its module reference
    /// goes once this returns. A teardown that must wait (for a port to come back, say) moves
    /// `this` into a work item on `deferred`, which the module drains before it goes.
    fn free(this: KBox<Self>, deferred: &Queue) {
        let _ = deferred;
        drop(this);
    }
}

/// The class's `svc_xprt_ops`, calling a [`SvcXprtOps`].
struct Adapter<T: SvcXprtOps>(PhantomData<T>);

impl<T: SvcXprtOps> Adapter<T> {
    const OPS: bindings::svc_xprt_ops = bindings::svc_xprt_ops {
        xpo_create: Some(Self::create_callback),
        xpo_accept: Some(Self::accept_callback),
        xpo_has_wspace: Some(Self::has_wspace_callback),
        xpo_recvfrom: Some(Self::recvfrom_callback),
        xpo_sendto: Some(Self::sendto_callback),
        xpo_result_payload: Some(Self::result_payload_callback),
        xpo_release_ctxt: Some(Self::release_ctxt_callback),
        xpo_detach: Some(Self::detach_callback),
        xpo_free: Some(Self::free_callback),
        xpo_kill_temp_xprt: Some(Self::kill_temp_xprt_callback),
        xpo_handshake: None,
    };

    /// The transport and its object.
    ///
    /// # Safety
    ///
    /// `xprt` is a live transport of our class, for `'a`.
    unsafe fn obj<'a>(xprt: *mut bindings::svc_xprt) -> (&'a T, &'a SvcXprt) {
        // SAFETY: `xprt` is a live transport of our class (the function's safety requirements),
        // whose private pointer is a `KBox<T>` from `New::alloc`, freed only by `free_callback`,
        // after every other callback.
        unsafe {
            let priv_ = (*xprt.cast::<SvcXprtMem>()).private;
            (KBox::<T>::borrow(priv_), SvcXprt::from_raw(xprt))
        }
    }

    /// # Safety
    ///
    /// Called by sunrpc with `sa` null or valid for `salen` bytes, and `serv` and `net`
    /// live, outliving the call.
    unsafe extern "C" fn create_callback(
        serv: *mut bindings::svc_serv,
        net: *mut bindings::net,
        sa: *mut bindings::sockaddr,
        salen: c_int,
        flags: c_int,
    ) -> *mut bindings::svc_xprt {
        // INVARIANT: sunrpc passes these for the duration of the call, `sa` of `salen` bytes (a
        // negative length is taken as 0, which no address fits in).
        let args = CreateArgs {
            sa,
            salen: usize::try_from(salen).unwrap_or(0),
            serv,
            net,
            flags,
            _p: PhantomData,
        };
        match T::create(&args) {
            Ok(new) => new.into_raw(),
            Err(e) => e.to_ptr(),
        }
    }

    /// # Safety
    ///
    /// `xprt` is a live listener of our class.
    unsafe extern "C" fn accept_callback(xprt: *mut bindings::svc_xprt) -> *mut bindings::svc_xprt {
        // SAFETY: By the function's safety requirements.
        let (obj, xprt) = unsafe { Self::obj(xprt) };
        // The transport sets XPT_CONN again if more connections are queued.
        xprt.set_flag(bindings::XPT_CONN, false);
        obj.accept(xprt)
            .map_or(core::ptr::null_mut(), |new| new.into_raw())
    }

    /// # Safety
    ///
    /// `rqstp` is a request in `xpo_recvfrom` on a live transport of our class.
    unsafe extern "C" fn recvfrom_callback(rqstp: *mut bindings::svc_rqst) -> c_int {
        // SAFETY: The request and its transport are live (the function's safety requirements).
        let (obj, xprt) = unsafe { Self::obj((*rqstp).rq_xprt) };
        // As svc_rdma_recvfrom: no reply pages to release and no context if we return early.
        // SAFETY: The request is live, and its thread's alone.
        unsafe {
            (*rqstp).rq_next_page = (*rqstp).rq_respages;
            (*rqstp).rq_xprt_ctxt = core::ptr::null_mut();
        }
        // INVARIANT: `rq_xprt_ctxt` was just set to null.
        // SAFETY: The request is live, the current `xpo_*` call's, on a transport of our class.
        let rqst = unsafe { SvcRqst::from_raw(rqstp) };
        match obj.recvfrom(xprt, rqst) {
            Ok(n) => c_int::try_from(n).unwrap_or(c_int::MAX),
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// `rqstp` is a request in `xpo_sendto` on a live transport of our class.
    unsafe extern "C" fn sendto_callback(rqstp: *mut bindings::svc_rqst) -> c_int {
        // SAFETY: By the function's safety requirements.
        let ((obj, xprt), rqst) =
            unsafe { (Self::obj((*rqstp).rq_xprt), SvcRqst::from_raw(rqstp)) };
        match obj.sendto(xprt, rqst) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// `rqstp` is a request being answered on a live transport of our class.
    unsafe extern "C" fn result_payload_callback(
        rqstp: *mut bindings::svc_rqst,
        offset: c_uint,
        length: c_uint,
    ) -> c_int {
        // SAFETY: By the function's safety requirements.
        let ((obj, _), rqst) = unsafe { (Self::obj((*rqstp).rq_xprt), SvcRqst::from_raw(rqstp)) };
        match obj.result_payload(rqst, offset, length) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// `xprt` is a live transport of our class; `ctxt` is null or a `KBox<T::Ctxt>` from
    /// `set_call`, given up by sunrpc.
    unsafe extern "C" fn release_ctxt_callback(xprt: *mut bindings::svc_xprt, ctxt: *mut c_void) {
        if ctxt.is_null() {
            return;
        }
        // SAFETY: By the function's safety requirements.
        let ((obj, _), ctxt) = unsafe { (Self::obj(xprt), KBox::<T::Ctxt>::from_foreign(ctxt)) };
        obj.release_ctxt(ctxt);
    }

    /// # Safety
    ///
    /// `xprt` is a live transport of our class.
    unsafe extern "C" fn detach_callback(xprt: *mut bindings::svc_xprt) {
        // SAFETY: By the function's safety requirements.
        let (obj, xprt) = unsafe { Self::obj(xprt) };
        obj.detach(xprt);
    }

    /// # Safety
    ///
    /// `xprt` is a transport of our class being freed; no callback follows.
    unsafe extern "C" fn free_callback(xprt: *mut bindings::svc_xprt) {
        kernel::task::might_sleep();
        // SAFETY: By the function's safety requirements the object is ours again.
        let this = unsafe { KBox::<T>::from_foreign((*xprt.cast::<SvcXprtMem>()).private) };
        // SAFETY: The class is registered while one of its transports exists (each holds a
        // module reference until `xpo_free` returns, and the registration ends in module exit),
        // so its workqueue is live during this call.
        let wq = unsafe { bindings::rpcrdma_shim_svc_wq_get() };
        // SAFETY: `wq` is a live workqueue for the duration of the call (see above); the
        // bindgen opaque type and the kernel's are the same C type.
        T::free(this, unsafe { Queue::from_raw(wq.cast()) });
        // SAFETY: sunrpc is done with the transport, and its object is gone; it is the `xprt`
        // of a `SvcXprtMem` of `New::alloc`, leaked from its `KBox`, freed once.
        drop(unsafe { KBox::from_raw(xprt.cast::<SvcXprtMem>()) });
    }

    /// # Safety
    ///
    /// `xprt` is a live transport of our class.
    unsafe extern "C" fn has_wspace_callback(xprt: *mut bindings::svc_xprt) -> c_int {
        // SAFETY: By the function's safety requirements.
        c_int::from(unsafe { Self::obj(xprt) }.0.has_wspace())
    }

    /// Nothing to do, as svcrdma's `svc_rdma_kill_temp_xprt`: sunrpc deletes the connection
    /// right after (`svc_delete_xprt`).
    extern "C" fn kill_temp_xprt_callback(_xprt: *mut bindings::svc_xprt) {}
}

/// A registration of the `rdma` server transport class; unregistered on drop.
///
/// # Invariants
///
/// While a `Registration` exists, the C class is registered with `Adapter::<T>::OPS`.
pub(crate) struct Registration<T: SvcXprtOps> {
    _p: PhantomData<T>,
}

impl<T: SvcXprtOps> Registration<T> {
    /// Registers the class. Fails with `EEXIST` if another module (rpcrdma.ko) holds the name.
    pub(crate) fn new() -> Result<Self> {
        let ops: &'static bindings::svc_xprt_ops = &Adapter::<T>::OPS;
        // SAFETY: `ops` is a static table whose callbacks stay valid while the module is loaded,
        // which outlives the registration (it is undone in `drop`).
        to_result(unsafe { bindings::rpcrdma_shim_svc_register(ops) })?;
        // INVARIANT: The class was registered just above.
        Ok(Self { _p: PhantomData })
    }
}

impl<T: SvcXprtOps> Registration<T> {
    /// Waits for the teardowns [`SvcXprtOps::free`] deferred so far.
    pub(crate) fn flush(&self) {
        // SAFETY: By the type invariant the class, and so its workqueue, is registered.
        unsafe { bindings::rpcrdma_shim_svc_flush() };
    }
}

impl<T: SvcXprtOps> Drop for Registration<T> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the class is registered.
        unsafe { bindings::rpcrdma_shim_svc_unregister() };
    }
}

/// The backchannel's `setup` and `rpc_xprt_ops`, sending through a [`SvcXprtOps::bc_send`].
struct BcAdapter<T: SvcXprtOps>(PhantomData<T>);

impl<T: SvcXprtOps> BcAdapter<T> {
    /// As `xprt_rdma_bc_procs`: the congestion-controlled generic slot handling, the buffers
    /// and statistics of `shim/svc_bc.c`, and the send and teardown here.
    const OPS: bindings::rpc_xprt_ops = bindings::rpc_xprt_ops {
        set_buffer_size: None,
        reserve_xprt: Some(bindings::xprt_reserve_xprt_cong),
        release_xprt: Some(bindings::xprt_release_xprt_cong),
        alloc_slot: Some(bindings::xprt_alloc_slot),
        free_slot: Some(bindings::xprt_free_slot),
        rpcbind: None,
        set_port: None,
        connect: None,
        get_srcaddr: None,
        get_srcport: None,
        buf_alloc: Some(bindings::rpcrdma_shim_bc_buf_alloc),
        buf_free: Some(bindings::rpcrdma_shim_bc_buf_free),
        prepare_request: None,
        send_request: Some(Self::send_request_callback),
        abort_send_request: None,
        wait_for_reply_request: Some(bindings::xprt_wait_for_reply_request_def),
        timer: None,
        release_request: Some(bindings::xprt_release_rqst_cong),
        close: Some(Self::close_callback),
        destroy: Some(Self::destroy_callback),
        set_connect_timeout: None,
        print_stats: Some(Self::print_stats_callback),
        enable_swap: None,
        disable_swap: None,
        inject_disconnect: None,
        bc_setup: None,
        bc_maxpayload: None,
        bc_num_slots: None,
        bc_free_rqst: None,
        bc_destroy: None,
    };

    /// As `xprt_setup_rdma_bc`: a transport for the connection `args->bc_xprt`, which must be
    /// a connection of ours, with the client's receive inline threshold as its `max_payload`
    /// (`xprt_rdma_max_inline_read`), and the address strings of its peer.
    ///
    /// # Safety
    ///
    /// Called by sunrpc (`xprt_create_transport`) with `args` valid for the call.
    unsafe extern "C" fn setup_callback(
        args: *mut bindings::xprt_create,
    ) -> *mut bindings::rpc_xprt {
        // SAFETY: `args` is valid (the function's safety requirements).
        let sxprt = unsafe { (*args).bc_xprt };
        // SAFETY: A non-null `bc_xprt` is a live transport (nfsd holds it while it sets up its
        // backchannel); ours is a connection of our class, not a listener.
        let ours = !sxprt.is_null()
            && unsafe { (*sxprt).xpt_class } == &raw mut bindings::rpcrdma_shim_svc_class
            && !unsafe { SvcXprt::from_raw(sxprt) }.test_flag(bindings::XPT_LISTENER);
        if !ours {
            return EINVAL.to_ptr();
        }
        let ops: &'static bindings::rpc_xprt_ops = &Self::OPS;
        let max_payload = super::sysctl::Client::get().max_inline_read;
        // SAFETY: `args` is valid, and so are its namespace and address.
        let x = unsafe {
            super::xprt::alloc_xprt(
                (*args).net,
                size_of::<bindings::rpc_xprt>(),
                (BC_REQUESTS, BC_REQUESTS),
                (*args).dstaddr.cast(),
                (*args).addrlen,
            )
        };
        let xprt = match x {
            Ok(x) => x.as_ptr(),
            Err(e) => return e.to_ptr(),
        };
        // SAFETY: `xprt` is new and not shared; the timeouts, the class and `ops` are static,
        // valid while the module is loaded, which each transport holds a reference on. As
        // `xprt_setup_rdma_bc`: connected at once, no bind, reestablish or idle timeouts
        // (zeroed).
        unsafe {
            (*xprt).timeout = &super::xprt::DEFAULT_TIMEOUT;
            kernel::bindings::set_bit(bindings::XPRT_CONNECTED as usize, &raw mut (*xprt).state);
            (*xprt).prot = bindings::xprt_transports_XPRT_TRANSPORT_BC_RDMA as c_int;
            (*xprt).xprt_class = &raw mut bindings::rpcrdma_shim_bc_class;
            (*xprt).ops = ops;
            (*xprt).max_payload = max_payload as usize;
        }
        // SAFETY: Set up just above, and sunrpc does not have it yet.
        unsafe { RpcXprt::from_raw(xprt) }.format_addresses();
        // Two references: the connection's (`xpt_bc_xprt`, put by `svc_xprt_free`) and the
        // caller's (`xprt_alloc`'s), as TCP's `xs_setup_bc_tcp`. `xprt_setup_rdma_bc` takes a
        // third one "put in __svc_rdma_free", which no longer puts it: there the transport is
        // never freed (harmless for rpcrdma.ko, which it holds no reference on; here it would
        // pin the module).
        // SAFETY: `xprt` is live and not shared yet.
        unsafe {
            (*xprt).bc_xprt = sxprt;
            bindings::xprt_get(xprt);
        }
        // Linked only if the connection has no backchannel yet: `rpc_create` creates one when
        // it finds none, so two callback clients (two client IDs on one connection) can both
        // get here. C and TCP store the pointer whatever it was, and the transport it held
        // leaks with its reference (and here a module reference).
        // SAFETY: `sxprt` is a live connection of ours (checked above); its `xpt_bc_xprt` is
        // written only here, atomically, and read once where it is used (`READ_ONCE` in
        // `SvcXprt::bc_reply`, sunrpc's single loads). Fully ordered, so `xprt`'s setup is
        // seen by whoever reads the pointer.
        let linked = unsafe {
            cmpxchg(
                &raw mut (*sxprt).xpt_bc_xprt,
                core::ptr::null_mut(),
                xprt,
                Full,
            )
        };
        if linked.is_err() {
            // The other setup won. Its transport cannot be handed back in place of this one:
            // `xprt_create_transport` initialises what `setup` returns (its cleanup work, timer,
            // server name and debugfs entry), which would corrupt a transport in use. This one,
            // seen by no one, is freed with its references and module reference, and the
            // callback setup fails: nfsd marks the callback path down and sets it up again
            // when the client binds the connection once more (`BIND_CONN_TO_SESSION`), then
            // finding the linked transport (`rpc_create`).
            // SAFETY: Set up above and unused: nothing but this function knows it.
            unsafe { Self::destroy_callback(xprt) };
            return EAGAIN.to_ptr();
        }
        xprt
    }

    /// The `print_stats` op, as `xprt_rdma_print_stats` on a backchannel: the generic
    /// counters (never idle), and every RDMA counter 0.
    ///
    /// # Safety
    ///
    /// Called by sunrpc with a live backchannel transport of ours and a live `seq_file`.
    unsafe extern "C" fn print_stats_callback(
        xprt: *mut bindings::rpc_xprt,
        seq: *mut bindings::seq_file,
    ) {
        // SAFETY: A live `seq_file` for the call; the bindgen opaque type and the kernel's are
        // the same C type.
        let seq = unsafe { SeqFile::from_raw(seq.cast()) };
        // SAFETY: As required by the function.
        unsafe { RpcXprt::from_raw(xprt) }.print_generic_stats(seq, false);
        seq_print!(seq, "0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n");
    }

    /// The `close` op, as `xprt_rdma_bc_close`: nothing to tear down (the Calls go out on the
    /// forward connection), and a congestion window of one request (C writes `RPC_CWNDSHIFT`
    /// there, which admits one request too).
    ///
    /// # Safety
    ///
    /// Called by sunrpc with a live backchannel transport of ours, with no lock held:
    /// `svc_delete_xprt` calls it bare, `xprt_autoclose` holding only `XPRT_LOCKED`.
    unsafe extern "C" fn close_callback(xprt: *mut bindings::rpc_xprt) {
        // SAFETY: As required by the function; `xprt_disconnect_done` takes the transport's
        // lock itself.
        unsafe { bindings::xprt_disconnect_done(xprt) };
        // SAFETY: As required by the function: a live transport of ours, of which
        // `set_credits` writes `cwnd` under the transport's lock.
        unsafe { RpcXprt::from_raw(xprt) }.set_credits(1);
    }

    /// As `xprt_rdma_bc_send_request`: the Call goes out on the forward connection; if it
    /// cannot, the connection is closed (the callback client sees it down and nfsd probes
    /// again).
    ///
    /// # Safety
    ///
    /// `rqst` is a built Call of a backchannel transport of ours, in its `send_request`.
    unsafe extern "C" fn send_request_callback(rqst: *mut bindings::rpc_rqst) -> c_int {
        // SAFETY: The request is live, and so is its transport, whose `bc_xprt` is the
        // connection of ours it was set up for (`setup_callback`, set once). The transport holds
        // no reference on the connection (the connection holds one on it: `xpt_bc_xprt`), but
        // nfsd does: `cl_cb_conn.cb_xprt`, put only after the callback client whose task sends
        // this request is shut down (`nfsd4_process_cb_update`; `__destroy_client` after
        // `nfsd4_shutdown_callback`).
        let sxprt = unsafe { (*(*rqst).rq_xprt).bc_xprt };
        // SAFETY: As above: a live transport of our class.
        let (obj, xprt) = unsafe { Adapter::<T>::obj(sxprt) };
        if xprt.test_flag(bindings::XPT_DEAD) {
            return ENOTCONN.to_errno();
        }
        // SAFETY: The request satisfies `BcRqst`'s invariants (the function's safety
        // requirements).
        let bc = unsafe { BcRqst::from_raw(rqst) };
        bc.rqst().xmit_start();
        match obj.bc_send(xprt, bc) {
            Ok(()) => 0,
            Err(e) => {
                if e == ENOTCONN {
                    // SAFETY: The transport is live.
                    unsafe { bindings::svc_xprt_close(sxprt) };
                }
                e.to_errno()
            }
        }
    }

    /// The last reference is gone (the forward connection's, put by `svc_xprt_free`, or
    /// nfsd's): the address strings, then the transport and its module reference.
    ///
    /// Also reached with references left, where the transport is freed whatever its count:
    /// from `setup_callback` when another setup linked its transport first (this one was never
    /// linked), and from `xprt_create_transport` when it fails after `setup_callback` returned
    /// (`kstrdup` of the server name, `ENOMEM`; a server name too long, `EINVAL`), through
    /// `xprt_destroy` and its work item. There the transport may still be the connection's
    /// (`xpt_bc_xprt`): it is unlinked first, or the connection would reach it freed
    /// (`SvcXprt::bc_reply`, `svc_delete_xprt`'s close, `svc_xprt_free`'s put, `rpc_create`),
    /// and freed after an RCU grace period, which ends the uses of a `SvcXprt::bc_reply` that
    /// loaded the link just before. Sleeps then: sunrpc calls it from a work item.
    ///
    /// # Safety
    ///
    /// `xprt` is a backchannel transport of ours that no one uses any more.
    unsafe extern "C" fn destroy_callback(xprt: *mut bindings::rpc_xprt) {
        // SAFETY: Live until freed below.
        let refs = unsafe { bindings::rpcrdma_shim_bc_refs(xprt) };
        // On the normal path the count is 0 (the last `xprt_put`). Otherwise it holds the
        // caller's reference (`xprt_alloc`'s: `xprt_create_transport` never puts it, it destroys
        // the transport directly) and, while the connection has not dropped it, the link's
        // (`setup_callback`'s `xprt_get`). 1: `svc_xprt_free` has put the link's reference and
        // the connection is gone or going: it must not be touched, and it no longer reaches
        // this transport. At least 2: the link's reference is still held, so `svc_xprt_free`
        // has not put it, which it does before the connection's memory goes (`xpo_free`).
        if refs >= 2 {
            // SAFETY: `bc_xprt` is the connection of ours `setup_callback` set up the transport
            // for (set once, before anyone else had the transport). It is live: its link's
            // reference is not put (above), and `xprt_create_transport`'s caller held it
            // (nfsd's `cb_xprt`) when it queued this call. That holds unless, between the
            // queueing and this call, nfsd put that reference, the connection was deleted, its
            // session records (`nfsd4_conn`) dropped theirs and `svc_xprt_free` began: C's and
            // TCP's setups, which never unlink, leave the transport linked forever instead.
            let sxprt = unsafe { (*xprt).bc_xprt };
            // Unlinked only if the link is this transport; a transport that lost the race in
            // `setup_callback` finds the winner there and leaves it. The link's reference is
            // this transport's own count, freed with it below: nothing to put (a put could not
            // reach 0, the caller's reference stays, and at 0 it would destroy the transport a
            // second time). The link holds no reference on the connection or on the module
            // (the module reference is the transport's own, put by `rpcrdma_shim_bc_free`).
            // SAFETY: `sxprt` is live (above). Its `xpt_bc_xprt` is written atomically, as
            // `setup_callback` writes it, and read once where it is used; fully ordered.
            let unlinked = unsafe {
                cmpxchg(
                    &raw mut (*sxprt).xpt_bc_xprt,
                    xprt,
                    core::ptr::null_mut(),
                    Full,
                )
            };
            if unlinked.is_ok() {
                // A `SvcXprt::bc_reply` that loaded the link before the unlink uses the
                // transport in an RCU read-side section: wait until every such section ends
                // (sunrpc's work item may sleep). Only after an unlink: no reader can hold a
                // transport never linked, or one whose connection is gone (`svc_xprt_free`'s
                // put; `bc_reply` runs on a live connection).
                rcu::synchronize_rcu();
            }
        }
        // SAFETY: Live until freed below.
        unsafe { RpcXprt::from_raw(xprt) }.free_addresses();
        // SAFETY: From `setup_callback`, and unused from now on.
        unsafe { bindings::rpcrdma_shim_bc_free(xprt) };
    }
}

/// Backward requests of a backchannel transport (`RPCRDMA_MAX_BC_REQUESTS`).
const BC_REQUESTS: u32 = 2;

/// A registration of the `rdma backchannel` client transport class (`XPRT_TRANSPORT_BC_RDMA`,
/// RFC 8167): nfsd's callback client creates its `rpc_xprt` over a connection of the server
/// class, and sends its Calls through that connection's [`SvcXprtOps::bc_send`]. Unregistered
/// on drop.
///
/// The class creates transports only for connections of the server class (checked in
/// `BcAdapter::setup_callback`), which exist only while that class is registered: each holds a
/// module reference, and the module unregisters the server class when it goes.
///
/// # Invariants
///
/// While a `BcRegistration` exists, the C class is registered with `BcAdapter::<T>`'s setup.
pub(crate) struct BcRegistration<T: SvcXprtOps>(PhantomData<T>);

impl<T: SvcXprtOps> BcRegistration<T> {
    /// Registers the backchannel class. Fails with `EEXIST` if another module (rpcrdma.ko)
    /// holds its ident.
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: The class is a static object of the shim, the setup function and the table it
        // hands out are static, valid while the module is loaded, which outlives the
        // registration (undone in `drop`).
        to_result(unsafe {
            bindings::rpcrdma_shim_bc_register(Some(BcAdapter::<T>::setup_callback))
        })?;
        // INVARIANT: Registered just above.
        Ok(Self(PhantomData))
    }
}

impl<T: SvcXprtOps> Drop for BcRegistration<T> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the class is registered.
        unsafe { bindings::rpcrdma_shim_bc_unregister() };
    }
}
