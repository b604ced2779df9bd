// SPDX-License-Identifier: GPL-2.0

//! Fast-registration memory regions (FRWR).
//!
//! An [`Mr`] is allocated once per connection (`ib_alloc_mr`) and reused: [`Mr::map`]
//! DMA-maps a list of page pieces into it, as far as it reaches (its scatterlist,
//! `ib_dma_map_sg`, `ib_map_mr_sg`), and prepares its `REG_MR` with a fresh rkey;
//! [`Qp::post_send_reg`](super::verbs::Qp::post_send_reg) posts that ahead of the Send that
//! advertises the region; once the peer is done with it,
//! [`Qp::post_local_inv`](super::verbs::Qp::post_local_inv) fences the region (unless the
//! peer invalidated it remotely) and [`Mr::unmap`] ends the DMA mapping.
//!
//! As in `rpcrdma.ko` (`struct rpcrdma_mr`), an MR keeps its scatterlist, its `REG_MR` and
//! `LOCAL_INV` work requests (`struct ib_reg_wr`, `ib_send_wr`) and the `struct ib_cqe` those
//! complete on when unsignaled, which they do only in error: that completion
//! (`xprtrdma_wc_fastreg`) is traced and logged, and the connection is then lost.
//!
//! The owner of the memory must see a registration ended (invalidated, or the QP destroyed)
//! before that memory is released.

use core::{
    pin::Pin,
    ptr::{
        null_mut,
        NonNull, //
    },
};

use kernel::{
    page::{
        BorrowedPage,
        PAGE_SIZE, //
    },
    prelude::*,
    sync::Arc,
    types::Opaque, //
};

use super::{
    ratelimit::pr_err_peer,
    verbs::{
        Direction,
        Pd,
        Wc, //
    },
    COUNTERS, //
};
use crate::{
    bindings,
    trace, //
};

/// What the peer may do with a registered region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// RDMA Read it (`IB_ACCESS_REMOTE_READ`).
    RemoteRead,
    /// RDMA Write into it (`IB_ACCESS_REMOTE_WRITE`).
    RemoteWrite,
}

/// A registered region as the peer addresses it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Region {
    /// The rkey of the registration.
    pub(crate) rkey: u32,
    /// Its length in bytes.
    pub(crate) length: u32,
    /// Its first byte's address on the wire (the MR's iova).
    pub(crate) iova: u64,
}

/// `PAGE_SIZE`, as the registration arithmetic sees it.
pub(crate) const fn page_size() -> u32 {
    const _: () = assert!(kernel::page::PAGE_SIZE <= u32::MAX as usize);
    kernel::page::PAGE_SIZE as u32
}

/// The work requests of an MR and the completion entry they signal errors on, which the device
/// and the completion path reach by address: kept at one place for the MR's life.
///
/// # Invariants
///
/// `cqe.done` is [`mr_done`].
struct MrWrs {
    /// The `ib_cqe` of the unsignaled `REG_MR` and `LOCAL_INV`.
    cqe: Opaque<bindings::ib_cqe>,
    /// The `REG_MR` that [`Mr::map`] prepares.
    reg_wr: Opaque<bindings::ib_reg_wr>,
    /// The `LOCAL_INV` that [`Mr::inv_wr`] prepares.
    inv_wr: Opaque<bindings::ib_send_wr>,
}

/// A fast-registration memory region with its scatterlist.
///
/// # Invariants
///
/// `mr` is an MR allocated by `ib_alloc_mr` on `pd` with room for `depth` pages, owned by this
/// object. `sg` is a scatterlist of `depth` entries (`sg_init_table`), never resized; its
/// first `nsg` entries are DMA-mapped for `pd`'s device in direction `dir`, none if `nsg` is 0.
/// `wrs.reg_wr` holds the MR's registration while it is mapped.
pub(crate) struct Mr {
    mr: NonNull<bindings::ib_mr>,
    wrs: Pin<KBox<MrWrs>>,
    sg: KVec<bindings::scatterlist>,
    /// Entries of `sg` DMA-mapped (0: not mapped).
    nsg: u32,
    /// Direction of the last mapping; none before the first.
    dir: Option<Direction>,
    /// Entries of the scatterlist.
    depth: u32,
    /// Pieces may leave gaps between them (`IB_MR_TYPE_SG_GAPS`).
    sg_gaps: bool,
    pd: Arc<Pd>,
}

// SAFETY: An MR may be used and freed on any thread; `&Mr` only reads its rkey, its PD and
// whether it is mapped.
unsafe impl Send for Mr {}
// SAFETY: As above.
unsafe impl Sync for Mr {}

