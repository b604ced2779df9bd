// SPDX-License-Identifier: GPL-2.0

//! The kernel's generic RDMA Read/Write API (`rdma_rw_ctx_*`), as the server transport uses it.
//!
//! A [`SgTable`] describes local memory (built by the abstraction that owns that memory); a
//! [`Ctx`] maps it for one remote segment (`rdma_rw_ctx_init`, which may
//! register MRs, e.g. for RDMA Reads on iWARP); [`Qp::post_rw_wait`] posts the contexts' work
//! requests as one chain, either followed by a Send or signaling on their own, and waits for
//! the chain to complete. Because posting and waiting are one call, a context cannot be
//! destroyed while its work requests are in flight, and the memory it describes only has to
//! outlive that call, which the lifetimes express. [`Qp::post_rw_send`] posts such a chain
//! ahead of a Send without waiting: the contexts then travel with the Send's [`Wr`].
//!
//! The chains are built here: `rdma_rw_ctx_wrs` links each context's work requests ahead of
//! the next, the last ahead of the Send (a `struct ib_send_wr` on the stack, which the provider
//! copies while posting) or signaled itself. A context and the table it maps share one object
//! of the C shim (`struct rpcrdma_shim_rw`: the `rdma_rw_ctx`, what `rdma_rw_ctx_destroy`
//! needs again, and the table's first entries), which an [`RwCache`] keeps for the next
//! transfer of the connection.
//!
//! C header: [`include/rdma/rw.h`](srctree/include/rdma/rw.h)

use core::{
    marker::PhantomData,
    mem::ManuallyDrop,
    ptr::{
        null_mut,
        NonNull, //
    },
};

use kernel::{
    error::to_result,
    new_condvar,
    new_spinlock,
    page::BorrowedPage,
    prelude::*,
    sync::{
        Arc,
        CondVar,
        CondVarTimeoutResult,
        SpinLock, //
    },
    time::{
        delay::fsleep,
        msecs_to_jiffies,
        Delta, //
    }, //
};

use super::{
    cm::{
        Handler,
        Id, //
    },
    ratelimit::pr_warn_peer,
    verbs::{
        send_wr,
        Cq,
        DmaBuf,
        Done,
        Pd,
        Qp,
        QpCaps,
        Wc,
        Wr, //
    },
    COUNTERS, //
};
use crate::bindings;

/// An rdma_rw context object (`struct rpcrdma_shim_rw`: room for a context and the scatterlist
/// it maps, the first `RPCRDMA_SHIM_RW_SGES` entries inside), with neither.
///
/// # Invariants
///
/// `0` was returned by `rpcrdma_shim_rw_alloc`, is owned by this object, and has neither a
/// table nor a context.
struct Obj(NonNull<bindings::rpcrdma_shim_rw>);

// SAFETY: The object is plain memory; it may be used and freed on any thread.
unsafe impl Send for Obj {}

impl Drop for Obj {
    fn drop(&mut self) {
        // SAFETY: Owned, with nothing in it to release first (type invariants).
        unsafe { bindings::rpcrdma_shim_rw_free(self.0.as_ptr()) };
        COUNTERS.rw_objs.free();
    }
}

/// The rdma_rw context objects of one connection's transfers, as svcrdma's `sc_rw_ctxts`
/// (`svc_rdma_get_rw_ctxt`): a transfer takes one and gives it back when it is done, so that
/// after the first few no transfer allocates one. Holds at most the capacity it is created
/// with; the objects are freed with the cache.
#[pin_data]
pub(crate) struct RwCache {
    #[pin]
    free: SpinLock<KVec<Obj>>,
}

impl RwCache {
    /// A cache keeping up to `max` objects (the transfers a connection has in flight at once).
    pub(crate) fn new(max: u32) -> Result<Arc<Self>> {
        let free = KVec::with_capacity(max as usize, GFP_KERNEL)?;
        Arc::pin_init(
            pin_init!(Self {
                free <- new_spinlock!(free),
            }),
            GFP_KERNEL,
        )
    }

