// SPDX-License-Identifier: GPL-2.0

//! Verbs: devices, protection domains, completion queues, queue pairs, DMA-mapped buffers and
//! the Receive and Send work requests posted on them.
//!
//! A posted work request is owned by the hardware: [`Qp::post_recv`] and [`Qp::post_send_reg`]
//! take a [`KBox`] and the completion hands it back to [`Done::done`], found from the
//! `struct ib_cqe` embedded in it with `container_of!`. Nothing can touch a buffer while the
//! device owns it, and a request cannot be posted twice. [`Qp`] drains itself (`ib_drain_qp`)
//! before it is destroyed, so every posted request comes back (flushed) before its QP, CQs and
//! PD go away.
//!
//! The chains handed to `ib_post_send` and `ib_post_recv` are built here, in the kernel's own
//! structures (`struct ib_send_wr`, `ib_recv_wr`, `ib_sge`, laid out by bindgen): the Send and
//! the Receives on the stack, since the provider copies them during the call; the `REG_MR` and
//! `LOCAL_INV` of an [`Mr`] in the MR itself, as `rpcrdma.ko` keeps them. The QP is created here
//! too (`struct ib_qp_init_attr`, `rdma_create_qp`), and its asynchronous events are logged.

use core::{
    ffi::c_void,
    ptr::{
        null_mut,
        NonNull, //
    },
};

use kernel::{
    alloc::Flags,
    error::to_result,
    new_spinlock,
    prelude::*,
    str::CStr,
    sync::{
        Arc,
        SpinLock, //
    },
    types::Opaque, //
};

use super::{
    cm::{
        Core,
        Handler,
        Id, //
    },
    mr::Mr,
    rw::PostedRw,
    COUNTERS, //
};
use crate::bindings;

/// A reference on a registered RDMA device (`ib_device_try_get` / `ib_device_put`).
///
/// # Invariants
///
/// `ptr` is a device on which this object holds a registration reference.
pub(crate) struct Device {
    ptr: NonNull<bindings::ib_device>,
}

// SAFETY: A device reference may be used and dropped on any thread.
unsafe impl Send for Device {}
// SAFETY: The accessors only read attributes that do not change after registration.
unsafe impl Sync for Device {}

impl Device {
    /// Takes a reference on `dev`; `ENODEV` if it is null or being unregistered.
    ///
    /// # Safety
    ///
    /// `dev` is null or points to an `ib_device` that stays allocated during the call.
    pub(super) unsafe fn get(dev: *mut bindings::ib_device) -> Result<Self> {
        // SAFETY: By the safety requirements `dev` is null or valid.
        let ptr = unsafe { bindings::rpcrdma_shim_device_get(dev) };
        let ptr = NonNull::new(ptr).ok_or(ENODEV)?;
        COUNTERS.devices.alloc();
        // INVARIANT: The shim took a reference.
        Ok(Self { ptr })
    }

    /// Another reference on the same device.
    pub(crate) fn try_clone(&self) -> Result<Self> {
        // SAFETY: `self` holds a reference, so the device is allocated.
        unsafe { Self::get(self.ptr.as_ptr()) }
    }

    pub(super) fn as_ptr(&self) -> *mut bindings::ib_device {
        self.ptr.as_ptr()
    }

    /// The device's attributes (`ib_device->attrs`).
    pub(crate) fn attrs(&self) -> Attrs {
        // SAFETY: The device is registered (type invariant), and its attributes are set before
        // it is registered and not changed while it is.
        let a = unsafe { &(*self.as_ptr()).attrs };
        Attrs {
            device_cap_flags: a.device_cap_flags,
            max_qp_wr: a.max_qp_wr,
            max_send_sge: a.max_send_sge,
            max_recv_sge: a.max_recv_sge,
            max_sge_rd: a.max_sge_rd,
            max_cqe: a.max_cqe,
            max_mr: a.max_mr,
            max_qp_rd_atom: a.max_qp_rd_atom,
            max_qp_init_rd_atom: a.max_qp_init_rd_atom,
            max_fast_reg_page_list_len: a.max_fast_reg_page_list_len,
        }
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // SAFETY: By the type invariant this object holds a reference; it is given back once.
        unsafe { bindings::ib_device_put(self.as_ptr()) };
        COUNTERS.devices.free();
    }
}

/// The attributes of a device the transports size their resources by (`struct ib_device_attr`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Attrs {
    /// `IB_DEVICE_*` capability flags (see [`Attrs::mem_mgt_extensions`]).
    pub(crate) device_cap_flags: u64,
    /// Work requests per queue.
    pub(crate) max_qp_wr: u32,
    /// SGEs per Send.
    pub(crate) max_send_sge: u32,
    /// SGEs per Receive.
    pub(crate) max_recv_sge: u32,
    /// SGEs per RDMA Read.
    pub(crate) max_sge_rd: u32,
    /// Entries per CQ.
    pub(crate) max_cqe: u32,
    /// Memory regions.
    pub(crate) max_mr: u32,
    /// Incoming RDMA Reads in flight per QP.
    pub(crate) max_qp_rd_atom: u32,
    /// Outgoing RDMA Reads in flight per QP.
    pub(crate) max_qp_init_rd_atom: u32,
    /// Pages per fast-registration MR.
    pub(crate) max_fast_reg_page_list_len: u32,
}

impl Attrs {
    /// Whether the device has the memory management extensions, among them Send With
    /// Invalidate (`IB_DEVICE_MEM_MGT_EXTENSIONS`).
    pub(crate) fn mem_mgt_extensions(&self) -> bool {
        self.device_cap_flags & bindings::ib_device_cap_flags_IB_DEVICE_MEM_MGT_EXTENSIONS as u64
            != 0
    }
}

/// A protection domain (`ib_alloc_pd` / `ib_dealloc_pd`).
///
/// # Invariants
///
/// `ptr` is a PD allocated on `dev` and owned by this object.
pub(crate) struct Pd {
    ptr: NonNull<bindings::ib_pd>,
    dev: Device,
}

// SAFETY: A PD may be used and freed on any thread.
unsafe impl Send for Pd {}
// SAFETY: The shared accessors only read the immutable `local_dma_lkey`.
unsafe impl Sync for Pd {}

impl Pd {
    /// Allocates a PD on `dev`.
    pub(crate) fn new(dev: &Device, flags: Flags) -> Result<Arc<Self>> {
        let dev = dev.try_clone()?;
        let slot = kernel::sync::UniqueArc::<Self>::new_uninit(flags)?;
        // SAFETY: `dev` is a registered device (its invariant).
        let ptr =
            kernel::error::from_err_ptr(unsafe { bindings::rpcrdma_shim_alloc_pd(dev.as_ptr()) })?;
        let ptr = NonNull::new(ptr).ok_or(ENOMEM)?;
        COUNTERS.pds.alloc();
        // INVARIANT: `ptr` was just allocated on `dev`.
        Ok(slot.write(Self { ptr, dev }).into())
    }

    /// The lkey that covers all DMA-mapped memory of the device.
    pub(crate) fn local_dma_lkey(&self) -> u32 {
        // SAFETY: The PD is valid (type invariant); `local_dma_lkey` is set when it is allocated.
        unsafe { (*self.ptr.as_ptr()).local_dma_lkey }
    }

    pub(super) fn as_ptr(&self) -> *mut bindings::ib_pd {
        self.ptr.as_ptr()
    }

    /// The device of the PD.
    pub(super) fn device(&self) -> &Device {
        &self.dev
    }
}

impl Drop for Pd {
    fn drop(&mut self) {
        // SAFETY: The PD is owned (type invariant); every QP using it holds an `Arc<Pd>`, so
        // none is left.
        unsafe { bindings::rpcrdma_shim_dealloc_pd(self.ptr.as_ptr()) };
        COUNTERS.pds.free();
    }
}

/// A completion queue (`ib_alloc_cq` / `ib_free_cq`).
///
/// # Invariants
///
/// `ptr` is a CQ allocated on `dev` and owned by this object.
pub(crate) struct Cq {
    ptr: NonNull<bindings::ib_cq>,
    dev: Device,
}