/// The `enum dma_data_direction` of a mapping's direction, `DMA_BIDIRECTIONAL` (0) for none,
/// as the tracepoints take it.
fn dir_raw(dir: Option<Direction>) -> u32 {
    dir.map_or(0, |d| d as u32)
}

impl Mr {
    /// Allocates an MR of up to `depth` pages on `pd` (with gaps between pages allowed if
    /// `sg_gaps`, `IB_MR_TYPE_SG_GAPS`). May sleep.
    pub(crate) fn new(pd: &Arc<Pd>, depth: u32, sg_gaps: bool) -> Result<Self> {
        if depth == 0 {
            return Err(EINVAL);
        }
        let mut sg = KVec::from_elem(
            bindings::scatterlist::default(),
            usize::try_from(depth)?,
            GFP_KERNEL,
        )?;
        let wrs = KBox::pin(
            MrWrs {
                cqe: Opaque::new(bindings::ib_cqe {
                    done: Some(mr_done),
                }),
                reg_wr: Opaque::new(bindings::ib_reg_wr::default()),
                inv_wr: Opaque::new(bindings::ib_send_wr::default()),
            },
            GFP_KERNEL,
        )?;
        let ty = if sg_gaps {
            bindings::ib_mr_type_IB_MR_TYPE_SG_GAPS
        } else {
            bindings::ib_mr_type_IB_MR_TYPE_MEM_REG
        };
        // SAFETY: The PD is alive (we hold it for the MR's lifetime).
        let p = unsafe { bindings::ib_alloc_mr(pd.as_ptr(), ty, depth) };
        let mr = match kernel::error::from_err_ptr(p) {
            Ok(p) => NonNull::new(p).ok_or(ENOMEM)?,
            Err(e) => {
                trace::xprtrdma_frwr_alloc(0, e);
                return Err(e);
            }
        };
        // SAFETY: `sg` has `depth` entries, owned here.
        unsafe { bindings::sg_init_table(sg.as_mut_ptr(), depth) };
        COUNTERS.mrs.alloc();
        // INVARIANT: Just allocated on `pd`, with a scatterlist of `depth` entries, not mapped;
        // `wrs.cqe` completes on `mr_done`.
        Ok(Self {
            mr,
            wrs,
            sg,
            nsg: 0,
            dir: None,
            depth,
            sg_gaps,
            pd: pd.clone(),
        })
    }

