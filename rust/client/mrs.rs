// SPDX-License-Identifier: GPL-2.0

//! The memory regions of a connection, and which request holds which.
//!
//! A [`Reg`] is one MR of the connection's pool with what it was offered to the server as. It
//! is always in exactly one [`MrList`]: the pool's free stack, the list of the request that
//! registered it (kept in [`Reqs`] under its [`RpcRqst::id`](crate::sunrpc::xprt::RpcRqst::id)), a
//! sender's hands while it maps and posts, or the LOCAL_INV chain invalidating it. Moving an
//! MR between lists moves one pointer; nothing ever scans the pool for the MRs of a request.

#![forbid(unsafe_code)]

use kernel::{
    alloc::Flags,
    prelude::*, //
};

use crate::{
    proto::{
        v1::Segment,
        v2msg::Sent, //
    },
    rdma::mr::{
        Access,
        Mr, //
    },
    sunrpc::xprt::{
        Buf,
        RpcRqst, //
    },
};

/// What a registered memory region was offered to the server as.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    /// A segment of the call's Read chunk.
    Read,
    /// A segment of the Write chunk.
    Write,
    /// A segment of the Reply chunk.
    Reply,
}

/// A memory region of the pool.
pub(super) struct Reg {
    /// The MR; mapped while its request holds it.
    pub(super) mr: Mr,
    /// While registered: what it was offered as, its index in that chunk, and the segment as
    /// advertised (what the server's echo is checked against).
    pub(super) offer: (Role, usize, Segment),
    next: Option<KBox<Reg>>,
}

impl Reg {
    /// A free entry for `mr`.
    pub(super) fn new(mr: Mr, flags: Flags) -> Result<KBox<Self>> {
        Ok(KBox::new(
            Self {
                mr,
                offer: (Role::Read, 0, Segment::default()),
                next: None,
            },
            flags,
        )?)
    }

    /// Maps the start of bytes `offset..offset + len` of `buf` of `rqst` into the MR, as far
    /// as it reaches and in at most `depth` pieces: the call for the server to RDMA Read, the
    /// reply buffer for it to RDMA Write. Returns the bytes covered and the segment to
    /// advertise. The registration must be ended before `rqst`'s buffers are released
    /// (`buf_free` does it).
    pub(super) fn map(
        &mut self,
        rqst: &RpcRqst,
        buf: Buf,
        offset: u32,
        len: u32,
        depth: u32,
    ) -> Result<(u32, Segment)> {
        let access = match buf {
            Buf::Call => Access::RemoteRead,
            Buf::Reply => Access::RemoteWrite,
        };
        let pieces = rqst.pages(buf, offset, len)?.take(depth as usize);
        let (covered, region) = self.mr.map(pieces, access)?;
        Ok((
            covered,
            Segment {
                handle: region.rkey,
                length: region.length,
                offset: region.iova,
            },
        ))
    }
}

/// Drops `link`, which is empty unless a list's invariant broke, without calling the drop glue
/// of `Option<KBox<Reg>>` when it is empty: that glue is recursive (an entry owns the next), so
/// it is never inlined, and a plain assignment over a link called it on every push and pop
/// (0.22-0.25% of a client guest's samples on 4k random reads, as much as building a call).
fn discard(link: Option<KBox<Reg>>) {
    if let Some(r) = link {
        drop(r);
    } else {
        core::mem::forget(link);
    }
}

/// A singly linked list of memory regions: a stack (last in, first out).
#[derive(Default)]
pub(super) struct MrList {
    head: Option<KBox<Reg>>,
    len: usize,
}

impl MrList {
    /// The number of MRs in the list.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Whether the list is empty.
    pub(super) fn is_empty(&self) -> bool {
        self.head.is_none()
    }

    /// Pushes `r` on the list.
    pub(super) fn push(&mut self, mut r: KBox<Reg>) {
        // `r` is in no list, so it has no successor, and `head` is empty once taken: neither
        // replaced link holds an entry.
        discard(core::mem::replace(&mut r.next, self.head.take()));
        discard(self.head.replace(r));
        self.len += 1;
    }

    /// Pops the MR pushed last.
    pub(super) fn pop(&mut self) -> Option<KBox<Reg>> {
        let mut r = self.head.take()?;
        discard(core::mem::replace(&mut self.head, r.next.take()));
        self.len -= 1;
        Some(r)
    }

