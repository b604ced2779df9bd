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
//! copies while posting) or signaled itself. The context object stays in the C shim
//! (`struct rpcrdma_shim_rw`: the `rdma_rw_ctx` with what `rdma_rw_ctx_destroy` needs again).
//!
//! C header: [`include/rdma/rw.h`](srctree/include/rdma/rw.h)

use core::{
    marker::PhantomData,
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
    time::msecs_to_jiffies, //
};

use super::{
    cm::{
        Handler,
        Id, //
    },
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

/// A scatterlist (`struct sg_table`) over memory borrowed for `'a`.
///
/// # Invariants
///
/// `ptr` was returned by `rpcrdma_shim_sgt_alloc`, is owned by this object, and each of its
/// entries describes memory valid for `'a`. A table either borrows its memory for `'a`, or
/// (`refs`, with `'a` being `'static`) holds a reference on the page of each entry, which
/// keeps the memory allocated while it exists.
pub(crate) struct SgTable<'a> {
    ptr: NonNull<bindings::sg_table>,
    refs: bool,
    _p: PhantomData<&'a mut [u8]>,
}

/// A piece of memory within one page: the page, the offset in it, the length.
type Piece<'a> = (BorrowedPage<'a>, u32, u32);

/// Builds a table of `pieces`, which must cover `len` bytes (`EINVAL` if not); with `refs`,
/// takes a reference on the page of each (`EOPNOTSUPP` if one has none to take).
fn build<'a>(
    pieces: impl Iterator<Item = Piece<'a>> + Clone,
    len: u32,
    refs: bool,
) -> Result<NonNull<bindings::sg_table>> {
    let (nents, covered) = pieces
        .clone()
        .fold((0u32, 0u64), |(n, c), p| (n + 1, c + u64::from(p.2)));
    if nents == 0 || covered != u64::from(len) {
        return Err(EINVAL);
    }
    // SAFETY: Any entry count is accepted (an error pointer on failure).
    let sgt = kernel::error::from_err_ptr(unsafe { bindings::rpcrdma_shim_sgt_alloc(nents) })?;
    let sgt = NonNull::new(sgt).ok_or(ENOMEM)?;
    // SAFETY: `sgt` is a table of `nents` entries.
    let mut sg = unsafe { bindings::rpcrdma_shim_sgt_sgl(sgt.as_ptr()) };
    for (i, (page, offset, n)) in pieces.clone().take(nents as usize).enumerate() {
        // SAFETY: The page is valid now (a `BorrowedPage`).
        if refs && !unsafe { bindings::rpcrdma_shim_page_try_get(page.as_ptr().cast()) } {
            for (page, _, _) in pieces.take(i) {
                // SAFETY: A reference taken on this page just above.
                unsafe { bindings::rpcrdma_shim_page_put(page.as_ptr().cast()) };
            }
            // SAFETY: Owned here, used by nothing else.
            unsafe { bindings::rpcrdma_shim_sgt_free(sgt.as_ptr()) };
            return Err(EOPNOTSUPP);
        }
        // SAFETY: `sg` is entry `i` of the `nents` entries of `sgt` (the walk is taken
        // `nents` times); the page is valid for as long as the caller's table says.
        sg = unsafe { bindings::rpcrdma_shim_sg_set_page(sg, page.as_ptr().cast(), n, offset) };
    }
    Ok(sgt)
}

impl<'a> SgTable<'a> {
    /// A table of `pieces`, each within one page, covering `len` bytes; `EINVAL` if they do
    /// not.
    ///
    /// # Safety
    ///
    /// The CPU leaves the memory of the pieces alone while the result exists (the device
    /// reads or writes it).
    pub(crate) unsafe fn new(
        pieces: impl Iterator<Item = Piece<'a>> + Clone,
        len: u32,
    ) -> Result<Self> {
        let ptr = build(pieces, len, false)?;
        COUNTERS.sgts.alloc();
        // INVARIANT: A fresh table over memory valid for `'a`.
        Ok(Self {
            ptr,
            refs: false,
            _p: PhantomData,
        })
    }
}

impl SgTable<'static> {
    /// A table of `pieces`, each within one page, covering `len` bytes (`EINVAL` if they do
    /// not), holding a reference on the page of each, so that it may outlive the borrow of
    /// the memory. `EOPNOTSUPP` if a page has no reference to take (slab memory).
    ///
    /// # Safety
    ///
    /// The CPU leaves the memory of the pieces unchanged while the result exists (its
    /// references keep it allocated, not unchanged).
    pub(crate) unsafe fn new_ref<'b>(
        pieces: impl Iterator<Item = Piece<'b>> + Clone,
        len: u32,
    ) -> Result<Self> {
        let ptr = build(pieces, len, true)?;
        COUNTERS.sgts.alloc();
        // INVARIANT: The references make the memory valid for as long as the table exists.
        Ok(Self {
            ptr,
            refs: true,
            _p: PhantomData,
        })
    }
}