    /// Maps `pieces`, each `(page, offset in the page, length)` within one page, in order and
    /// as far as this MR reaches, for `access` by the peer, and prepares the registration with
    /// a new rkey. Without gap support only the first piece may start, and only the last may
    /// end, inside a page. Returns the bytes covered and the region to advertise; `EINVAL` if
    /// no piece fits.
    ///
    /// The caller must post the registration and end it (with a `LOCAL_INV` or by destroying
    /// the QP, then [`Mr::unmap`]) before the memory of the pieces is released.
    pub(crate) fn map<'a>(
        &mut self,
        pieces: impl IntoIterator<Item = (BorrowedPage<'a>, u32, u32)>,
        access: Access,
    ) -> Result<(u32, Region)> {
        if self.nsg != 0 {
            return Err(EBUSY);
        }
        let (mut n, mut covered, mut end) = (0u32, 0u32, 0u32);
        for (p, offset, len) in pieces {
            if !takes(self.depth, self.sg_gaps, n, end, offset, len) {
                break;
            }
            // `n` is below the depth (`takes`), the length of `sg`.
            let Some(sg) = self.sg.get_mut(n as usize) else {
                break;
            };
            // SAFETY: `sg` is an entry of the MR's scatterlist, which is not mapped; the page
            // is valid now and, by the caller's duty, until the mapping ends.
            unsafe { bindings::rpcrdma_shim_sg_set_page(sg, p.as_ptr().cast(), len, offset) };
            n += 1;
            covered = covered.checked_add(len).ok_or(EINVAL)?;
            end = offset + len;
        }
        if n == 0 {
            return Err(EINVAL);
        }
        // As frwr_map(): each registration bumps the key byte of the rkey, so that the peer
        // cannot use the handle of an earlier one.
        let key = (self.rkey() as u8).wrapping_add(1);
        let dir = match access {
            Access::RemoteWrite => Direction::FromDevice,
            Access::RemoteRead => Direction::ToDevice,
        };
        self.dir = Some(dir);
        let id = self.id();
        let dev = self.pd.device().as_ptr();
        let sg = self.sg.as_mut_ptr();
        let nents = i32::try_from(n)?;
        // SAFETY: The first `n` (0 < `n` <= depth) entries of the scatterlist are set just
        // above, for pages valid until the mapping ends; `dev` is the PD's device, registered
        // (the PD holds it).
        let mapped = unsafe { bindings::rpcrdma_shim_ib_dma_map_sg(dev, sg, nents, dir as i32) };
        if mapped == 0 {
            // SAFETY: The scatterlist has at least one entry.
            let addr = unsafe { bindings::rpcrdma_shim_sg_dma_address(sg) };
            trace::xprtrdma_frwr_sgerr(id, addr, dir as u32, nents);
            return Err(ENOMEM);
        }
        // INVARIANT: The first `n` entries are mapped in direction `dir`.
        self.nsg = n;
        // SAFETY: The MR is owned, and `mapped` entries of `sg` are DMA-mapped for its
        // device; pages of `PAGE_SIZE` as `frwr_map()`.
        let m = unsafe {
            bindings::ib_map_mr_sg(self.mr.as_ptr(), sg, mapped, null_mut(), page_size())
        };
        if m != mapped {
            // SAFETY: As above.
            let addr = unsafe { bindings::rpcrdma_shim_sg_dma_address(sg) };
            trace::xprtrdma_frwr_maperr(id, addr, dir as u32, m, mapped);
            self.dma_unmap();
            return Err(if m < 0 { Error::from_errno(m) } else { EIO });
        }
        let mr = self.mr.as_ptr();
        // SAFETY: The MR is owned, and not registered (it is not mapped: any earlier
        // registration was invalidated or the QP destroyed, by the caller's duty).
        unsafe { bindings::rpcrdma_shim_ib_update_fast_reg_key(mr, key) };
        // SAFETY: The MR is owned; `ib_map_mr_sg` set its iova and length, and
        // `ib_update_fast_reg_key` its rkey.
        let (rkey, length, iova) = unsafe { ((*mr).rkey, (*mr).length, (*mr).iova) };
        let flags = match access {
            Access::RemoteWrite => {
                bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE
                    | bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE
            }
            Access::RemoteRead => bindings::ib_access_flags_IB_ACCESS_REMOTE_READ,
        };
        let reg = bindings::ib_reg_wr {
            wr: bindings::ib_send_wr {
                __bindgen_anon_1: bindings::ib_send_wr__bindgen_ty_1 {
                    wr_cqe: self.wrs.cqe.get(),
                },
                opcode: bindings::ib_wr_opcode_IB_WR_REG_MR,
                ..Default::default()
            },
            mr,
            key: rkey,
            // The access flags are small bits: `as` keeps them.
            access: flags as i32,
        };
        // SAFETY: `&mut self` is the only access to the MR's work requests, which no post is
        // reading (posts read them during their call only).
        unsafe { self.wrs.reg_wr.get().write(reg) };
        COUNTERS.mr_maps.alloc();
        Ok((
            covered,
            Region {
                rkey,
                // At most `depth` pages, as `covered`: it fits.
                length: length as u32,
                iova,
            },
        ))
    }

    /// Ends the DMA mapping of the last [`Mr::map`]. The registration must have been
    /// invalidated (or the QP destroyed) first.
    pub(crate) fn unmap(&mut self) {
        if self.nsg != 0 {
            self.dma_unmap();
            COUNTERS.mr_maps.free();
        }
    }

    /// Undoes the DMA mapping of the scatterlist, if any.
    fn dma_unmap(&mut self) {
        let (Ok(nents), Some(dir)) = (i32::try_from(self.nsg), self.dir) else {
            return;
        };
        if nents == 0 {
            return;
        }
        // SAFETY: The first `nsg` entries of the scatterlist are mapped for the PD's device in
        // direction `dir` (type invariant), which is registered (the PD holds it).
        unsafe {
            bindings::rpcrdma_shim_ib_dma_unmap_sg(
                self.pd.device().as_ptr(),
                self.sg.as_mut_ptr(),
                nents,
                dir as i32,
            )
        };
        // INVARIANT: Not mapped any more.
        self.nsg = 0;
    }

    /// Whether the MR is mapped (by [`Mr::map`], and not yet [`Mr::unmap`]ped).
    pub(crate) fn is_mapped(&self) -> bool {
        self.nsg != 0
    }

    /// The rkey of the last registration.
    pub(crate) fn rkey(&self) -> u32 {
        // SAFETY: The MR is owned (type invariant); its rkey changes only in `map`.
        unsafe { (*self.mr.as_ptr()).rkey }
    }