// SAFETY: A CQ may be used and freed on any thread.
unsafe impl Send for Cq {}
// SAFETY: `&Cq` gives no access to the CQ besides its pointer for QP creation.
unsafe impl Sync for Cq {}

impl Cq {
    /// Allocates a CQ of `nr_cqe` entries on `dev`, interrupting on `comp_vector`, whose
    /// completions run on `ib_comp_wq` in process context (`IB_POLL_WORKQUEUE`, as both C
    /// transports poll).
    pub(crate) fn new(
        dev: &Device,
        nr_cqe: u32,
        comp_vector: u32,
        flags: Flags,
    ) -> Result<Arc<Self>> {
        let nr_cqe = i32::try_from(nr_cqe).map_err(|_| EINVAL)?;
        let comp_vector = i32::try_from(comp_vector).map_err(|_| EINVAL)?;
        let dev = dev.try_clone()?;
        let slot = kernel::sync::UniqueArc::<Self>::new_uninit(flags)?;
        // SAFETY: `dev` is a registered device.
        let ptr = unsafe { bindings::rpcrdma_shim_alloc_cq(dev.as_ptr(), nr_cqe, comp_vector) };
        let ptr = NonNull::new(kernel::error::from_err_ptr(ptr)?).ok_or(ENOMEM)?;
        COUNTERS.cqs.alloc();
        // INVARIANT: `ptr` was just allocated on `dev`.
        Ok(slot.write(Self { ptr, dev }).into())
    }
}

impl Cq {
    /// The CQ's resource id (`cq->res.id`, `cq.id=` in traces).
    pub(crate) fn id(&self) -> u32 {
        // SAFETY: The CQ is owned, hence live (type invariant); its resource id is set when it
        // is allocated.
        unsafe { (*self.ptr.as_ptr()).res.id }
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        // SAFETY: The CQ is owned; every QP using it holds an `Arc<Cq>`, so none is left, and
        // `ib_free_cq` waits for a running poll.
        unsafe { bindings::ib_free_cq(self.ptr.as_ptr()) };
        COUNTERS.cqs.free();
    }
}

/// Requested capacities of a queue pair (`struct ib_qp_cap`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct QpCaps {
    /// Send queue depth.
    pub(crate) max_send_wr: u32,
    /// Receive queue depth.
    pub(crate) max_recv_wr: u32,
    /// SGEs per Send.
    pub(crate) max_send_sge: u32,
    /// SGEs per Receive.
    pub(crate) max_recv_sge: u32,
    /// Inline data per Send.
    pub(crate) max_inline_data: u32,
}

impl QpCaps {
    /// These capacities as `struct ib_qp_cap`, with room for `max_rdma_ctxs` rdma_rw contexts.
    fn to_raw(self, max_rdma_ctxs: u32) -> bindings::ib_qp_cap {
        bindings::ib_qp_cap {
            max_send_wr: self.max_send_wr,
            max_recv_wr: self.max_recv_wr,
            max_send_sge: self.max_send_sge,
            max_recv_sge: self.max_recv_sge,
            max_inline_data: self.max_inline_data,
            max_rdma_ctxs,
        }
    }

    /// The capacities of `struct ib_qp_cap` (as the device granted them).
    fn from_raw(c: &bindings::ib_qp_cap) -> Self {
        Self {
            max_send_wr: c.max_send_wr,
            max_recv_wr: c.max_recv_wr,
            max_send_sge: c.max_send_sge,
            max_recv_sge: c.max_recv_sge,
            max_inline_data: c.max_inline_data,
        }
    }

    /// These capacities lowered to what `attrs` allows. `ib_drain_qp` needs one more Send and
    /// Receive than the caller uses, which is kept free.
    pub(crate) fn clamp(self, attrs: &Attrs) -> Self {
        let wr = attrs.max_qp_wr.saturating_sub(1);
        Self {
            max_send_wr: self.max_send_wr.min(wr),
            max_recv_wr: self.max_recv_wr.min(wr),
            max_send_sge: self.max_send_sge.min(attrs.max_send_sge),
            max_recv_sge: self.max_recv_sge.min(attrs.max_recv_sge),
            max_inline_data: self.max_inline_data,
        }
    }
}

/// A work completion (`struct ib_wc`), borrowed for [`Done::done`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wc {
    cq_id: u32,
    status: i32,
    opcode: i32,
    byte_len: u32,
    vendor_err: u32,
    wc_flags: i32,
    invalidate_rkey: u32,
    /// Made up for an unsignaled Send that a later completion, or the drain, showed done
    /// ([`Wc::is_retired`]).
    retired: bool,
}

/// `IB_WC_SUCCESS` (`enum ib_wc_status`), as the `int` the shim's `wc` holds.
const IB_WC_SUCCESS: i32 = bindings::ib_wc_status_IB_WC_SUCCESS as i32;
/// `IB_WC_WR_FLUSH_ERR` (`enum ib_wc_status`).
pub(crate) const IB_WC_WR_FLUSH_ERR: i32 = bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR as i32;
/// `IB_WC_WITH_INVALIDATE` (`enum ib_wc_flags`).
const IB_WC_WITH_INVALIDATE: i32 = bindings::ib_wc_flags_IB_WC_WITH_INVALIDATE as i32;

impl Wc {
    /// The completion `wc` of `cq`, and the `struct ib_cqe` its work request was posted with.
    ///
    /// # Safety
    ///
    /// `cq` and `wc` are valid for the call: a CQ and one of its completions, as a completion
    /// handler (`ib_cqe.done`) is given them.
    pub(super) unsafe fn from_raw(
        cq: *const bindings::ib_cq,
        wc: *const bindings::ib_wc,
    ) -> (Self, *mut bindings::ib_cqe) {
        // SAFETY: Both are valid (the safety requirements). Both unions are plain data:
        // `wr_cqe` is what was posted (`wr_id` is not used), and `ex.invalidate_rkey` is read
        // only with `IB_WC_WITH_INVALIDATE` (see `invalidated_rkey`).
        let (w, cq_id, cqe, invalidate_rkey) = unsafe {
            (
                &*wc,
                (*cq).res.id,
                (*wc).__bindgen_anon_1.wr_cqe,
                (*wc).ex.invalidate_rkey,
            )
        };
        // The enums' values are small: `as` keeps them.
        let wc = Self {
            cq_id,
            status: w.status as i32,
            opcode: w.opcode as i32,
            byte_len: w.byte_len,
            vendor_err: w.vendor_err,
            wc_flags: w.wc_flags,
            invalidate_rkey,
            retired: false,
        };
        (wc, cqe)
    }

    /// The completion of a Send posted unsignaled, which the device completes without a
    /// completion of its own when it succeeds: made up when a later completion on the Send
    /// Queue (whose completions come in the order posted) showed it done, as a success (had it
    /// failed, it would have completed by itself), or when the drain did, as a flush. Only one
    /// completion in a batch of Sends is the device's own, and only that one is traced.
    pub(crate) fn is_retired(&self) -> bool {
        self.retired
    }

    /// The made-up completion ([`Wc::is_retired`]) of a Send on the CQ `cq_id`, with `status`.
    fn retired(cq_id: u32, status: i32) -> Self {
        Self {
            cq_id,
            status,
            opcode: bindings::ib_wc_opcode_IB_WC_SEND as i32,
            byte_len: 0,
            vendor_err: 0,
            wc_flags: 0,
            invalidate_rkey: 0,
            retired: true,
        }
    }

    /// Whether the request succeeded (`IB_WC_SUCCESS`).
    pub(crate) fn is_success(&self) -> bool {
        self.status == IB_WC_SUCCESS
    }

    /// The `enum ib_wc_status` value (see [`IB_WC_WR_FLUSH_ERR`]).
    pub(crate) fn status(&self) -> i32 {
        self.status
    }

    /// Bytes received (Receive completions).
    pub(crate) fn byte_len(&self) -> u32 {
        self.byte_len
    }

    /// The device's own error code.
    pub(crate) fn vendor_err(&self) -> u32 {
        self.vendor_err
    }

    /// Whether the request was flushed because the QP went to the error state (the
    /// connection ended), rather than failing on its own.
    pub(crate) fn is_flush(&self) -> bool {
        self.status == IB_WC_WR_FLUSH_ERR
    }