    /// An object from the cache, or a new one.
    fn take(&self) -> Result<Obj> {
        if let Some(o) = self.free.lock().pop() {
            return Ok(o);
        }
        // SAFETY: No precondition.
        let p = NonNull::new(unsafe { bindings::rpcrdma_shim_rw_alloc() }).ok_or(ENOMEM)?;
        COUNTERS.rw_objs.alloc();
        // INVARIANT: Fresh from `rpcrdma_shim_rw_alloc`, with neither a table nor a context.
        Ok(Obj(p))
    }

    /// Keeps `o` for a later transfer, or frees it if the cache is full.
    fn give(&self, o: Obj) {
        let r = self.free.lock().push_within_capacity(o);
        // Full: `o` is freed here, outside the lock.
        drop(r);
    }
}

/// A scatterlist (`struct sg_table`) over memory borrowed for `'a`, in an object of an
/// [`RwCache`], to which the object goes back when the table is dropped.
///
/// # Invariants
///
/// `obj` holds a table (`rpcrdma_shim_rw_sgt_alloc`) each of whose entries describes memory
/// valid for `'a`, and no context; `obj` is taken only in `drop`. A table either borrows its
/// memory for `'a`, or (`refs`, with `'a` being `'static`) holds a reference on the page of
/// each entry, which keeps the memory allocated while it exists.
pub(crate) struct SgTable<'a> {
    obj: ManuallyDrop<Obj>,
    cache: Arc<RwCache>,
    refs: bool,
    _p: PhantomData<&'a mut [u8]>,
}

/// A piece of memory within one page: the page, the offset in it, the length.
type Piece<'a> = (BorrowedPage<'a>, u32, u32);

/// Fills a table of `pieces` in an object of `cache`; the pieces must cover `len` bytes
/// (`EINVAL` if not). With `refs`, takes a reference on the page of each (`EOPNOTSUPP` if one
/// has none to take). The object holds the table on success (the caller's to account for and
/// free), and goes back to `cache` on failure.
fn build<'a>(
    cache: &RwCache,
    pieces: impl Iterator<Item = Piece<'a>> + Clone,
    len: u32,
    refs: bool,
) -> Result<Obj> {
    let (nents, covered) = pieces
        .clone()
        .fold((0u32, 0u64), |(n, c), p| (n + 1, c + u64::from(p.2)));
    if nents == 0 || covered != u64::from(len) {
        return Err(EINVAL);
    }
    let obj = cache.take()?;
    let rw = obj.0.as_ptr();
    // SAFETY: `rw` has no table (`Obj` invariant); any entry count is accepted.
    if let Err(e) = to_result(unsafe { bindings::rpcrdma_shim_rw_sgt_alloc(rw, nents) }) {
        cache.give(obj);
        return Err(e);
    }
    // SAFETY: `rw` holds a table of `nents` entries now.
    let mut sg = unsafe { bindings::rpcrdma_shim_rw_sgl(rw) };
    for (i, (page, offset, n)) in pieces.clone().take(nents as usize).enumerate() {
        // SAFETY: The page is valid now (a `BorrowedPage`).
        if refs && !unsafe { bindings::rpcrdma_shim_page_try_get(page.as_ptr().cast()) } {
            for (page, _, _) in pieces.take(i) {
                // SAFETY: A reference taken on this page just above.
                unsafe { bindings::rpcrdma_shim_page_put(page.as_ptr().cast()) };
            }
            // SAFETY: The table allocated above, with no context over it; the references
            // taken are dropped just above, so it is freed without putting pages.
            unsafe { bindings::rpcrdma_shim_rw_sgt_free(rw, false) };
            // INVARIANT: Neither a table nor a context any more.
            cache.give(obj);
            return Err(EOPNOTSUPP);
        }
        // SAFETY: `sg` is entry `i` of the `nents` entries of the table (the walk is taken
        // `nents` times); the page is valid for as long as the caller's table says.
        sg = unsafe { bindings::rpcrdma_shim_sg_set_page(sg, page.as_ptr().cast(), n, offset) };
    }
    COUNTERS.sgts.alloc();
    Ok(obj)
}