impl Drop for SgTable<'_> {
    fn drop(&mut self) {
        // SAFETY: The table is owned (type invariant) and no context uses it any more (a
        // `Ctx` borrows it for its whole life). A table with references holds one on the page
        // of each entry (type invariant), dropped once, here.
        unsafe {
            if self.refs {
                bindings::rpcrdma_shim_sgt_free_put(self.ptr.as_ptr());
            } else {
                bindings::rpcrdma_shim_sgt_free(self.ptr.as_ptr());
            }
        }
        COUNTERS.sgts.free();
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

/// An `rdma_rw_ctx` for one remote segment.
///
/// # Invariants
///
/// `ptr` is an initialised context on `qp`'s QP over `sgt`, owned by this object; none of its
/// work requests is in flight outside [`Qp::post_rw_wait`].
pub(crate) struct Ctx<'a, H: Handler> {
    ptr: NonNull<bindings::rpcrdma_shim_rw>,
    wrs: u32,
    _qp: &'a Qp<H>,
    _sgt: SgTable<'a>,
}

impl<'a, H: Handler> Ctx<'a, H> {
    /// Maps `sgt` for a transfer with the remote segment (`rkey`, `remote_addr`) of the same
    /// length (`rdma_rw_ctx_init`).
    pub(crate) fn new(
        qp: &'a Qp<H>,
        sgt: SgTable<'a>,
        remote_addr: u64,
        rkey: u32,
        op: Op,
    ) -> Result<Self> {
        // SAFETY: The QP is live for `'a` and the table is valid (its invariant).
        let rw = unsafe {
            bindings::rpcrdma_shim_rw_create(
                qp.as_ptr(),
                qp.port(),
                sgt.ptr.as_ptr(),
                remote_addr,
                rkey,
                op == Op::Write,
            )
        };
        let ptr = NonNull::new(kernel::error::from_err_ptr(rw)?).ok_or(ENOMEM)?;
        COUNTERS.rw_ctxs.alloc();
        // SAFETY: `ptr` is a live context.
        let wrs = unsafe { bindings::rpcrdma_shim_rw_wrs(ptr.as_ptr()) };
        // INVARIANT: Initialised just above; nothing is posted yet.
        Ok(Self {
            ptr,
            wrs,
            _qp: qp,
            _sgt: sgt,
        })
    }

    /// Send Queue entries this context uses when posted.
    pub(crate) fn wrs(&self) -> u32 {
        self.wrs
    }
}

/// An rdma_rw context posted ahead of a Send by [`Qp::post_rw_send`], owning its table (a
/// table with page references): it rides in the Send's [`Wr`] and is destroyed when that
/// completes, before the request is handed back to [`Done::done`].
///
/// # Invariants
///
/// `0` is a live context, owned by this object, whose shim structure owns a table built by
/// [`SgTable::new_ref`]. It is dropped only while idle and while its QP
/// exists: after the Send ending its chain completed (the QP is drained before it is
/// destroyed, so that completion comes first), or after a failed post (the QP drained if part
/// of the chain was posted).
#[repr(transparent)]
pub(crate) struct PostedRw(NonNull<bindings::rpcrdma_shim_rw>);

// SAFETY: The context is plain memory; it may be destroyed on any thread.
unsafe impl Send for PostedRw {}

impl Drop for PostedRw {
    fn drop(&mut self) {
        // SAFETY: Live, owned, idle, and its QP exists (type invariants); its table has page
        // references (type invariant), which this drops with the table.
        unsafe { bindings::rpcrdma_shim_rw_destroy_owned(self.0.as_ptr()) };
        COUNTERS.rw_ctxs.free();
        COUNTERS.sgts.free();
    }
}

