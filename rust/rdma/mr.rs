// SPDX-License-Identifier: GPL-2.0

//! Fast-registration memory regions (FRWR).
//!
//! An [`Mr`] is allocated once per connection (`ib_alloc_mr`) and reused: [`Mr::map`]
//! DMA-maps a list of page pieces into it, as far as it reaches, and prepares its `REG_MR`
//! with a fresh rkey; [`Qp::post_send_reg`](super::verbs::Qp::post_send_reg) posts that ahead
//! of the Send that advertises the region; once the peer is done with it,
//! [`Qp::post_local_inv`](super::verbs::Qp::post_local_inv) fences the region (unless the
//! peer invalidated it remotely) and [`Mr::unmap`] ends the DMA mapping.
//!
//! The owner of the memory must see a registration ended (invalidated, or the QP destroyed)
//! before that memory is released.

use core::ptr::NonNull;

use kernel::{
    error::to_result,
    page::{
        BorrowedPage,
        PAGE_SIZE, //
    },
    prelude::*,
    sync::Arc, //
};

use super::{
    verbs::Pd,
    COUNTERS, //
};
use crate::bindings;

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

/// A fast-registration memory region with its scatterlist.
///
/// # Invariants
///
/// `ptr` is an MR allocated by `rpcrdma_shim_mr_alloc` on `pd`, owned by this object;
/// `mapped` says whether it holds a DMA mapping.
pub(crate) struct Mr {
    ptr: NonNull<bindings::rpcrdma_shim_mr>,
    mapped: bool,
    /// Entries of the scatterlist.
    depth: u32,
    /// Pieces may leave gaps between them (`IB_MR_TYPE_SG_GAPS`).
    sg_gaps: bool,
    pd: Arc<Pd>,
}

// SAFETY: An MR may be used and freed on any thread; `&Mr` only reads its rkey.
unsafe impl Send for Mr {}
// SAFETY: As above.
unsafe impl Sync for Mr {}

impl Mr {
    /// Allocates an MR of up to `depth` pages on `pd` (with gaps between pages allowed if
    /// `sg_gaps`, `IB_MR_TYPE_SG_GAPS`). May sleep.
    pub(crate) fn new(pd: &Arc<Pd>, depth: u32, sg_gaps: bool) -> Result<Self> {
        // SAFETY: The PD is alive (we hold it for the MR's lifetime).
        let p = unsafe { bindings::rpcrdma_shim_mr_alloc(pd.as_ptr(), depth, sg_gaps) };
        let ptr = NonNull::new(kernel::error::from_err_ptr(p)?).ok_or(ENOMEM)?;
        COUNTERS.mrs.alloc();
        // INVARIANT: Just allocated on `pd`, not mapped.
        Ok(Self {
            ptr,
            mapped: false,
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
        if self.mapped {
            return Err(EBUSY);
        }
        let (mut n, mut covered, mut end) = (0u32, 0u32, 0u32);
        for (p, offset, len) in pieces {
            if !takes(self.depth, self.sg_gaps, n, end, offset, len) {
                break;
            }
            // SAFETY: The MR is owned and not mapped; `n` is below its depth; the page is
            // valid now and, by the caller's duty, until the mapping ends.
            unsafe {
                bindings::rpcrdma_shim_mr_set_page(
                    self.ptr.as_ptr(),
                    n,
                    p.as_ptr().cast(),
                    offset,
                    len,
                )
            };
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
        let mut seg = bindings::rpcrdma_shim_segment::default();
        // SAFETY: The MR is owned and not mapped, its first `n` (0 < `n` <= depth) scatterlist
        // entries set just above; `seg` is a valid output.
        to_result(unsafe {
            bindings::rpcrdma_shim_mr_map(
                self.ptr.as_ptr(),
                n,
                access == Access::RemoteWrite,
                key,
                &mut seg,
            )
        })?;
        COUNTERS.mr_maps.alloc();
        // INVARIANT: The shim mapped the MR.
        self.mapped = true;
        Ok((
            covered,
            Region {
                rkey: seg.handle,
                length: seg.length,
                iova: seg.offset,
            },
        ))
    }

    /// Ends the DMA mapping of the last [`Mr::map`]. The registration must have been
    /// invalidated (or the QP destroyed) first.
    pub(crate) fn unmap(&mut self) {
        if self.mapped {
            // SAFETY: The MR is owned and mapped.
            unsafe { bindings::rpcrdma_shim_mr_unmap(self.ptr.as_ptr()) };
            COUNTERS.mr_maps.free();
            self.mapped = false;
        }
    }

    /// The rkey of the last registration.
    pub(crate) fn rkey(&self) -> u32 {
        // SAFETY: The MR is owned.
        unsafe { bindings::rpcrdma_shim_mr_rkey(self.ptr.as_ptr()) }
    }

    /// The PD of the MR.
    pub(crate) fn pd(&self) -> &Arc<Pd> {
        &self.pd
    }

    pub(super) fn as_ptr(&self) -> *mut bindings::rpcrdma_shim_mr {
        self.ptr.as_ptr()
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
        // SAFETY: The MR is owned and freed once; its owner keeps it until no work request of
        // it is pending (the QP is drained or destroyed first).
        unsafe { bindings::rpcrdma_shim_mr_free(self.ptr.as_ptr()) };
        COUNTERS.mrs.free();
    }
}