impl<'a> SgTable<'a> {
    /// A table of `pieces`, each within one page, covering `len` bytes (`EINVAL` if they do
    /// not), in an object of `cache`.
    ///
    /// # Safety
    ///
    /// The CPU leaves the memory of the pieces alone while the result exists (the device
    /// reads or writes it).
    pub(crate) unsafe fn new(
        cache: &Arc<RwCache>,
        pieces: impl Iterator<Item = Piece<'a>> + Clone,
        len: u32,
    ) -> Result<Self> {
        let obj = build(cache, pieces, len, false)?;
        // INVARIANT: A fresh table over memory valid for `'a`, and no context.
        Ok(Self {
            obj: ManuallyDrop::new(obj),
            cache: cache.clone(),
            refs: false,
            _p: PhantomData,
        })
    }

    /// The object holding the table.
    fn as_ptr(&self) -> *mut bindings::rpcrdma_shim_rw {
        self.obj.0.as_ptr()
    }
}

impl SgTable<'static> {
    /// A table of `pieces`, each within one page, covering `len` bytes (`EINVAL` if they do
    /// not), in an object of `cache`, holding a reference on the page of each, so that it may
    /// outlive the borrow of the memory. `EOPNOTSUPP` if a page has no reference to take (slab
    /// memory).
    ///
    /// # Safety
    ///
    /// The CPU leaves the memory of the pieces unchanged while the result exists (its
    /// references keep it allocated, not unchanged).
    pub(crate) unsafe fn new_ref<'b>(
        cache: &Arc<RwCache>,
        pieces: impl Iterator<Item = Piece<'b>> + Clone,
        len: u32,
    ) -> Result<Self> {
        let obj = build(cache, pieces, len, true)?;
        // INVARIANT: The references make the memory valid for as long as the table exists.
        Ok(Self {
            obj: ManuallyDrop::new(obj),
            cache: cache.clone(),
            refs: true,
            _p: PhantomData,
        })
    }
}

impl Drop for SgTable<'_> {
    fn drop(&mut self) {
        // SAFETY: The object holds a table and no context (type invariant: a `Mapped`
        // destroys its context before its table is dropped). A table with references holds
        // one on the page of each entry (type invariant), dropped once, here.
        unsafe { bindings::rpcrdma_shim_rw_sgt_free(self.as_ptr(), self.refs) };
        COUNTERS.sgts.free();
        // SAFETY: `obj` is taken here only, and not used again.
        let obj = unsafe { ManuallyDrop::take(&mut self.obj) };
        // INVARIANT: Neither a table nor a context any more.
        self.cache.give(obj);
    }
}

/// Direction of an RDMA transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// RDMA Read: remote memory into the local pages.
    Read,
    /// RDMA Write: local memory to the remote segment.
    Write,
}

/// A table with an `rdma_rw_ctx` mapping it for one remote segment.
///
/// # Invariants
///
/// The object of `sgt` holds an initialised context over its table, on a QP that outlives
/// this value (its owner, [`Ctx`] or [`PostedRw`], ensures it), none of whose work requests is
/// in flight when it is dropped.
struct Mapped<'a> {
    sgt: SgTable<'a>,
    wrs: u32,
}

impl Drop for Mapped<'_> {
    fn drop(&mut self) {
        // SAFETY: The context is initialised and idle, and its QP is alive (type invariants);
        // the table it maps is dropped after this (a field), not before.
        unsafe { bindings::rpcrdma_shim_rw_destroy(self.sgt.as_ptr()) };
        COUNTERS.rw_ctxs.free();
    }
}