impl<H: Handler> Drop for Ctx<'_, H> {
    fn drop(&mut self) {
        // SAFETY: The context is owned and idle (type invariants); the QP and the table are
        // borrowed, so still alive.
        unsafe { bindings::rpcrdma_shim_rw_destroy(self.ptr.as_ptr()) };
        COUNTERS.rw_ctxs.free();
    }
}

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
        Self::create_with(id, pd, send_cq, recv_cq, caps, max_rdma_ctxs)
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

    /// Posts the work requests of `ctxs`, then a signaled Send of the buffers of `wr` (with
    /// invalidation of the rkey in `inv`), as one chain, and returns without waiting: the
    /// contexts go with `wr` and are destroyed when the Send completes (or is flushed), before
    /// `wr` comes back to [`Done::done`]. Every context's table must hold references on its
    /// pages ([`SgTable::new_ref`]), so that the memory outlives the caller's borrow;
    /// `EINVAL` otherwise. The caller accounts for the Send Queue entries ([`Ctx::wrs`], plus
    /// one for the Send).
    ///
    /// On failure `wr` is handed back with the contexts destroyed; if part of the chain was
    /// posted (`EIO`), the QP was drained first.
    pub(crate) fn post_rw_send<T: Done>(
        &self,
        ctxs: KVec<Ctx<'_, H>>,
        mut wr: KBox<Wr<T>>,
        inv: Option<u32>,
    ) -> core::result::Result<(), PostError<T>> {
        if !wr.rw.is_empty() || ctxs.iter().any(|c| !c._sgt.refs) {
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
        for c in ctxs {
            // The table goes with the context: the shim structure keeps it, and
            // `PostedRw::drop` frees both.
            let c = core::mem::ManuallyDrop::new(c);
            // INVARIANT: A live context whose table has page references (checked above),
            // idle until posted below; a failed post drops it with the QP alive.
            let posted = PostedRw(c.ptr);
            if let Err(p) = wr.rw.push_within_capacity(posted) {
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
        let first =
            unsafe { self.rw_chain(wr.rw.iter().map(|p| p.0.as_ptr()), null_mut(), &mut send) };
        let raw_wr = KBox::into_raw(wr);
        COUNTERS.posted.alloc();
        // SAFETY: The chain is the contexts' work requests (in the contexts, which stay put
        // until the completion), ending in `send`, a signaled Send of the `nsge` SGEs of
        // `sges` that completes on the `cqe` of `raw_wr`, which the device owns from now on
        // and hands back to `Wr::done_callback`.
        if let Err(e) = unsafe { self.post_rw_chain(first) } {
            if e == EIO {
                // The head of the chain is on the QP, the Send is not: flush it, so that the
                // contexts are idle when destroyed.
                pr_err!("RDMA work request chain posted only in part: draining the QP\n");
                self.drain();
            }
            // SAFETY: Posting stops at the first failing work request, so the Send, which ends
            // the chain, was not posted: `raw_wr` is ours again.
            let mut wr = unsafe { KBox::from_raw(raw_wr) };
            COUNTERS.posted.free();
            wr.rw.clear();
            return Err((e, wr));
        }
        Ok(())
    }

    /// Posts the work requests of `ctxs` as one chain and waits until it completed. With
    /// `send` (the buffers, and an rkey to invalidate remotely), a Send of those buffers ends
    /// the chain and its completion ends the wait; otherwise the last context's last work
    /// request does. May sleep; the caller accounts for the Send Queue entries
    /// ([`Ctx::wrs`], plus one for the Send).
    ///
    /// If the chain was posted only in part, the QP is drained before returning, so nothing
    /// is in flight when the contexts are dropped.
    pub(crate) fn post_rw_wait(
        &self,
        ctxs: &[Ctx<'_, H>],
        send: Option<(KVec<DmaBuf>, Option<u32>)>,
    ) -> Result<Wc> {
        if ctxs.len() > MAX_CHAIN || (ctxs.is_empty() && send.is_none()) {
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
        let first = unsafe { self.rw_chain(ctxs.iter().map(|c| c.ptr.as_ptr()), signal, tail) };
        let raw_wr = KBox::into_raw(wr);
        COUNTERS.posted.alloc();
        // SAFETY: The chain is the contexts' work requests, then `send` (if any) with the SGEs
        // of `sges`; its signaled request completes on the `cqe` of `raw_wr`, which the device
        // owns from now on and hands back to `Waiter::done`.
        if let Err(e) = unsafe { self.post_rw_chain(first) } {
            if e == EIO {
                // The head of the chain is on the QP, its signaled end is not: flush it.
                pr_err!("RDMA work request chain posted only in part: draining the QP\n");
                self.drain();
            }
            // SAFETY: Posting stops at the first failing work request, so the signaled one,
            // which ends the chain, was not posted: `raw_wr` is ours again.
            drop(unsafe { KBox::from_raw(raw_wr) });
            COUNTERS.posted.free();
            return Err(e);
        }
        let mut left = msecs_to_jiffies(STALL_MS);
        let mut g = state.wc.lock();
        while g.is_none() {
            if left == 0 {
                // Stalled: flush the QP, which completes the chain (in error) at once.
                drop(g);
                pr_warn!(
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
                // nfsd threads take no signals; should one be pending, wait without a timer.
                CondVarTimeoutResult::Signal { .. } => {
                    state.done.wait(&mut g);
                    left
                }
            };
        }
        let wc = g.take().ok_or(EIO)?;
        Ok(wc)
    }
}