    /// The status as text (`ib_wc_status_msg`).
    pub(crate) fn status_msg(&self) -> &'static CStr {
        // A status read from `struct ib_wc` is an `enum ib_wc_status`, never negative.
        let status = self.status as bindings::ib_wc_status;
        // SAFETY: `ib_wc_status_msg` takes any value and returns a static string (its own text
        // for values it does not know).
        unsafe { CStr::from_char_ptr(bindings::ib_wc_status_msg(status)) }
    }

    /// The rkey the peer invalidated with a Send With Invalidate (Receive completions,
    /// `IB_WC_WITH_INVALIDATE`).
    pub(crate) fn invalidated_rkey(&self) -> Option<u32> {
        (self.wc_flags & IB_WC_WITH_INVALIDATE != 0).then_some(self.invalidate_rkey)
    }

    /// The resource id of the completion's CQ (`cq->res.id`, `cq.id=` in traces).
    pub(crate) fn cq_id(&self) -> u32 {
        self.cq_id
    }

    /// The completion as the tracepoints take it.
    pub(crate) fn to_shim(self) -> bindings::rpcrdma_shim_wc {
        bindings::rpcrdma_shim_wc {
            cq_id: self.cq_id,
            status: self.status,
            opcode: self.opcode,
            byte_len: self.byte_len,
            vendor_err: self.vendor_err,
            wc_flags: self.wc_flags,
            invalidate_rkey: self.invalidate_rkey,
        }
    }
}

/// Direction of a DMA mapping (`enum dma_data_direction`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    /// `DMA_TO_DEVICE`: Sends.
    ToDevice = 1,
    /// `DMA_FROM_DEVICE`: Receives.
    FromDevice = 2,
}

/// A kmalloc'ed buffer, DMA-mapped for a device while it exists (`ib_dma_map_single`).
///
/// # Invariants
///
/// `buf` (never resized) is mapped at `addr` for `dev` in direction `dir`.
pub(crate) struct DmaBuf {
    buf: KVec<u8>,
    addr: u64,
    dir: Direction,
    dev: Device,
}

impl DmaBuf {
    /// Allocates `len` zeroed bytes and maps them for `dev`.
    pub(crate) fn new(dev: &Device, len: usize, dir: Direction, flags: Flags) -> Result<Self> {
        if len == 0 {
            return Err(EINVAL);
        }
        let mut buf = KVec::with_capacity(len, flags)?;
        buf.resize(len, 0, flags)?;
        let dev = dev.try_clone()?;
        let mut addr = 0u64;
        // SAFETY: `buf` is kmalloc'ed memory of `len` bytes that stays put until it is
        // unmapped in `drop`; `dev` is registered.
        to_result(unsafe {
            bindings::rpcrdma_shim_dma_map_single(
                dev.as_ptr(),
                buf.as_mut_ptr().cast(),
                len,
                dir as i32,
                &mut addr,
            )
        })?;
        COUNTERS.dma_maps.alloc();
        // INVARIANT: mapped just above.
        Ok(Self {
            buf,
            addr,
            dir,
            dev,
        })
    }

    /// The bytes, for the CPU.
    pub(crate) fn as_slice(&self) -> &[u8] {
        &self.buf
    }

    /// The bytes, for the CPU to fill in.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.buf
    }

    /// Length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    fn sge(&self, len: usize, lkey: u32) -> Result<bindings::ib_sge> {
        Ok(bindings::ib_sge {
            addr: self.addr,
            length: u32::try_from(len.min(self.buf.len())).map_err(|_| EINVAL)?,
            lkey,
        })
    }

    fn sync_for_device(&self) {
        // SAFETY: The mapping exists (type invariant).
        unsafe {
            bindings::rpcrdma_shim_dma_sync_for_device(
                self.dev.as_ptr(),
                self.addr,
                self.buf.len(),
                self.dir as i32,
            )
        };
    }

    fn sync_for_cpu(&self) {
        // SAFETY: The mapping exists (type invariant).
        unsafe {
            bindings::rpcrdma_shim_dma_sync_for_cpu(
                self.dev.as_ptr(),
                self.addr,
                self.buf.len(),
                self.dir as i32,
            )
        };
    }
}

impl Drop for DmaBuf {
    fn drop(&mut self) {
        // SAFETY: The mapping exists and is undone once; no work request uses it (posted ones
        // own the buffer).
        unsafe {
            bindings::rpcrdma_shim_dma_unmap_single(
                self.dev.as_ptr(),
                self.addr,
                self.buf.len(),
                self.dir as i32,
            )
        };
        COUNTERS.dma_maps.free();
    }
}

/// What runs when a posted work request completes.
pub(crate) trait Done: Send + Sized + 'static {
    /// The request owning `self` completed (or was flushed); it is handed back.
    ///
    /// Runs on `ib_comp_wq`, in process context (see [`Cq::new`]).
    fn done(wr: KBox<Wr<Self>>, wc: &Wc);
}

/// A Send posted unsignaled, held by its QP's [`Ledger`] until it is known to be done.
#[derive(Clone, Copy)]
struct Held {
    /// The `Wr<T>`, leaked from its `KBox`.
    wr: *mut c_void,
    /// Its place in the Send Queue ([`LedgerState::next`] when it was posted).
    seq: u64,
    /// `Wr::<T>::retire`, which hands it back.
    retire: unsafe fn(*mut c_void, &Wc),
}

/// What a [`Ledger`] guards.
struct LedgerState {
    /// The place of the next Send posted through the ledger: Sends are numbered in the order
    /// they enter the Send Queue.
    next: u64,
    /// The Sends posted unsignaled and not handed back yet, oldest first: a ring of
    /// `held.len()` slots, `len` of them used from `head`.
    held: KVec<Option<Held>>,
    head: usize,
    len: usize,
    /// Set when the QP starts draining ([`Qp::drain`]): no Send is held from then on, so a
    /// Send posted during or after the drain is signaled, and comes back by its own
    /// completion (a flush), never also by the drain's [`Ledger::retire_all`].
    closed: bool,
}

impl LedgerState {
    /// Takes the oldest held Send if it was posted before `seq`.
    fn pop_before(&mut self, seq: u64) -> Option<Held> {
        if self.len == 0 {
            return None;
        }
        let slot = self.held.get_mut(self.head)?;
        if slot.as_ref().is_none_or(|h| h.seq >= seq) {
            return None;
        }
        let h = slot.take();
        self.head = (self.head + 1) % self.held.len();
        self.len -= 1;
        h
    }

    /// Whether one more Send can be held.
    fn has_room(&self) -> bool {
        !self.closed && self.len < self.held.len()
    }

    /// Holds `h` as the newest; false, and `h` not held, if there is no room.
    fn hold(&mut self, h: Held) -> bool {
        if !self.has_room() {
            return false;
        }
        let at = (self.head + self.len) % self.held.len();
        let Some(slot) = self.held.get_mut(at) else {
            return false;
        };
        *slot = Some(h);
        self.len += 1;
        true
    }
}

/// The Sends a QP posted without a completion of their own (`IB_SEND_SIGNALED` clear, as
/// `frwr_send` posts most of the C client's): the device hands none back when it succeeds, so
/// each comes back when a later Send's completion shows it done (the completions of one Send
/// Queue come in the order the requests were posted, and a request that fails makes one
/// whether signaled or not), or when the QP is drained. Only [`Qp::post_send_reg`] posts
/// through it, and under its lock, so that its numbering is the Send Queue's order.
///
/// # Invariants
///
/// Each [`Held`] in `state` is a `Wr<T>` leaked from its `KBox`, posted unsignaled on the QP
/// as the Send numbered `seq`, with `Wr::<T>::retire` as `retire`; no completion handed it back
/// yet, and none will once a Send numbered higher completed, or once the QP is drained.
#[pin_data]
pub(crate) struct Ledger {
    #[pin]
    state: SpinLock<LedgerState>,
}