/// An `rdma_rw_ctx` for one remote segment, over a table of memory borrowed for `'t`.
///
/// # Invariants
///
/// `m`'s context is on `_qp`'s QP, which the borrow keeps alive; none of its work requests is
/// in flight outside [`Qp::post_rw_wait`].
pub(crate) struct Ctx<'a, 't, H: Handler> {
    m: Mapped<'t>,
    _qp: &'a Qp<H>,
}

impl<'a, 't, H: Handler> Ctx<'a, 't, H> {
    /// Maps `sgt` for a transfer with the remote segment (`rkey`, `remote_addr`) of the same
    /// length (`rdma_rw_ctx_init`).
    pub(crate) fn new(
        qp: &'a Qp<H>,
        sgt: SgTable<'t>,
        remote_addr: u64,
        rkey: u32,
        op: Op,
    ) -> Result<Self> {
        // SAFETY: The QP is live for `'a`; the object holds a valid table and no context (its
        // invariant).
        let rc = unsafe {
            bindings::rpcrdma_shim_rw_init(
                sgt.as_ptr(),
                qp.as_ptr(),
                qp.port(),
                remote_addr,
                rkey,
                op == Op::Write,
            )
        };
        // On failure no context exists, and `sgt` is dropped as it was.
        to_result(rc)?;
        COUNTERS.rw_ctxs.alloc();
        // INVARIANT: Initialised just above on `qp`'s QP; nothing is posted yet.
        Ok(Self {
            m: Mapped {
                sgt,
                wrs: rc.unsigned_abs(),
            },
            _qp: qp,
        })
    }

    /// Send Queue entries this context uses when posted.
    pub(crate) fn wrs(&self) -> u32 {
        self.m.wrs
    }
}

