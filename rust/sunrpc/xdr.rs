// SPDX-License-Identifier: GPL-2.0

//! The bytes of a `struct xdr_buf`, page by page.
//!
//! An `xdr_buf` holds its bytes in three parts: the head (`head[0]`, a kernel virtual address),
//! the page list (`pages`, starting `page_base` bytes into the first page) and the tail
//! (`tail[0]`). [`Pages`] walks a byte range of the whole, yielding each piece that lies in
//! one page, in order: what a memory registration or a scatterlist is built from, and what
//! every copy into or out of an `xdr_buf` goes through ([`Pages::read`], [`Pages::write`],
//! [`Pages::zero`]). It is the one walk over an `xdr_buf`, for the client's calls and replies
//! and the server's Calls and replies alike.
//!
//! C header: [`include/linux/sunrpc/xdr.h`](srctree/include/linux/sunrpc/xdr.h)

use core::{
    ffi::c_void,
    marker::PhantomData,
    ptr::NonNull, //
};

use kernel::{
    page::{
        BorrowedPage,
        PAGE_SHIFT,
        PAGE_SIZE, //
    },
    prelude::*,
};

use crate::bindings;

/// The head, the page list and the tail of an `xdr_buf`.
const PARTS: usize = 3;

/// Where the bytes of a `struct xdr_buf` are: its head, its page list and its tail.
#[derive(Clone, Copy)]
pub(crate) struct XdrParts {
    /// `head[0].iov_base`.
    pub(crate) head: *mut c_void,
    /// `head[0].iov_len`.
    pub(crate) head_len: u32,
    /// The page list.
    pub(crate) pages: *mut *mut bindings::page,
    /// Offset of its first byte in the first page.
    pub(crate) page_base: u32,
    /// Its length.
    pub(crate) page_len: u32,
    /// `tail[0].iov_base`.
    pub(crate) tail: *mut c_void,
    /// `tail[0].iov_len`.
    pub(crate) tail_len: u32,
}

impl XdrParts {
    /// The parts of `buf`. Its lengths are `unsigned int`s but for the `iov_len`s, `size_t`s
    /// that sunrpc keeps within them (truncated as C's `u32` assignments would).
    pub(crate) fn of(buf: &bindings::xdr_buf) -> Self {
        Self {
            head: buf.head[0].iov_base,
            head_len: buf.head[0].iov_len as u32,
            pages: buf.pages,
            page_base: buf.page_base,
            page_len: buf.page_len,
            tail: buf.tail[0].iov_base,
            tail_len: buf.tail[0].iov_len as u32,
        }
    }

    /// Only a page list, of `page_len` bytes from the start of the first page.
    pub(crate) fn pages(pages: *mut *mut bindings::page, page_len: u32) -> Self {
        Self {
            head: core::ptr::null_mut(),
            head_len: 0,
            pages,
            page_base: 0,
            page_len,
            tail: core::ptr::null_mut(),
            tail_len: 0,
        }
    }
}

/// A walk over bytes `offset..offset + len` of an `xdr_buf` whose memory is borrowed for
/// `'a`: an iterator of `(page, offset in the page, length)`, each piece within one page.
///
/// # Invariants
///
/// `buf` describes an `xdr_buf` whose head, tail and page list (with the pages it points to)
/// stay valid for `'a`; each `left` range lies within its part of `buf`.
#[derive(Clone)]
pub(crate) struct Pages<'a> {
    buf: XdrParts,
    /// What is left to walk of the head, the page list and the tail: (start, length).
    left: [(u32, u32); PARTS],
    /// The part being walked.
    part: usize,
    _p: PhantomData<&'a ()>,
}

impl<'a> Pages<'a> {
    /// A walk over bytes `offset..offset + len` of `buf`; `EINVAL` if the range is empty or
    /// does not lie within the buffer.
    ///
    /// # Safety
    ///
    /// `buf` describes a live `xdr_buf` (its head, tail and page list, and the pages the list
    /// points to) that stays valid for `'a`.
    pub(super) unsafe fn new(buf: XdrParts, offset: u32, len: u32) -> Result<Self> {
        let end = offset.checked_add(len).ok_or(EINVAL)?;
        let total = u64::from(buf.head_len) + u64::from(buf.page_len) + u64::from(buf.tail_len);
        if len == 0 || u64::from(end) > total {
            return Err(EINVAL);
        }
        let mut left = [(0, 0); PARTS];
        let mut lo = 0u32;
        for (l, size) in left
            .iter_mut()
            .zip([buf.head_len, buf.page_len, buf.tail_len])
        {
            // The part of `offset..end` in `lo..lo + size`; `end <= total` bounds the sums.
            let s = offset.max(lo);
            let e = end.min(lo + size);
            if s < e {
                *l = (s - lo, e - s);
            }
            lo += size;
        }
        // INVARIANT: The caller guarantees `buf` for `'a`; each range was clipped to its part.
        Ok(Self {
            buf,
            left,
            part: 0,
            _p: PhantomData,
        })
    }