    /// Moves every MR of `other` onto this list.
    pub(super) fn append(&mut self, other: &mut MrList) {
        while let Some(r) = other.pop() {
            self.push(r);
        }
    }

    /// Takes the whole list, leaving this one empty.
    pub(super) fn take(&mut self) -> MrList {
        core::mem::take(self)
    }

    /// Removes and returns the first MR for which `f` holds.
    pub(super) fn remove_if(&mut self, mut f: impl FnMut(&Reg) -> bool) -> Option<KBox<Reg>> {
        let mut rest = MrList::default();
        let mut found = None;
        while let Some(r) = self.pop() {
            if found.is_none() && f(&r) {
                found = Some(r);
                break;
            }
            rest.push(r);
        }
        // Back in their order.
        self.append(&mut rest);
        found
    }

    /// The MRs, most recently pushed first.
    pub(super) fn iter(&self) -> Iter<'_> {
        Iter {
            next: self.head.as_deref(),
        }
    }

    /// The MRs themselves, mutably.
    pub(super) fn mrs_mut(&mut self) -> impl Iterator<Item = &mut Mr> {
        let mut cur = self.head.as_deref_mut();
        core::iter::from_fn(move || {
            let r = cur.take()?;
            cur = r.next.as_deref_mut();
            Some(&mut r.mr)
        })
    }

    /// The MRs, mutably.
    pub(super) fn for_each_mut(&mut self, mut f: impl FnMut(&mut Reg)) {
        let mut cur = self.head.as_deref_mut();
        while let Some(r) = cur {
            f(r);
            cur = r.next.as_deref_mut();
        }
    }

    /// Ends the DMA mapping of every MR of the list (their registrations must be over).
    pub(super) fn unmap(&mut self) {
        self.for_each_mut(|r| r.mr.unmap());
    }
}

impl Drop for MrList {
    fn drop(&mut self) {
        // Iteratively: the default drop of a long chain of boxes would recurse once per MR.
        while self.pop().is_some() {}
    }
}

/// An iterator over an [`MrList`].
pub(super) struct Iter<'a> {
    next: Option<&'a Reg>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a Reg;

    fn next(&mut self) -> Option<&'a Reg> {
        let r = self.next?;
        self.next = r.next.as_deref();
        Some(r)
    }
}

/// Where the MRs of a request are.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Stage {
    /// Registered and advertised (or being registered by the sender): a reply or `buf_free`
    /// invalidates them.
    Registered,
    /// Their LOCAL_INV chain could not be posted: still registered with the server, ended only
    /// by the drain of the closing connection.
    Stuck,
    /// A reply was taken for the request, and its MRs went to be invalidated (the LOCAL_INV
    /// completion places the reply and completes the RPC). Until the request is sent again or
    /// released, another reply with its XID (a duplicate from the server) is dropped: it
    /// would otherwise be placed and complete the RPC a second time.
    Replied,
}

/// The MRs one request holds.
pub(super) struct Req<P> {
    /// The request's [`RpcRqst::id`](crate::sunrpc::xprt::RpcRqst::id); 0 for a free table entry.
    pub(super) id: usize,
    /// Its MRs.
    pub(super) mrs: MrList,
    /// Their stage.
    pub(super) stage: Stage,
    /// The sender is mapping and posting the request's MRs outside the lock; they are added
    /// to [`Req::mrs`] once it is done.
    pub(super) posting: bool,
    /// What arrived for the request while [`Req::posting`] (its reply), for the sender.
    pub(super) pending: Option<P>,
    /// How the call was marshaled, for the retries of `RDMA2_ERROR`.
    pub(super) sent: Option<Sent>,
}

impl<P> Req<P> {
    fn empty() -> Self {
        Self {
            id: 0,
            mrs: MrList::default(),
            stage: Stage::Registered,
            posting: false,
            pending: None,
            sent: None,
        }
    }
}

/// The requests holding MRs, by id: an open-addressing hash table (linear probing, deletion by
/// backward shift) with room for twice the requests that can exist, so that probes stay short.
/// Preallocated: inserting never allocates.
pub(super) struct Reqs<P> {
    table: KVec<Req<P>>,
    /// `table.len() - 1` (the length is a power of two).
    mask: usize,
    /// `64 - log2(table.len())`, for Fibonacci hashing.
    shift: u32,
    used: usize,
}