// SAFETY: The held requests are owned by the ledger (type invariant) and may be handed back on
// any thread: `Wr<T>` is `Send`. The state is behind a lock.
unsafe impl Send for Ledger {}
// SAFETY: As above.
unsafe impl Sync for Ledger {}

/// Most held Sends a completion hands back per turn of the ledger's lock: they are handed back
/// without it.
const RETIRE_BATCH: usize = 16;

impl Ledger {
    /// A ledger that can hold `cap` unsignaled Sends (the Send Queue's depth; 0: every Send
    /// is signaled).
    fn new(cap: usize) -> Result<Arc<Self>> {
        let mut held = KVec::with_capacity(cap, GFP_KERNEL)?;
        for _ in 0..cap {
            held.push(None, GFP_KERNEL)?;
        }
        Arc::pin_init(
            pin_init!(Self {
                state <- new_spinlock!(LedgerState {
                    next: 0,
                    held,
                    head: 0,
                    len: 0,
                    closed: false,
                }),
            }),
            GFP_KERNEL,
        )
    }

    /// Hands back, as succeeded, every held Send posted before the Send numbered `seq`, which
    /// completed on the CQ `cq_id`, and forgets that one if it is held (an unsignaled Send that
    /// failed completes by itself): the Send Queue completes in order, so the device is done
    /// with all of them.
    fn retire_before(&self, seq: u64, cq_id: u32) {
        self.retire(seq, &Wc::retired(cq_id, IB_WC_SUCCESS));
    }

    /// Holds no more Sends: called before the QP is drained.
    fn close(&self) {
        self.state.lock().closed = true;
    }

    /// Hands back every held Send, as flushed: called once the QP is drained (and the ledger
    /// closed before, so that nothing is held that the device could still complete).
    fn retire_all(&self, cq_id: u32) {
        self.retire(u64::MAX, &Wc::retired(cq_id, IB_WC_WR_FLUSH_ERR));
    }

    /// Hands back every held Send posted before the Send numbered `seq` with the completion
    /// `wc`, and forgets that one if it is held.
    fn retire(&self, seq: u64, wc: &Wc) {
        loop {
            let mut batch = [None; RETIRE_BATCH];
            let mut n = 0;
            let more = {
                let mut st = self.state.lock();
                for b in batch.iter_mut() {
                    let Some(h) = st.pop_before(seq) else { break };
                    *b = Some(h);
                    n += 1;
                }
                if n < RETIRE_BATCH {
                    // The one completing, if it was posted unsignaled: its completion hands it
                    // back, not the ledger.
                    let _ = st.pop_before(seq.wrapping_add(1));
                }
                n == RETIRE_BATCH
            };
            for h in batch.iter().flatten() {
                // SAFETY: `h` was held (type invariant) and is taken out of the ledger: posted
                // before a Send whose completion came, the device is done with it, and nothing
                // else will hand it back.
                unsafe { (h.retire)(h.wr, wc) };
            }
            if !more {
                break;
            }
        }
    }
}

/// A work request (Receive or Send) with its buffers and the caller's data `T`.
///
/// # Invariants
///
/// `cqe.done` is `Wr::<T>::done_callback`. While posted, the object is owned by the device
/// (leaked from its `KBox`) and handed back by that callback, or, posted unsignaled, by its
/// QP's [`Ledger`].
pub(crate) struct Wr<T: Done> {
    cqe: Opaque<bindings::ib_cqe>,
    bufs: KVec<(DmaBuf, usize)>,
    /// The rdma_rw contexts posted ahead of this Send ([`Qp::post_rw_send`]): non-empty only
    /// while the request is posted; destroyed by its completion before [`Done::done`].
    pub(super) rw: KVec<PostedRw>,
    /// The ledger of the QP a Send was posted on through it, while posted, with the Send's
    /// number there: its completion hands back the unsignaled Sends posted before it.
    ledger: Option<(Arc<Ledger>, u64)>,
    data: T,
}

impl<T: Done> Wr<T> {
    /// A Receive into one DMA-mapped buffer (of [`Direction::FromDevice`]).
    pub(crate) fn recv(buf: DmaBuf, data: T, flags: Flags) -> Result<KBox<Self>> {
        let mut bufs = KVec::with_capacity(1, flags)?;
        let len = buf.len();
        bufs.push((buf, len), flags)?;
        Self::new(bufs, data, flags)
    }

    /// A Send of `bufs`, one SGE per buffer of its whole length (see [`Wr::set_len`]).
    pub(crate) fn send(bufs: KVec<DmaBuf>, data: T, flags: Flags) -> Result<KBox<Self>> {
        let mut v = KVec::with_capacity(bufs.len(), flags)?;
        for b in bufs {
            let len = b.len();
            v.push((b, len), flags)?;
        }
        Self::new(v, data, flags)
    }

    /// A work request without buffers, whose completion only signals (a `LOCAL_INV`).
    pub(crate) fn signal(data: T, flags: Flags) -> Result<KBox<Self>> {
        Self::new(KVec::new(), data, flags)
    }

    fn new(bufs: KVec<(DmaBuf, usize)>, data: T, flags: Flags) -> Result<KBox<Self>> {
        Ok(KBox::new(
            Self {
                cqe: Opaque::new(bindings::ib_cqe {
                    done: Some(Self::done_callback),
                }),
                bufs,
                rw: KVec::new(),
                ledger: None,
                data,
            },
            flags,
        )?)
    }

    /// The caller's data.
    pub(crate) fn data(&self) -> &T {
        &self.data
    }

    /// The caller's data, mutably.
    pub(crate) fn data_mut(&mut self) -> &mut T {
        &mut self.data
    }

    /// Buffer `i`.
    pub(crate) fn buf(&self, i: usize) -> Option<&DmaBuf> {
        self.bufs.get(i).map(|(b, _)| b)
    }

    /// Buffer `i`, to fill in.
    pub(crate) fn buf_mut(&mut self, i: usize) -> Option<&mut DmaBuf> {
        self.bufs.get_mut(i).map(|(b, _)| b)
    }

    /// Sends only the first `len` bytes of buffer `i`.
    pub(crate) fn set_len(&mut self, i: usize, len: usize) -> Result {
        let (b, l) = self.bufs.get_mut(i).ok_or(EINVAL)?;
        if len > b.len() {
            return Err(EINVAL);
        }
        *l = len;
        Ok(())
    }

    fn sges(&self, lkey: u32, out: &mut [bindings::ib_sge; MAX_SGE]) -> Result<u32> {
        if self.bufs.len() > MAX_SGE {
            return Err(EINVAL);
        }
        for (o, (b, len)) in out.iter_mut().zip(self.bufs.iter()) {
            *o = b.sge(*len, lkey)?;
            b.sync_for_device();
        }
        u32::try_from(self.bufs.len()).map_err(|_| EINVAL)
    }

    /// # Safety
    ///
    /// Called by the CQ for a completion whose `wr_cqe` is the `cqe` of a posted `Wr<T>`.
    unsafe extern "C" fn done_callback(cq: *mut bindings::ib_cq, wc: *mut bindings::ib_wc) {
        // SAFETY: The CQ passes itself and a valid completion for the duration of the call.
        let (wc, cqe) = unsafe { Wc::from_raw(cq, wc) };
        let cqe = cqe.cast::<Opaque<bindings::ib_cqe>>();
        // SAFETY: By the safety requirements `cqe` is the `cqe` field of a `Wr<T>`.
        let wr = unsafe { kernel::container_of!(cqe, Self, cqe) };
        // SAFETY: A posted `Wr<T>` was leaked from its `KBox` by `Qp::post` (type invariant)
        // and completes once, so ownership comes back here.
        let mut wr = unsafe { KBox::from_raw(wr) };
        // The Sends posted unsignaled before this one are done too; they go back first, as
        // they would have completed.
        if let Some((ledger, seq)) = wr.ledger.take() {
            ledger.retire_before(seq, wc.cq_id());
        }
        Self::finish(wr, &wc);
    }

    /// Hands a request the device is done with back to its owner.
    fn finish(mut wr: KBox<Self>, wc: &Wc) {
        COUNTERS.posted.free();
        for (b, _) in wr.bufs.iter() {
            b.sync_for_cpu();
        }
        // The chain ahead of the Send is done (its work requests completed before the Send
        // did): its contexts are idle, and the QP exists (it is drained before it goes).
        wr.rw.clear();
        T::done(wr, wc);
    }