    /// The resource id of the MR (`mr.id=` in traces).
    fn id(&self) -> u32 {
        // SAFETY: The MR is owned (type invariant); its resource id is set when it is allocated.
        unsafe { (*self.mr.as_ptr()).res.id }
    }

    /// The PD of the MR.
    pub(crate) fn pd(&self) -> &Arc<Pd> {
        &self.pd
    }

    /// Links the `REG_MR` prepared by [`Mr::map`] (which the MR must be) ahead of `next`, for
    /// a chain about to be posted, and returns it. Unsignaled, it completes only in error, on
    /// the MR's own `ib_cqe`.
    pub(super) fn reg_wr(&mut self, next: *mut bindings::ib_send_wr) -> *mut bindings::ib_send_wr {
        let reg = self.wrs.reg_wr.get();
        // SAFETY: `&mut self` is the only access to the MR's work requests, which no post is
        // reading; `reg` is a valid `ib_reg_wr` (set by `map`), whose first member is its
        // `ib_send_wr`.
        unsafe {
            (*reg).wr.next = next;
            &raw mut (*reg).wr
        }
    }

    /// Prepares the `LOCAL_INV` of the MR's rkey ahead of `next`, for a chain about to be
    /// posted, and returns it: signaled on `signal` if given, else unsignaled on the MR's own
    /// `ib_cqe` (completing only in error).
    pub(super) fn inv_wr(
        &mut self,
        next: *mut bindings::ib_send_wr,
        signal: Option<*mut bindings::ib_cqe>,
    ) -> *mut bindings::ib_send_wr {
        let inv = bindings::ib_send_wr {
            next,
            __bindgen_anon_1: bindings::ib_send_wr__bindgen_ty_1 {
                wr_cqe: signal.unwrap_or(self.wrs.cqe.get()),
            },
            opcode: bindings::ib_wr_opcode_IB_WR_LOCAL_INV,
            send_flags: if signal.is_some() {
                bindings::ib_send_flags_IB_SEND_SIGNALED
            } else {
                0
            },
            ex: bindings::ib_send_wr__bindgen_ty_2 {
                invalidate_rkey: self.rkey(),
            },
            ..Default::default()
        };
        let p = self.wrs.inv_wr.get();
        // SAFETY: `&mut self` is the only access to the MR's work requests, which no post is
        // reading.
        unsafe { p.write(inv) };
        p
    }
}

/// The completion of an MR's unsignaled `REG_MR` or `LOCAL_INV`, which comes only in error
/// (the connection is then lost): traced, and logged unless flushed.
///
/// # Safety
///
/// Called by the CQ with itself and a valid completion, as `ib_cqe.done`.
unsafe extern "C" fn mr_done(cq: *mut bindings::ib_cq, wc: *mut bindings::ib_wc) {
    // SAFETY: The CQ passes itself and a valid completion for the duration of the call.
    let (wc, _) = unsafe { Wc::from_raw(cq, wc) };
    trace::xprtrdma_wc_fastreg(&wc);
    if !wc.is_success() && !wc.is_flush() {
        pr_err_peer!(
            "memory registration work failed: {} ({})\n",
            wc.status_msg(),
            wc.vendor_err()
        );
    }
}

/// Whether an MR of `depth` entries, with gap support or not (`sg_gaps`), that holds `n`
/// pieces, the last ending at `end` in its page, takes a piece of `len` bytes at `offset` in
/// its page next ([`Mr::map`]'s rule).
pub(crate) fn takes(depth: u32, sg_gaps: bool, n: u32, end: u32, offset: u32, len: u32) -> bool {
    let page = PAGE_SIZE as u32;
    if n == depth || offset >= page || len == 0 || len > page - offset {
        return false;
    }
    n == 0 || sg_gaps || (offset == 0 && end % page == 0)
}

impl Drop for Mr {
    fn drop(&mut self) {
        self.unmap();
        let (id, handle) = (self.id(), self.rkey());
        // SAFETY: The MR is owned (type invariant).
        let (length, offset) = unsafe { ((*self.mr.as_ptr()).length, (*self.mr.as_ptr()).iova) };
        // SAFETY: The MR is owned and freed once; its owner keeps it until no work request of
        // it is pending (the QP is drained or destroyed first), so nothing reaches its
        // `ib_cqe` or work requests any more.
        let rc = unsafe { bindings::rpcrdma_shim_ib_dereg_mr(self.mr.as_ptr()) };
        if rc != 0 {
            // The length of a registration fits (see `map`).
            trace::xprtrdma_frwr_dereg(id, 0, handle, length as u32, offset, dir_raw(self.dir), rc);
        }
        COUNTERS.mrs.free();
    }
}