    /// The page and offset in it of byte `at` of the part being walked.
    fn locate(&self, at: u32) -> Option<(NonNull<bindings::page>, u32)> {
        let (base, page_mask) = (self.buf.page_base, PAGE_SIZE - 1);
        match self.part {
            1 => {
                let pos = base.checked_add(at)? as usize;
                // SAFETY: `at` lies in the page list (type invariant), so the list has an
                // entry for the page of `pos`, valid for `'a`.
                let page = unsafe { *self.buf.pages.add(pos >> PAGE_SHIFT) };
                Some((NonNull::new(page)?, (pos & page_mask) as u32))
            }
            part => {
                let kvec = if part == 0 {
                    self.buf.head
                } else {
                    self.buf.tail
                };
                let p = kvec.cast::<u8>().wrapping_add(at as usize);
                // SAFETY: `p` lies in the head or the tail (type invariant), kernel memory
                // valid for `'a`.
                let page = unsafe { bindings::rpcrdma_shim_virt_to_page(p.cast()) };
                Some((NonNull::new(page)?, (p as usize & page_mask) as u32))
            }
        }
    }
}

impl<'a> Iterator for Pages<'a> {
    type Item = (BorrowedPage<'a>, u32, u32);

    fn next(&mut self) -> Option<Self::Item> {
        while self.part < PARTS {
            let (at, len) = self.left[self.part];
            if len == 0 {
                self.part += 1;
                continue;
            }
            let (page, off) = self.locate(at)?;
            let n = len.min(PAGE_SIZE as u32 - off);
            self.left[self.part] = (at + n, len - n);
            // SAFETY: The page holds bytes of the buffer, valid for `'a` (type invariant).
            let page = unsafe { BorrowedPage::from_raw(page.cast()) };
            return Some((page, off, n));
        }
        None
    }
}

impl Pages<'_> {
    /// Calls `f` with each piece of the walk and the bytes walked before it; `EINVAL` if the
    /// walk ends early (a page of the list is missing).
    fn each(self, mut f: impl FnMut(&BorrowedPage<'_>, usize, usize, usize) -> Result) -> Result {
        let mut want: usize = self.left.iter().map(|&(_, len)| len as usize).sum();
        let mut done = 0;
        for (page, off, n) in self {
            f(&page, off as usize, n as usize, done)?;
            done += n as usize;
            want -= n as usize;
        }
        if want == 0 {
            Ok(())
        } else {
            Err(EINVAL)
        }
    }

    /// Copies the walked bytes into `dst`, which must be at least as long as the walk
    /// (`EINVAL` if shorter).
    ///
    /// # Safety
    ///
    /// Nothing writes to the walked bytes during the call.
    pub(super) unsafe fn read(self, dst: &mut [u8]) -> Result {
        let len = dst.len();
        self.each(|page, off, n, done| {
            if done + n > len {
                return Err(EINVAL);
            }
            // SAFETY: `dst` has `n` bytes at `done` (checked above); the caller rules out a
            // concurrent write.
            unsafe { page.read_raw(dst.as_mut_ptr().add(done), off, n) }
        })
    }

    /// Copies `src`, which must be at least as long as the walk (`EINVAL` if shorter), into
    /// the walked bytes.
    ///
    /// # Safety
    ///
    /// Nothing else reads or writes the walked bytes during the call.
    pub(super) unsafe fn write(self, src: &[u8]) -> Result {
        self.each(|page, off, n, done| {
            let s = src.get(done..done + n).ok_or(EINVAL)?;
            // SAFETY: `s` has `n` bytes; the caller rules out concurrent access.
            unsafe { page.write_raw(s.as_ptr(), off, n) }
        })
    }

    /// Zeroes the walked bytes.
    ///
    /// # Safety
    ///
    /// Nothing else reads or writes the walked bytes during the call.
    pub(super) unsafe fn zero(self) -> Result {
        // SAFETY: The caller rules out concurrent access.
        self.each(|page, off, n, _| unsafe { page.fill_zero_raw(off, n) })
    }
}

/// The walker against the planner: the MRs the client's registration loop takes for a chunk
/// (pieces of [`Pages`], packed by [`Mr::map`](crate::rdma::mr::Mr::map)'s rule) and the MRs
/// [`marshal::count_segments`](crate::proto::marshal::count_segments) plans for it, which
/// follows C's `frwr_map`, where the head and the tail are one scatterlist entry each.
#[kernel::macros::kunit_tests(rpcrdma_rs_xdr)]
mod tests {
    use kernel::{
        page::{
            Page,
            PAGE_SIZE, //
        },
        prelude::*,
    };

    use super::{
        Pages,
        XdrParts, //
    };
    use crate::{
        bindings,
        proto::marshal::{
            count_segments,
            Registration,
            Span,
            XdrBuf, //
        },
        rdma::mr::takes,
    };