    /// Hands back a Send posted unsignaled ([`Held::retire`]).
    ///
    /// # Safety
    ///
    /// `raw` is a `Wr<T>` leaked from its `KBox` and posted unsignaled, which the device is
    /// done with and which no completion will hand back.
    unsafe fn retire(raw: *mut c_void, wc: &Wc) {
        // SAFETY: By the safety requirements, `raw` is a `Wr<T>` whose ownership is ours.
        let mut wr = unsafe { KBox::from_raw(raw.cast::<Self>()) };
        wr.ledger = None;
        Self::finish(wr, wc);
    }
}

/// Most buffers (SGEs) of one Send.
pub(super) const MAX_SGE: usize = 16;
/// Most MRs registered ahead of one Send or invalidated by one chain.
pub(crate) const MAX_CHAIN: usize = 32;
/// Most Receives posted as one chain by [`Qp::post_recvs`].
pub(crate) const MAX_RECV_CHAIN: usize = 16;

/// A signaled Send (`IB_WR_SEND`, or `IB_WR_SEND_WITH_INV` of the rkey in `inv`) of the
/// `num_sge` SGEs at `sg_list`, completing on `cqe`, ending a chain.
pub(super) fn send_wr(
    cqe: *mut bindings::ib_cqe,
    sg_list: *mut bindings::ib_sge,
    num_sge: u32,
    inv: Option<u32>,
) -> Result<bindings::ib_send_wr> {
    Ok(bindings::ib_send_wr {
        next: null_mut(),
        __bindgen_anon_1: bindings::ib_send_wr__bindgen_ty_1 { wr_cqe: cqe },
        sg_list,
        num_sge: i32::try_from(num_sge).map_err(|_| EINVAL)?,
        opcode: match inv {
            Some(_) => bindings::ib_wr_opcode_IB_WR_SEND_WITH_INV,
            None => bindings::ib_wr_opcode_IB_WR_SEND,
        },
        send_flags: bindings::ib_send_flags_IB_SEND_SIGNALED,
        ex: bindings::ib_send_wr__bindgen_ty_2 {
            invalidate_rkey: inv.unwrap_or(0),
        },
    })
}

/// How many of the unsignaled requests `ahead` (in the order chained, ahead of the chain's last,
/// signaled request: the Send after `REG_MR`s, the last of `LOCAL_INV`s) a device that refused
/// the chain took: those before `bad`, the first request it refused. All of them if `bad` is
/// the last request, or is none of the chain (a provider that does not say which: the answer
/// that keeps every MR safe).
pub(crate) fn posted_ahead(
    bad: *const bindings::ib_send_wr,
    ahead: &[*const bindings::ib_send_wr],
) -> usize {
    ahead.iter().position(|&r| r == bad).unwrap_or(ahead.len())
}

/// A Receive into the one SGE at `sge`, completing on `cqe`.
fn recv_wr(cqe: *mut bindings::ib_cqe, sge: *mut bindings::ib_sge) -> bindings::ib_recv_wr {
    bindings::ib_recv_wr {
        next: null_mut(),
        __bindgen_anon_1: bindings::ib_recv_wr__bindgen_ty_1 { wr_cqe: cqe },
        sg_list: sge,
        num_sge: 1,
    }
}

/// The QP event handler (`ib_qp_init_attr.event_handler`): logs the event, as both C
/// transports trace it. Rate-limited: a peer can cause some (`COMM_EST` on every connection
/// whose first message beats the RTU).
///
/// # Safety
///
/// `event` is valid for the call (the RDMA core passes the event it dispatches).
unsafe extern "C" fn qp_event(event: *mut bindings::ib_event, _context: *mut c_void) {
    // SAFETY: `event` is valid (the safety requirements).
    let e = unsafe { (*event).event };
    // SAFETY: `ib_event_msg` takes any value and returns a static string.
    let msg = unsafe { CStr::from_char_ptr(bindings::ib_event_msg(e)) };
    super::ratelimit::pr_info_peer!("QP event {} ({})\n", msg, e);
}

/// A reliably connected queue pair, created on a cm id (`rdma_create_qp` / `rdma_destroy_qp`).
///
/// It holds its CQs, its PD and the cm id, and is destroyed before them. Dropping it drains it
/// first (`ib_drain_qp`, which may sleep), so every posted request comes back to [`Done`].
///
/// # Invariants
///
/// `qp` is the QP of `id`, created with `pd`, `send_cq` and `recv_cq`, and owned by this object.
pub(crate) struct Qp<H: Handler> {
    qp: NonNull<bindings::ib_qp>,
    caps: QpCaps,
    lkey: u32,
    // Dropped in this order after `drop`: the CQs, the PD, the cm id.
    send_cq: Arc<Cq>,
    /// Held so that the CQ outlives the QP; only the QP uses it.
    _recv_cq: Arc<Cq>,
    pd: Arc<Pd>,
    /// The Sends posted unsignaled, until they are known to be done.
    ledger: Arc<Ledger>,
    id: Arc<Core<H>>,
}

// SAFETY: Posting and destroying may happen on any thread; `ib_post_*` are thread safe.
unsafe impl<H: Handler> Send for Qp<H> {}
// SAFETY: As above.
unsafe impl<H: Handler> Sync for Qp<H> {}

impl<H: Handler> Qp<H> {
    /// Creates the QP of `id` (one per id; `EBUSY` otherwise). Fails with `EINVAL` if the PD
    /// or CQs are of another device than the id's.
    pub(crate) fn new(
        id: &Id<H>,
        pd: &Arc<Pd>,
        send_cq: &Arc<Cq>,
        recv_cq: &Arc<Cq>,
        caps: QpCaps,
    ) -> Result<Self> {
        Self::create_with(id, pd, send_cq, recv_cq, caps, 0, true)
    }

    /// The capacities the device granted.
    pub(crate) fn caps(&self) -> QpCaps {
        self.caps
    }

    fn check_device<T: Done>(&self, wr: &Wr<T>) -> Result {
        let d = self.pd.dev.as_ptr();
        if wr.bufs.iter().any(|(b, _)| b.dev.as_ptr() != d) {
            return Err(EINVAL);
        }
        Ok(())
    }

    /// Posts a Receive (`ib_post_recv`) into the first buffer of `wr` (built by [`Wr::recv`]).
    /// On failure `wr` is dropped.
    pub(crate) fn post_recv<T: Done>(&self, wr: KBox<Wr<T>>) -> Result {
        self.check_device(&wr)?;
        let (b, len) = wr.bufs.first().ok_or(EINVAL)?;
        let mut sge = b.sge(*len, self.lkey)?;
        b.sync_for_device();
        let recv = recv_wr(wr.cqe_ptr(), &mut sge);
        let raw = KBox::into_raw(wr);
        COUNTERS.posted.alloc();
        // SAFETY: `raw` is a valid `Wr<T>` owned by the device from now on (type invariant of
        // `Wr`); its `cqe`, which `recv` completes on, leads the completion back to it; `recv`
        // and its SGE are valid for the call, in which the provider copies them; the QP is live.
        let rc =
            unsafe { bindings::rpcrdma_shim_ib_post_recv(self.qp.as_ptr(), &recv, null_mut()) };
        self.posted(raw, rc)
    }