/// An rdma_rw context posted ahead of a Send by [`Qp::post_rw_send`], with its table (over
/// memory valid for as long as the table exists, e.g. by page references): it rides in the Send's
/// [`Wr`] and is destroyed when that completes, before the request is handed back to
/// [`Done::done`].
///
/// # Invariants
///
/// `0`'s context is on a QP the owner of the Send's [`Wr`] keeps. It is dropped only while
/// idle and while its QP exists: after the Send ending its chain completed (the QP is drained
/// before it is destroyed, so that completion comes first), or after a failed post (the QP drained
/// if part of the chain was posted).
pub(crate) struct PostedRw(Mapped<'static>);

/// The outcome of a chain, shared between [`Qp::post_rw_wait`] and the completion.
#[pin_data]
struct WaitState {
    /// The chain's completion, once it came.
    #[pin]
    wc: SpinLock<Option<Wc>>,
    /// Signalled when `wc` is set.
    #[pin]
    done: CondVar,
}

/// How long a chain may stay uncompleted before the QP is flushed (its peer is taken for dead).
/// A chain normally completes in milliseconds, or ends in an error once the device's transport
/// gives up (rxe: seconds); iWARP over a dead TCP peer takes TCP's retransmission timeout
/// (15 minutes), and a waiting nfsd thread would hold `rpc.nfsd 0` that long.
const STALL_MS: u32 = 60_000;

/// How often a waiter with a signal pending (which cannot sleep interruptibly) looks for the
/// completion.
const SIGNAL_POLL_MS: i64 = 10;

/// The [`Done`] of a chain's signaled work request: records the completion and wakes the
/// waiter.
struct Waiter(Arc<WaitState>);

impl Done for Waiter {
    fn done(wr: KBox<Wr<Self>>, wc: &Wc) {
        let state = wr.data().0.clone();
        // The buffers are unmapped and freed before the waiter returns.
        drop(wr);
        *state.wc.lock() = Some(*wc);
        state.done.notify_all();
    }
}

/// Most contexts in one chain.
pub(crate) const MAX_CHAIN: usize = 64;

/// What [`Qp::post_rw_send`] failed with, and the request it hands back (its contexts are
/// destroyed).
pub(crate) type PostError<T> = (Error, KBox<Wr<T>>);

impl<H: Handler> Qp<H> {
    /// Creates the QP of `id` with room for `max_rdma_ctxs` rdma_rw contexts (which adds their
    /// Send Queue entries and, where the device needs them, an MR pool); see [`Qp::new`].
    pub(crate) fn new_rw(
        id: &Id<H>,
        pd: &Arc<Pd>,
        send_cq: &Arc<Cq>,
        recv_cq: &Arc<Cq>,
        caps: QpCaps,
        max_rdma_ctxs: u32,
    ) -> Result<Self> {
        Self::create_with(id, pd, send_cq, recv_cq, caps, max_rdma_ctxs, false)
    }

    /// Chains the work requests of the contexts `rws`, in order, ahead of `tail` (null for
    /// none) with `rdma_rw_ctx_wrs`, the last context's last one signaled on `signal` (unless
    /// null), and returns the head of the chain (`tail` if there is no context).
    ///
    /// # Safety
    ///
    /// Each of `rws` is a live, idle context on this QP.
    unsafe fn rw_chain(
        &self,
        rws: impl DoubleEndedIterator<Item = *mut bindings::rpcrdma_shim_rw>,
        signal: *mut bindings::ib_cqe,
        tail: *mut bindings::ib_send_wr,
    ) -> *mut bindings::ib_send_wr {
        let (mut first, mut signal) = (tail, signal);
        for rw in rws.rev() {
            // SAFETY: `rw` is a live, idle context on this QP (the safety requirements), so its
            // work requests may be (re)built; the QP is live and the port is its id's.
            first = unsafe {
                bindings::rdma_rw_ctx_wrs(
                    bindings::rpcrdma_shim_rw_ctx(rw),
                    self.as_ptr(),
                    self.port(),
                    signal,
                    first,
                )
            };
            signal = null_mut();
        }
        first
    }

    /// Posts the chain `first` built by [`Qp::rw_chain`] (`ib_post_send`). `EIO` if the device
    /// took part of it: the caller must drain the QP before the contexts are destroyed. Any
    /// other error: nothing was posted.
    ///
    /// # Safety
    ///
    /// `first` is null or a chain of valid work requests, whose signaled ones complete on
    /// `ib_cqe`s that stay valid until they complete.
    unsafe fn post_rw_chain(&self, first: *mut bindings::ib_send_wr) -> Result {
        if first.is_null() {
            return Err(EINVAL);
        }
        let mut bad: *const bindings::ib_send_wr = core::ptr::null();
        // SAFETY: The QP is live; the chain is valid for the call (the safety requirements),
        // in which the provider copies it.
        let rc = unsafe { bindings::rpcrdma_shim_ib_post_send(self.as_ptr(), first, &mut bad) };
        if rc != 0 && !core::ptr::eq(bad, first) {
            return Err(EIO);
        }
        to_result(rc)
    }

    /// Posts the chain `first` built by [`Qp::rw_chain`], handing `wr` to the device until its
    /// completion brings it back to [`Done::done`]. On failure `wr` is handed back, the QP
    /// drained first if part of the chain was posted (`EIO`), so that nothing of it is in
    /// flight.
    ///
    /// # Safety
    ///
    /// `first` is null or a chain of valid work requests whose last, and no other, is signaled,
    /// on the `ib_cqe` of `wr`.
    unsafe fn post_rw_owned<T: Done>(
        &self,
        first: *mut bindings::ib_send_wr,
        wr: KBox<Wr<T>>,
    ) -> core::result::Result<(), PostError<T>> {
        let raw_wr = KBox::into_raw(wr);
        COUNTERS.posted.alloc();
        // SAFETY: The chain is valid, and its signaled request completes on the `cqe` of
        // `raw_wr` (the safety requirements), which the device owns from now on and hands back
        // to `Wr::done_callback`.
        if let Err(e) = unsafe { self.post_rw_chain(first) } {
            if e == EIO {
                // The head of the chain is on the QP, its signaled end is not: flush it, so
                // that the contexts are idle when destroyed.
                pr_err!("RDMA work request chain posted only in part: draining the QP\n");
                self.drain();
            }
            // SAFETY: Posting stops at the first failing work request, so the signaled one,
            // which ends the chain, was not posted: `raw_wr` is ours again.
            let wr = unsafe { KBox::from_raw(raw_wr) };
            COUNTERS.posted.free();
            return Err((e, wr));
        }
        Ok(())
    }

    /// Posts the work requests of `ctxs`, then a signaled Send of the buffers of `wr` (with
    /// invalidation of the rkey in `inv`), as one chain, and returns without waiting: the
    /// contexts go with `wr` and are destroyed when the Send completes (or is flushed), before
    /// `wr` comes back to [`Done::done`]. Every context's table is over memory valid for as
    /// long as it exists (e.g. [`SgTable::new_ref`]), since it outlives the call. The caller
    /// accounts for the Send Queue entries ([`Ctx::wrs`], plus one for the Send).
    ///
    /// On failure `wr` is handed back with the contexts destroyed; if part of the chain was
    /// posted (`EIO`), the QP was drained first.
    pub(crate) fn post_rw_send<T: Done>(
        &self,
        ctxs: KVec<Ctx<'_, 'static, H>>,
        mut wr: KBox<Wr<T>>,
        inv: Option<u32>,
    ) -> core::result::Result<(), PostError<T>> {
        if !wr.rw.is_empty() || ctxs.iter().any(|c| !core::ptr::eq(c._qp, self)) {
            return Err((EINVAL, wr));
        }
        if wr.rw.reserve(ctxs.len(), GFP_KERNEL).is_err() {
            return Err((ENOMEM, wr));
        }
        let mut sges = [bindings::ib_sge::default(); super::verbs::MAX_SGE];
        let nsge = match wr.sges_for(self, &mut sges) {
            Ok(n) => n,
            Err(e) => return Err((e, wr)),
        };
        for Ctx { m, _qp } in ctxs {
            // INVARIANT: A context on this QP (which the caller keeps until the Send completes),
            // idle until posted below; a failed post drops it with the QP alive.
            if let Err(p) = wr.rw.push_within_capacity(PostedRw(m)) {
                // Cannot happen (reserved above); the context was never posted.
                drop(p);
                wr.rw.clear();
                return Err((ENOMEM, wr));
            }
        }
        let mut send = match send_wr(wr.cqe_ptr(), sges.as_mut_ptr(), nsge, inv) {
            Ok(w) => w,
            Err(e) => {
                // The contexts were never posted.
                wr.rw.clear();
                return Err((e, wr));
            }
        };
        // SAFETY: Each of `wr.rw` is a live context on this QP, idle until posted below.
        let first = unsafe {
            self.rw_chain(
                wr.rw.iter().map(|p| p.0.sgt.as_ptr()),
                null_mut(),
                &mut send,
            )
        };
        // SAFETY: The chain is the contexts' work requests (in the contexts, which stay put
        // until the completion), none signaled, ending in `send`, a signaled Send of the `nsge`
        // SGEs of `sges` that completes on the `cqe` of `wr`.
        unsafe { self.post_rw_owned(first, wr) }.map_err(|(e, mut wr)| {
            wr.rw.clear();
            (e, wr)
        })
    }

    /// Posts the work requests of `ctxs` as one chain and waits until it completed. With
    /// `send` (the buffers, and an rkey to invalidate remotely), a Send of those buffers ends
    /// the chain and its completion ends the wait; otherwise the last context's last work
    /// request does. May sleep; the caller accounts for the Send Queue entries
    /// ([`Ctx::wrs`], plus one for the Send).
    ///
    /// If the chain was posted only in part, the QP is drained before returning, so nothing
    /// is in flight when the contexts are dropped.
    ///
    /// The contexts are consumed, and destroyed once the chain is done: `rdma_rw_ctx_wrs`
    /// left the last one's last work request signaled toward this chain's completion, which
    /// is freed on return, so a context is never posted twice. They must be on this QP.
    pub(crate) fn post_rw_wait(
        &self,
        ctxs: KVec<Ctx<'_, '_, H>>,
        send: Option<(KVec<DmaBuf>, Option<u32>)>,
    ) -> Result<Wc> {
        if ctxs.len() > MAX_CHAIN
            || (ctxs.is_empty() && send.is_none())
            || ctxs.iter().any(|c| !core::ptr::eq(c._qp, self))
        {
            return Err(EINVAL);
        }
        let state = Arc::pin_init(
            pin_init!(WaitState {
                wc <- new_spinlock!(None),
                done <- new_condvar!("rpcrdma_rs_rw_wait"),
            }),
            GFP_KERNEL,
        )?;
        let (bufs, inv) = match send {
            Some((bufs, inv)) => (Some(bufs), inv),
            None => (None, None),
        };
        let is_send = bufs.is_some();
        let wr = Wr::send(bufs.unwrap_or_default(), Waiter(state.clone()), GFP_KERNEL)?;
        let mut sges = [bindings::ib_sge::default(); super::verbs::MAX_SGE];
        let cqe = wr.cqe_ptr();
        // With a Send, it ends the chain and signals; without, the last context does.
        let (mut send, signal) = if is_send {
            let nsge = wr.sges_for(self, &mut sges)?;
            (
                Some(send_wr(cqe, sges.as_mut_ptr(), nsge, inv)?),
                null_mut(),
            )
        } else {
            (None, cqe)
        };
        let tail = send.as_mut().map_or(null_mut(), core::ptr::from_mut);
        // SAFETY: Every context is live, on this QP, and idle (their invariants).
        let first = unsafe { self.rw_chain(ctxs.iter().map(|c| c.m.sgt.as_ptr()), signal, tail) };
        // SAFETY: The chain is the contexts' work requests, then `send` (if any) with the SGEs
        // of `sges`; only its last request is signaled (the Send, or without one the last
        // context's last, by `rw_chain`), on the `cqe` of `wr`.
        unsafe { self.post_rw_owned(first, wr) }.map_err(|(e, _)| e)?;
        let mut left = msecs_to_jiffies(STALL_MS);
        let mut g = state.wc.lock();
        while g.is_none() {
            if left == 0 {
                // Stalled: flush the QP, which completes the chain (in error) at once.
                drop(g);
                // A peer that never answers (an iWARP peer keeping TCP alive) does this.
                pr_warn_peer!(
                    "RDMA chain not completed after {} s: flushing the QP\n",
                    STALL_MS / 1000
                );
                self.drain();
                g = state.wc.lock();
                while g.is_none() {
                    state.done.wait(&mut g);
                }
                break;
            }
            left = match state.done.wait_interruptible_timeout(&mut g, left) {
                CondVarTimeoutResult::Woken { jiffies } => jiffies,
                CondVarTimeoutResult::Timeout => 0,
                // nfsd threads take no signals; should one be pending, the wait returns at
                // once: poll, so that the stall is still detected.
                CondVarTimeoutResult::Signal { jiffies } => {
                    drop(g);
                    fsleep(Delta::from_millis(SIGNAL_POLL_MS));
                    g = state.wc.lock();
                    jiffies.saturating_sub(msecs_to_jiffies(SIGNAL_POLL_MS as u32))
                }
            };
        }
        let wc = g.take().ok_or(EIO)?;
        Ok(wc)
    }
}