impl<P> Reqs<P> {
    /// A table for up to `n` requests.
    pub(super) fn new(n: usize, flags: Flags) -> Result<Self> {
        let size = n
            .max(1)
            .checked_mul(2)
            .and_then(usize::checked_next_power_of_two)
            .ok_or(EINVAL)?;
        let mut table = KVec::with_capacity(size, flags)?;
        for _ in 0..size {
            table.push(Req::empty(), flags)?;
        }
        Ok(Self {
            table,
            mask: size - 1,
            shift: u64::BITS - size.trailing_zeros(),
            used: 0,
        })
    }

    fn home(&self, id: usize) -> usize {
        // Fibonacci hashing of the request's address: its high bits.
        const K: u64 = 0x9e37_79b9_7f4a_7c15;
        // The shift is below 64: the table has at least two entries.
        (((id as u64).wrapping_mul(K) >> self.shift) as usize) & self.mask
    }

    fn index(&self, id: usize) -> Option<usize> {
        if id == 0 {
            return None;
        }
        let mut i = self.home(id);
        for _ in 0..self.table.len() {
            match self.table[i].id {
                0 => return None,
                x if x == id => return Some(i),
                _ => i = (i + 1) & self.mask,
            }
        }
        None
    }

    /// The entry of request `id`, if it holds MRs.
    pub(super) fn get_mut(&mut self, id: usize) -> Option<&mut Req<P>> {
        let i = self.index(id)?;
        Some(&mut self.table[i])
    }

    /// The entry of request `id`, created (empty, [`Stage::Registered`]) if there is none;
    /// `None` if the table is full (more requests than it was made for).
    pub(super) fn entry(&mut self, id: usize) -> Option<&mut Req<P>> {
        if id == 0 {
            return None;
        }
        if let Some(i) = self.index(id) {
            return Some(&mut self.table[i]);
        }
        // Keep one entry free, so that every probe ends.
        if self.used + 1 >= self.table.len() {
            return None;
        }
        let mut i = self.home(id);
        while self.table[i].id != 0 {
            i = (i + 1) & self.mask;
        }
        self.used += 1;
        let e = &mut self.table[i];
        e.id = id;
        e.stage = Stage::Registered;
        e.posting = false;
        e.sent = None;
        Some(e)
    }

    /// Removes the entry of request `id` and returns its MRs (empty if it had none).
    pub(super) fn remove(&mut self, id: usize) -> MrList {
        match self.index(id) {
            Some(i) => self.remove_at(i),
            None => MrList::default(),
        }
    }

    /// Removes the entry of request `id` if `f` holds for it, and returns its MRs; one lookup.
    pub(super) fn remove_if(
        &mut self,
        id: usize,
        f: impl FnOnce(&Req<P>) -> bool,
    ) -> Option<MrList> {
        let i = self.index(id)?;
        f(&self.table[i]).then(|| self.remove_at(i))
    }

    /// Removes the entry at index `i` of the table, which is in use, and returns its MRs.
    fn remove_at(&mut self, mut i: usize) -> MrList {
        let mrs = self.table[i].mrs.take();
        self.table[i].id = 0;
        self.table[i].pending = None;
        self.used -= 1;
        // Backward shift: move up every later entry of the run that may live at `i`.
        let mut j = i;
        loop {
            j = (j + 1) & self.mask;
            let jid = self.table[j].id;
            if jid == 0 {
                break;
            }
            let h = self.home(jid);
            // Entry `j` may move to `i` unless its home lies cyclically in `(i, j]`.
            let stays = if i <= j {
                i < h && h <= j
            } else {
                i < h || h <= j
            };
            if !stays {
                self.table.swap(i, j);
                i = j;
            }
        }
        mrs
    }

    /// Takes the MRs of every request, emptying the table.
    pub(super) fn drain(&mut self, into: &mut MrList) {
        for e in self.table.iter_mut() {
            into.append(&mut e.mrs);
            e.id = 0;
            e.posting = false;
            e.pending = None;
        }
        self.used = 0;
    }
}