    /// Posts the Receives `wrs` yields (each built by [`Wr::recv`]), at most
    /// [`MAX_RECV_CHAIN`] of them, as one chain (one `ib_post_recv`, as
    /// `svc_rdma_refresh_recvs`). Returns how many were posted; on failure, the error and how
    /// many the device took: those ahead of the one it names as bad, or all if it names none
    /// (as svcrdma, which then frees none of them); the others are dropped. A request that
    /// cannot be posted (of another device) fails the whole chain before anything is posted.
    pub(crate) fn post_recvs<T: Done>(
        &self,
        wrs: impl Iterator<Item = KBox<Wr<T>>>,
    ) -> core::result::Result<u32, (Error, u32)> {
        let mut sges = [bindings::ib_sge::default(); MAX_RECV_CHAIN];
        let mut held: [Option<KBox<Wr<T>>>; MAX_RECV_CHAIN] = core::array::from_fn(|_| None);
        let mut n = 0usize;
        // The bounded iterator first: `zip` never takes a request there is no room for.
        for ((sge, slot), wr) in sges.iter_mut().zip(held.iter_mut()).zip(wrs) {
            // On error, the requests taken so far are dropped with `held`.
            self.check_device(&wr).map_err(|e| (e, 0))?;
            let (b, len) = wr.bufs.first().ok_or((EINVAL, 0))?;
            *sge = b.sge(*len, self.lkey).map_err(|e| (e, 0))?;
            *slot = Some(wr);
            n += 1;
        }
        if n == 0 {
            return Ok(0);
        }
        let mut raws = [null_mut::<Wr<T>>(); MAX_RECV_CHAIN];
        let mut recvs = [recv_wr(null_mut(), null_mut()); MAX_RECV_CHAIN];
        for (((slot, raw), recv), sge) in held
            .iter_mut()
            .zip(raws.iter_mut())
            .zip(recvs.iter_mut())
            .zip(sges.iter_mut())
        {
            let Some(wr) = slot.take() else { break };
            if let Some((b, _)) = wr.bufs.first() {
                b.sync_for_device();
            }
            *recv = recv_wr(wr.cqe_ptr(), sge);
            *raw = KBox::into_raw(wr);
            COUNTERS.posted.alloc();
        }
        let count = u32::try_from(n).map_err(|_| (EINVAL, 0))?;
        let mut bad: *const bindings::ib_recv_wr = core::ptr::null();
        let head = recvs.as_mut_ptr();
        // SAFETY: `head` points to the `n` (at most `MAX_RECV_CHAIN`) Receives of `recvs`,
        // linked here in order; each completes on the `cqe` of a valid `Wr<T>`, owned by the
        // device once posted (type invariant of `Wr`), into its first buffer (its SGE in
        // `sges`); the chain and the SGEs are valid for the call, in which the provider copies
        // them; the QP is live.
        let rc = unsafe {
            for i in 1..n {
                (*head.add(i - 1)).next = head.add(i);
            }
            bindings::rpcrdma_shim_ib_post_recv(self.qp.as_ptr(), head, &mut bad)
        };
        if rc == 0 {
            return Ok(count);
        }
        // The index of the request the device refused, if it names one of the chain.
        let at = bad
            .addr()
            .checked_sub(head.addr())
            .map(|d| d / core::mem::size_of::<bindings::ib_recv_wr>())
            .filter(|&i| i < n);
        let posted = at.unwrap_or(n);
        for &raw in raws.iter().take(n).skip(posted) {
            // SAFETY: The device did not take the requests from the first one it refused on:
            // they are ours again, and each is taken back once.
            drop(unsafe { KBox::from_raw(raw) });
            COUNTERS.posted.free();
        }
        // `posted` is at most `n`, which is `count`.
        Err((
            Error::from_errno(rc),
            u32::try_from(posted).unwrap_or(count),
        ))
    }

