// SPDX-License-Identifier: GPL-2.0

//! Fast-registration memory regions (FRWR) over the buffers of RPC requests.
//!
//! An [`Mr`] is allocated once per connection (`ib_alloc_mr`) and reused: [`Mr::map`]
//! DMA-maps a byte range of a request's call or reply buffer into it and prepares its
//! `REG_MR` with a fresh rkey; [`Qp::post_send_reg`](super::verbs::Qp::post_send_reg) posts
//! that ahead of the Send that advertises the segment; after the reply,
//! [`Qp::post_local_inv`](super::verbs::Qp::post_local_inv) fences the region (unless the
//! peer invalidated it remotely) and [`Mr::unmap`] ends the DMA mapping.
//!
//! The transport must end a registration (invalidate, or destroy the QP) before the request's
//! buffers are released; the client does so in `buf_free`, as `xprt_rdma_free` does.

use core::ptr::NonNull;

use kernel::{
    error::to_result,
    prelude::*,
    sync::Arc, //
};

use super::{
    verbs::Pd,
    COUNTERS, //
};
use crate::{
    bindings,
    proto::v1::Segment,
    sunrpc::xprt::Rqst, //
};

/// Which buffer of a request a registration covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Buf {
    /// The call (`rq_snd_buf`), read by the peer: Read chunks.
    Call,
    /// The reply buffer (`rq_rcv_buf`), written by the peer: Write and Reply chunks.
    Reply,
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
            pd: pd.clone(),
        })
    }

    /// Maps the start of bytes `offset..offset + len` of `buf` of `rqst`, as far as this MR
    /// reaches, and prepares its registration with a new rkey. Returns the bytes covered and
    /// the segment to advertise. The caller must post the registration and end it (with a
    /// `LOCAL_INV` or by destroying the QP, then [`Mr::unmap`]) before `rqst` is released.
    pub(crate) fn map(
        &mut self,
        rqst: &Rqst,
        buf: Buf,
        offset: u32,
        len: u32,
    ) -> Result<(u32, Segment)> {
        if self.mapped {
            return Err(EBUSY);
        }
        let mut seg = bindings::rpcrdma_shim_segment::default();
        let write = buf == Buf::Reply;
        // SAFETY: The MR is owned and not mapped; the request is alive (its type invariant)
        // and the shim checks the range against its buffer; `seg` is a valid output.
        let n = unsafe {
            bindings::rpcrdma_shim_mr_map(
                self.ptr.as_ptr(),
                rqst.as_ptr(),
                write,
                offset,
                len,
                write,
                &mut seg,
            )
        };
        to_result(n)?;
        COUNTERS.mr_maps.alloc();
        // INVARIANT: The shim mapped the MR.
        self.mapped = true;
        let covered = u32::try_from(n).map_err(|_| EINVAL)?;
        Ok((
            covered,
            Segment {
                handle: seg.handle,
                length: seg.length,
                offset: seg.offset,
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

impl Drop for Mr {
    fn drop(&mut self) {
        self.unmap();
        // SAFETY: The MR is owned and freed once; its owner keeps it until no work request of
        // it is pending (the QP is drained or destroyed first).
        unsafe { bindings::rpcrdma_shim_mr_free(self.ptr.as_ptr()) };
        COUNTERS.mrs.free();
    }
}