    /// The MRs the client's registration loop (`register` over `Mr::map`) uses for bytes
    /// `offset..offset + len` of `buf`.
    fn registered(
        buf: XdrParts,
        (mut offset, mut len): (u32, u32),
        depth: u32,
        sg_gaps: bool,
    ) -> Result<u32> {
        let mut mrs = 0;
        while len > 0 {
            // SAFETY: The test's buffers outlive the walk.
            let walk = unsafe { Pages::new(buf, offset, len)? };
            let (mut n, mut end, mut covered) = (0, 0, 0);
            for (_, off, l) in walk {
                if !takes(depth, sg_gaps, n, end, off, l) {
                    break;
                }
                n += 1;
                end = off + l;
                covered += l;
            }
            if n == 0 {
                return Err(EINVAL);
            }
            mrs += 1;
            offset += covered;
            len -= covered;
        }
        Ok(mrs)
    }

    /// The address `off` bytes past the first page boundary in `mem`.
    fn in_page(mem: &mut KVec<u8>, off: usize) -> *mut u8 {
        let p = mem.as_mut_ptr();
        p.wrapping_add((PAGE_SIZE - p as usize % PAGE_SIZE) % PAGE_SIZE + off)
    }

    #[test]
    fn count_segments_agrees_with_the_walker() -> Result {
        let page = PAGE_SIZE as u32;
        let mut head_mem = KVec::from_elem(0u8, 4 * PAGE_SIZE, GFP_KERNEL)?;
        let mut tail_mem = KVec::from_elem(0u8, 3 * PAGE_SIZE, GFP_KERNEL)?;
        let mut pages = KVec::new();
        let mut list = KVec::new();
        for _ in 0..7 {
            let p = Page::alloc_page(GFP_KERNEL)?;
            list.push(p.as_ptr().cast::<bindings::page>(), GFP_KERNEL)?;
            pages.push(p, GFP_KERNEL)?;
        }
        let (mut cases, mut exact) = (0u32, 0u32);
        for h_off in [0, 100, page - 96] {
            for h_len in [1, 100, page - 100, page + 200] {
                for (page_base, page_len) in [0, 512]
                    .into_iter()
                    .flat_map(|b| [0, 1, page, 3 * page - 512, 5 * page].map(|l| (b, l)))
                {
                    for (t_off, t_len) in [0, page - 4]
                        .into_iter()
                        .flat_map(|o| [0, 4, 100].map(|l| (o, l)))
                    {
                        let head = in_page(&mut head_mem, h_off as usize);
                        let tail = in_page(&mut tail_mem, t_off as usize);
                        let buf = XdrParts {
                            head: head.cast(),
                            head_len: h_len,
                            pages: list.as_mut_ptr(),
                            page_base,
                            page_len,
                            tail: tail.cast(),
                            tail_len: t_len,
                        };
                        let xdr = XdrBuf {
                            head_len: h_len,
                            page_base,
                            page_len,
                            tail_len: t_len,
                            tail_page_offset: t_off,
                        };
                        for (depth, sg_gaps, span) in [2, 4, 16].into_iter().flat_map(|d| {
                            [false, true].into_iter().flat_map(move |g| {
                                [Span::Whole, Span::Pages].map(move |s| (d, g, s))
                            })
                        }) {
                            let (range, one_page) = match span {
                                Span::Pages if page_len == 0 => continue,
                                Span::Pages => ((h_len, page_len), true),
                                Span::Whole => (
                                    (0, h_len + page_len + t_len),
                                    h_off + h_len < page && t_off + t_len <= page,
                                ),
                            };
                            let reg = Registration {
                                max_fr_depth: depth,
                                sg_gaps,
                                page_size: page,
                            };
                            let walked = registered(buf, range, depth, sg_gaps)?;
                            let planned =
                                count_segments(&xdr, span, &reg, u32::MAX).map_err(|_| EINVAL)?;
                            cases += 1;
                            // A head or tail across a page boundary, or a head ending at one,
                            // is one entry in C's count and is split (or joined) by the
                            // walker: off by at most one MR each. Otherwise exactly equal.
                            // As registered (no gaps, a depth of 16 or more), never more than
                            // planned: the plan's segment limit holds.
                            if (one_page && walked != planned)
                                || walked.abs_diff(planned) > 2
                                || (!sg_gaps && depth >= 16 && walked > planned)
                            {
                                pr_err!(
                                    "head {h_off}+{h_len} pages {page_base}+{page_len} \
                                     tail {t_off}+{t_len} depth {depth} gaps {sg_gaps} \
                                     {span:?}: walked {walked}, planned {planned}\n"
                                );
                                return Err(EINVAL);
                            }
                            exact += u32::from(walked == planned);
                        }
                    }
                }
            }
        }
        pr_info!("count_segments: {exact} of {cases} chunks exactly as walked\n");
        Ok(())
    }
}