    /// Posts the registrations of `mrs` (each prepared by [`Mr::map`], unsignaled) and then a
    /// Send of the buffers of `wr`, as one chain (`REG_MR`, ..., `REG_MR`, `SEND`): the peer
    /// cannot see a handle before the device registered it. `EINVAL` if an MR is of another PD
    /// or not mapped.
    ///
    /// The Send is signaled unless `signal`, given the number of work requests in the chain,
    /// says no and the QP keeps unsignaled Sends ([`Qp::new`]; [`Qp::post_send_reg`] signals
    /// anyway when the QP holds a Send Queue's worth): then it makes no completion of its own
    /// when it succeeds, and comes back to [`Done::done`] (with a made-up completion,
    /// [`Wc::is_retired`]) when a Send posted after it here completes, or when the QP is
    /// drained. So the caller must signal one Send every so often, and whenever what the Send
    /// holds is needed back soon. `signal` runs at most once, just before the post, in the order
    /// of the posts.
    ///
    /// On failure `wr` is dropped (the Send, last in the chain, was not posted), and the error
    /// comes with how many of the `REG_MR`s, taken in the order `mrs` gave them, the device
    /// took before it refused the rest ([`posted_ahead`]; zero if nothing was posted). Those
    /// stay queued: the device registers their MRs whenever it gets to them, or flushes them,
    /// so the caller must keep those MRs mapped, alive and out of any other use until the QP
    /// is drained ([`Qp::drain`]).
    pub(crate) fn post_send_reg<'a, T: Done>(
        &self,
        mut wr: KBox<Wr<T>>,
        mrs: impl IntoIterator<Item = &'a mut Mr>,
        signal: impl FnOnce(usize) -> bool,
    ) -> core::result::Result<(), (Error, usize)> {
        self.check_device(&wr).map_err(|e| (e, 0))?;
        let mut regs: [Option<&'a mut Mr>; MAX_CHAIN] = core::array::from_fn(|_| None);
        let mut n = 0usize;
        for m in mrs {
            let o = regs.get_mut(n).ok_or((EINVAL, 0))?;
            if !Arc::ptr_eq(m.pd(), &self.pd) || !m.is_mapped() {
                return Err((EINVAL, 0));
            }
            *o = Some(m);
            n += 1;
        }
        let mut sges = [bindings::ib_sge::default(); MAX_SGE];
        let nsge = wr.sges(self.lkey, &mut sges).map_err(|e| (e, 0))?;
        let mut send = send_wr(wr.cqe_ptr(), sges.as_mut_ptr(), nsge, None).map_err(|e| (e, 0))?;
        // Under the ledger's lock from numbering the Send to holding it: the ledger's order is
        // the Send Queue's.
        let mut ledger = self.ledger.state.lock();
        let seq = ledger.next;
        let unsignaled = ledger.has_room() && !signal(n + 1);
        if unsignaled {
            send.send_flags &= !bindings::ib_send_flags_IB_SEND_SIGNALED;
        }
        let mut first: *mut bindings::ib_send_wr = &mut send;
        // Each `REG_MR` of the chain, in the order posted, to tell which the device took.
        let mut linked: [*const bindings::ib_send_wr; MAX_CHAIN] = [core::ptr::null(); MAX_CHAIN];
        for (i, m) in regs.iter_mut().enumerate().take(n).rev() {
            if let Some(m) = m {
                first = m.reg_wr(first);
                linked[i] = first;
            }
        }
        // Its completion, whether signaled or a failure, hands back the ones held before it.
        wr.ledger = Some((self.ledger.clone(), seq));
        let raw = KBox::into_raw(wr);
        COUNTERS.posted.alloc();
        let mut bad: *const bindings::ib_send_wr = core::ptr::null();
        // SAFETY: `raw` is a valid `Wr<T>` owned by the device from now on (type invariant of
        // `Wr`); its `cqe`, which the Send completes on, leads the completion back to it, and
        // if it is unsignaled the ledger holds it, below. The chain is the `REG_MR`s of the
        // MRs, each in its `Mr` (alive during the call and, by the caller's contract, until the
        // QP is drained if the device took it, as is the `ib_cqe` their errors complete on),
        // linked ahead of `send`; the chain and the SGEs are valid for the call, in which the
        // provider copies them; `bad` is valid for the provider to write the first request it
        // refused to; the QP is live.
        let rc = unsafe { bindings::rpcrdma_shim_ib_post_send(self.qp.as_ptr(), first, &mut bad) };
        if rc == 0 {
            ledger.next = seq.wrapping_add(1);
            if unsignaled {
                // INVARIANT: `raw`, leaked above, was posted unsignaled as the Send numbered
                // `seq`; its completion, if it fails, cannot come before this (it takes the
                // lock held here). There is room (checked above, under the same lock).
                ledger.hold(Held {
                    wr: raw.cast(),
                    seq,
                    retire: Wr::<T>::retire,
                });
            }
            return Ok(());
        }
        drop(ledger);
        // The Send is last in the chain and the device takes none from the first it refuses:
        // `raw` is not posted, and `posted` takes it back.
        let taken = posted_ahead(bad, &linked[..n]);
        Err((self.posted(raw, rc).err().unwrap_or(EIO), taken))
    }

    /// Posts a `LOCAL_INV` of each MR that `mrs` visits in the data of `wr` (built by
    /// [`Wr::signal`]) as one chain, the last signaled: `wr` completes once all are invalidated
    /// (or flushed). The MRs travel in the work request, so they stay alive while it is
    /// posted. `EINVAL`, with nothing posted, if an MR is of another PD, if there are more than
    /// [`MAX_CHAIN`] or none.
    ///
    /// On failure `wr` is handed back (the last `LOCAL_INV`, the signaled one, was not posted),
    /// with how many of the others, taken in the order `mrs` visited them, the device took
    /// before it refused the rest ([`posted_ahead`]; zero if nothing was posted). Those stay
    /// queued: the device invalidates their MRs whenever it gets to them, or flushes them, and
    /// an error completes on the MR's own `ib_cqe`, so the caller must keep those MRs alive and
    /// out of any other use until the QP is drained ([`Qp::drain`]). The MRs of the others are
    /// still registered.
    pub(crate) fn post_local_inv<T: Done>(
        &self,
        mut wr: KBox<Wr<T>>,
        mrs: impl for<'b> FnOnce(&'b mut T, &mut dyn FnMut(&'b mut Mr)),
    ) -> core::result::Result<(), (Error, KBox<Wr<T>>, usize)> {
        // Each `LOCAL_INV` of the chain, in the order posted, to tell which the device took.
        let mut linked: [*const bindings::ib_send_wr; MAX_CHAIN] = [core::ptr::null(); MAX_CHAIN];
        // The chain, linked in the MRs, which `wr`'s data owns, and its length.
        let (first, n) = {
            let Wr { cqe, data, .. } = &mut *wr;
            let cqe = cqe.get();
            let mut invs: [Option<&mut Mr>; MAX_CHAIN] = core::array::from_fn(|_| None);
            let mut n = 0usize;
            let mut bad = false;
            mrs(data, &mut |m: &mut Mr| match invs.get_mut(n) {
                Some(o) if Arc::ptr_eq(m.pd(), &self.pd) => {
                    *o = Some(m);
                    n += 1;
                }
                _ => bad = true,
            });
            let mut first: *mut bindings::ib_send_wr = null_mut();
            if n > 0 && !bad {
                for (i, m) in invs.iter_mut().enumerate().take(n).rev() {
                    if let Some(m) = m {
                        // Only the last is signaled, on `wr`'s `cqe`.
                        first = m.inv_wr(first, (i == n - 1).then_some(cqe));
                        linked[i] = first;
                    }
                }
            }
            (first, n)
        };
        if first.is_null() {
            return Err((EINVAL, wr, 0));
        }
        let raw = KBox::into_raw(wr);
        COUNTERS.posted.alloc();
        let mut bad: *const bindings::ib_send_wr = core::ptr::null();
        // SAFETY: `raw` is a valid `Wr<T>` owned by the device once posted; the last
        // `LOCAL_INV` completes on its `cqe`, which leads the completion back to it. The chain
        // is the `LOCAL_INV`s of the MRs, each in its `Mr`, which `raw`'s data owns: alive
        // during the call and, if the device takes the whole chain, until `raw` completes, after
        // the others; by the caller's contract, an MR whose `LOCAL_INV` the device took stays
        // alive until the QP is drained, as does the `ib_cqe` in it that the request's errors
        // complete on. The chain is valid for the call, in which the provider copies it; `bad`
        // is valid for the provider to write the first request it refused to; the QP is live.
        let rc = unsafe { bindings::rpcrdma_shim_ib_post_send(self.qp.as_ptr(), first, &mut bad) };
        if rc != 0 {
            COUNTERS.posted.free();
            // The chain is not empty (`first` is not null), so `n` is at least 1.
            let taken = posted_ahead(bad, &linked[..n - 1]);
            // SAFETY: The device takes none of a chain from the first request it refuses, so
            // not the last, signaled, one: it never took `raw`, which is ours again.
            return Err((Error::from_errno(rc), unsafe { KBox::from_raw(raw) }, taken));
        }
        Ok(())
    }

    /// The PD of the QP.
    pub(crate) fn pd(&self) -> &Arc<Pd> {
        &self.pd
    }

    /// The device of the QP.
    pub(crate) fn device(&self) -> &Device {
        &self.pd.dev
    }

    /// The Send CQ of the QP.
    pub(crate) fn send_cq(&self) -> &Cq {
        &self.send_cq
    }

    fn posted<T: Done>(&self, raw: *mut Wr<T>, rc: c_int) -> Result {
        if rc != 0 {
            // SAFETY: The post failed, so the device never took `raw`: it is ours again.
            drop(unsafe { KBox::from_raw(raw) });
            COUNTERS.posted.free();
        }
        to_result(rc)
    }

    /// Moves the QP to the error state, which flushes every posted request, without waiting
    /// for the completions (see [`Qp::drain`]). Call it before a disconnect
    /// ([`super::cm::Id::disconnect`]): `rdma_disconnect` does so itself on InfiniBand, but on
    /// iWARP it moves the QP to `SQD` (siw: `CLOSING`), from where siw flushes no Send Queue
    /// entry the device has not started when the QP then moves on to the error state: those
    /// requests never complete, and what they hold is never freed.
    pub(crate) fn set_error(&self) -> Result {
        // SAFETY: The QP is live (type invariant).
        to_result(unsafe { bindings::rpcrdma_shim_qp_set_error(self.qp.as_ptr()) })
    }

    /// Moves the QP to the error state and waits until every posted request completed
    /// (`ib_drain_qp`). May sleep. A Send posted meanwhile or later, on another thread, is
    /// signaled whatever its caller asked ([`Qp::post_send_reg`]): it completes by itself (a
    /// flush), after the drain's hand-back of the held ones.
    pub(crate) fn drain(&self) {
        // First: a Send held after the drain's hand-back could complete (flushed) once more.
        self.ledger.close();
        // SAFETY: The QP is live; its CQs are not `IB_POLL_DIRECT`.
        unsafe { bindings::ib_drain_qp(self.qp.as_ptr()) };
        // Every request posted came back, but for the unsignaled Sends no later completion
        // showed done: the drain did.
        self.ledger.retire_all(self.send_cq.id());
    }
}

impl<H: Handler> Drop for Qp<H> {
    fn drop(&mut self) {
        self.drain();
        // SAFETY: The QP is owned and drained; the id is alive (we hold it).
        unsafe { bindings::rdma_destroy_qp(self.id.as_ptr()) };
        self.id.release_qp();
        COUNTERS.qps.free();
    }
}

// What the rdma_rw abstraction (`super::rw`) needs of QPs and work requests.
impl<H: Handler> Qp<H> {
    pub(super) fn as_ptr(&self) -> *mut bindings::ib_qp {
        self.qp.as_ptr()
    }

    /// The port of the cm id the QP was created on.
    pub(super) fn port(&self) -> u32 {
        // SAFETY: The id is alive (we hold it), and its port is set once it has a device, before
        // a QP can be created on it.
        unsafe { (*self.id.as_ptr()).port_num }
    }

    /// [`Qp::new`], with room for `max_rdma_ctxs` rdma_rw contexts (0 for none).
    pub(super) fn create_with(
        id: &Id<H>,
        pd: &Arc<Pd>,
        send_cq: &Arc<Cq>,
        recv_cq: &Arc<Cq>,
        caps: QpCaps,
        max_rdma_ctxs: u32,
        unsignaled: bool,
    ) -> Result<Self> {
        let dev = id.device()?;
        let d = dev.as_ptr();
        if pd.dev.as_ptr() != d || send_cq.dev.as_ptr() != d || recv_cq.dev.as_ptr() != d {
            return Err(EINVAL);
        }
        let core = id.core().clone();
        core.claim_qp()?;
        let id = core.as_ptr();
        let mut attr = bindings::ib_qp_init_attr {
            event_handler: Some(qp_event),
            send_cq: send_cq.ptr.as_ptr(),
            recv_cq: recv_cq.ptr.as_ptr(),
            cap: caps.to_raw(max_rdma_ctxs),
            sq_sig_type: bindings::ib_sig_type_IB_SIGNAL_REQ_WR,
            qp_type: bindings::ib_qp_type_IB_QPT_RC,
            // SAFETY: The id is alive (we hold it), and its port is set once it has a device,
            // which it has (checked above).
            port_num: unsafe { (*id).port_num },
            ..Default::default()
        };
        // SAFETY: The id is alive and has claimed no QP (`claim_qp`); the PD and CQs are live
        // and of the id's device (checked above); `attr` is valid for the call.
        let rc = unsafe { bindings::rdma_create_qp(id, pd.ptr.as_ptr(), &mut attr) };
        let qp = if rc == 0 {
            // SAFETY: After a successful `rdma_create_qp`, the id's QP is the one just created.
            NonNull::new(unsafe { (*id).qp }).ok_or(ENOMEM)
        } else {
            Err(Error::from_errno(rc))
        };
        let qp = match qp {
            Ok(qp) => qp,
            Err(e) => {
                core.release_qp();
                return Err(e);
            }
        };
        let caps = QpCaps::from_raw(&attr.cap);
        // Room for a whole Send Queue of unsignaled Sends, if there are to be any.
        let ledger = match Ledger::new(if unsignaled {
            caps.max_send_wr as usize
        } else {
            0
        }) {
            Ok(l) => l,
            Err(e) => {
                // SAFETY: The QP was just created on the id and nothing was posted on it.
                unsafe { bindings::rdma_destroy_qp(id) };
                core.release_qp();
                return Err(e);
            }
        };
        // SAFETY: The id has a QP, just created.
        unsafe { bindings::rpcrdma_shim_cm_id_qp_name(id) };
        COUNTERS.qps.alloc();
        // INVARIANT: `qp` was just created on the id with these PD and CQs.
        Ok(Self {
            qp,
            caps,
            lkey: pd.local_dma_lkey(),
            send_cq: send_cq.clone(),
            _recv_cq: recv_cq.clone(),
            pd: pd.clone(),
            ledger,
            id: core,
        })
    }
}

impl<T: Done> Wr<T> {
    /// The `struct ib_cqe` whose completion hands this request back.
    pub(super) fn cqe_ptr(&self) -> *mut bindings::ib_cqe {
        self.cqe.get()
    }

    /// Fills `out` with the SGEs of this request's buffers for `qp`, synced for the device.
    pub(super) fn sges_for<H: Handler>(
        &self,
        qp: &Qp<H>,
        out: &mut [bindings::ib_sge; MAX_SGE],
    ) -> Result<u32> {
        qp.check_device(self)?;
        self.sges(qp.lkey, out)
    }
}

#[kernel::macros::kunit_tests(rpcrdma_rs_verbs)]
mod tests {
    use kernel::sync::atomic::{
        Atomic,
        Relaxed, //
    };

    use super::*;

    /// What the requests handed back showed: their ids in the order they came back, one
    /// decimal digit each, and how many came with a made-up completion of each status on the
    /// ledger's CQ (7 here).
    struct Log {
        order: Atomic<u64>,
        retired_ok: Atomic<u32>,
        retired_flushed: Atomic<u32>,
        other: Atomic<u32>,
    }

    struct Req {
        log: Arc<Log>,
        id: u64,
    }

    impl Done for Req {
        fn done(wr: KBox<Wr<Self>>, wc: &Wc) {
            let d = wr.data();
            let order = d.log.order.load(Relaxed);
            d.log.order.store(order * 10 + d.id, Relaxed);
            let n = match (wc.is_retired(), wc.status()) {
                (true, IB_WC_SUCCESS) if wc.cq_id() == 7 => &d.log.retired_ok,
                (true, IB_WC_WR_FLUSH_ERR) if wc.cq_id() == 7 => &d.log.retired_flushed,
                _ => &d.log.other,
            };
            n.add(1, Relaxed);
        }
    }

    /// Holds a request that was never posted as if it had been posted unsignaled now, as
    /// `Qp::post_send_reg` does under the lock; its number and the request, or `None` if there
    /// was no room.
    fn hold(ledger: &Ledger, log: &Arc<Log>, id: u64) -> Result<Option<(u64, *mut Wr<Req>)>> {
        let wr = Wr::signal(
            Req {
                log: log.clone(),
                id,
            },
            GFP_KERNEL,
        )?;
        let mut st = ledger.state.lock();
        let seq = st.next;
        if !st.has_room() {
            return Ok(None);
        }
        let raw = KBox::into_raw(wr);
        COUNTERS.posted.alloc();
        // INVARIANT: `raw` was never posted: no completion will hand it back, and the device
        // has nothing of it.
        assert!(st.hold(Held {
            wr: raw.cast(),
            seq,
            retire: Wr::<Req>::retire,
        }));
        st.next += 1;
        Ok(Some((seq, raw)))
    }

    /// A completion of the device's own, with `status`.
    fn wc(status: i32) -> Wc {
        Wc {
            cq_id: 0,
            status,
            opcode: 0,
            byte_len: 0,
            vendor_err: 0,
            wc_flags: 0,
            invalidate_rkey: 0,
            retired: false,
        }
    }

    #[test]
    fn ledger_hands_back_in_order() -> Result {
        let posted = COUNTERS.posted.live();
        let log = Arc::new(
            Log {
                order: Atomic::new(0),
                retired_ok: Atomic::new(0),
                retired_flushed: Atomic::new(0),
                other: Atomic::new(0),
            },
            GFP_KERNEL,
        )?;
        let ledger = Ledger::new(4)?;
        // Three unsignaled Sends, then a signaled one (numbered, not held) completes: the three
        // come back, oldest first, as succeeded.
        for id in 1..=3 {
            assert_eq!(hold(&ledger, &log, id)?.map(|(seq, _)| seq), Some(id - 1));
        }
        let signaled = {
            let mut st = ledger.state.lock();
            st.next += 1;
            st.next - 1
        };
        assert_eq!(signaled, 3);
        ledger.retire_before(signaled, 7);
        assert_eq!(log.order.load(Relaxed), 123);
        assert_eq!(log.retired_ok.load(Relaxed), 3);
        // Around the ring: four fit, the fifth does not (numbered from 4: the signaled one
        // took 3).
        let mut six = None;
        for id in 4..=7 {
            let h = hold(&ledger, &log, id)?;
            assert_eq!(h.map(|(seq, _)| seq), Some(id));
            if id == 6 {
                six = h.map(|(_, raw)| raw);
            }
        }
        assert!(hold(&ledger, &log, 8)?.is_none());
        // The one numbered 6 (id 6) failed on its own: 4 and 5 come back as succeeded (had
        // they failed, they would have completed by themselves), and the ledger forgets it,
        // which its own completion hands back.
        ledger.retire_before(6, 7);
        assert_eq!(log.order.load(Relaxed), 12345);
        assert_eq!(log.retired_ok.load(Relaxed), 5);
        assert_eq!(ledger.state.lock().len, 1);
        let six = six.ok_or(EINVAL)?;
        // SAFETY: `six` was never posted, and the ledger forgot it: it is ours.
        unsafe { Wr::<Req>::retire(six.cast(), &wc(IB_WC_WR_FLUSH_ERR)) };
        assert_eq!(log.order.load(Relaxed), 123456);
        assert_eq!(log.other.load(Relaxed), 1);
        // The drain closes the ledger first: with room for three more, nothing is held from
        // then on (a Send posted during or after the drain is signaled, and its flush hands it
        // back); then it hands back the rest (id 7).
        assert_eq!(ledger.state.lock().len, 1);
        ledger.close();
        assert!(hold(&ledger, &log, 8)?.is_none());
        ledger.retire_all(7);
        assert_eq!(log.order.load(Relaxed), 1234567);
        assert_eq!(log.retired_flushed.load(Relaxed), 1);
        assert_eq!(log.retired_ok.load(Relaxed), 5);
        assert_eq!(ledger.state.lock().len, 0);
        assert_eq!(COUNTERS.posted.live(), posted);
        Ok(())
    }
}
