// SPDX-License-Identifier: GPL-2.0

//! Growth of the buffers that reassemble continued version-2 messages (draft Section 6.3), for
//! the client's Replies and the server's Calls.
//!
//! The peer decides how many bytes each message of a continued one carries, so it decides how
//! such a buffer grows: a vector's doubling alone would take one just past the reassembly limit
//! to twice that (an allocation of the next order, kept for the connection's life as a spare).
//! [`reserve`] doubles too, but to no more than the limit unless more is needed, and its callers
//! pass `__GFP_NOWARN`: a failure is the peer's doing, dropped and counted, not a warning.
#![forbid(unsafe_code)]

use kernel::{
    alloc::Flags,
    prelude::*, //
};

/// Makes room for `more` bytes at the end of `buf`, growing it as a vector does but to no
/// more than `max_len` (the reassembly's limit) unless it needs more.
pub(crate) fn reserve(buf: &mut KVec<u8>, more: usize, max_len: usize, gfp: Flags) -> Result {
    let need = buf.len().checked_add(more).ok_or(ENOMEM)?;
    if need <= buf.capacity() {
        return Ok(());
    }
    let cap = buf.capacity().saturating_mul(2).min(max_len).max(need);
    let mut grown = KVec::with_capacity(cap, gfp)?;
    // Within the capacity just allocated: no allocation.
    grown.extend_from_slice(buf, gfp)?;
    *buf = grown;
    Ok(())
}

/// Appends `payload` to `buf`, growing it as [`reserve`] does.
pub(crate) fn append(buf: &mut KVec<u8>, payload: &[u8], max_len: usize, gfp: Flags) -> Result {
    reserve(buf, payload.len(), max_len, gfp)?;
    // Within the capacity reserved: no allocation.
    buf.extend_from_slice(payload, gfp)?;
    Ok(())
}

/// The growth of a reassembly buffer against its limit, as a peer can drive it.
#[kernel::macros::kunit_tests(rpcrdma_rs_reasm)]
mod tests {
    use kernel::prelude::*;

    use super::append;

    /// The flags of the test's allocations (the callers' `__GFP_NOWARN` included).
    fn gfp() -> kernel::alloc::Flags {
        GFP_KERNEL | __GFP_NOWARN
    }

    #[test]
    fn growth_stops_at_the_limit() -> Result {
        const MAX: usize = 256 * 1024;
        // Messages that take a vector's doubling just past the limit: 129 KiB, then 1 KiB
        // pieces up to the limit itself (a plain `extend_from_slice` grows to 258 KiB).
        let first = KVec::from_elem(0x5au8, 129 * 1024, GFP_KERNEL)?;
        let piece = KVec::from_elem(0xa5u8, 1024, GFP_KERNEL)?;
        let mut buf = KVec::new();
        append(&mut buf, &first, MAX, gfp())?;
        assert_eq!(buf.capacity(), first.len());
        while buf.len() < MAX {
            append(&mut buf, &piece, MAX, gfp())?;
            assert!(buf.capacity() <= MAX);
        }
        assert_eq!(buf.len(), MAX);
        assert_eq!(buf.capacity(), MAX);
        // The bytes, in order.
        assert!(buf[..first.len()].iter().all(|&b| b == 0x5a));
        assert!(buf[first.len()..].iter().all(|&b| b == 0xa5));
        // Past the limit (the caller's bounds refuse this first): exactly what is needed.
        append(&mut buf, &piece, MAX, gfp())?;
        assert_eq!(buf.capacity(), MAX + piece.len());
        Ok(())
    }
}
