// SPDX-License-Identifier: GPL-2.0

//! Version 2 message continuation reassembly.
//!
//! With [`F_MORE`] a sender splits one RPC message (or one `RDMA2_CONNPROP` body) over several
//! RPC-over-RDMA messages; the receiver concatenates their payloads (draft Section 6.3.2).
//! [`Reassembly`] is the receiver's bounded state machine for one connection: it is fed each
//! received message's xid, header type, flags and payload length as a [`Fragment`], checks the
//! sequence rules and the caller's [`Limits`], and answers with a [`Placement`] saying where the
//! payload goes in the caller's reassembly buffer and whether the message is now complete. It
//! owns no buffer and never allocates: it only tracks a few counters.
//!
//! # Rules and choices
//!
//! - Every message of a sequence must carry the sequence's `rdma_xid` and `rdma_htype`, else
//!   `RDMA2_ERR_INVAL_FLAG` (Section 6.3.2). Since [`v2::F_RESPONSE`] qualifies the xid, a
//!   change of that flag inside a sequence is the same error.
//! - The draft allows no other message in the middle of a sequence (payload streams of
//!   different RPC messages must not be interleaved), so any message with another xid or type,
//!   a credit refresh included, breaks the sequence. The sequence in progress and the offending
//!   message are both discarded, and the machine is ready for a new sequence.
//! - [`F_MORE`] on a header type other than `RDMA2_MSG` or `RDMA2_CONNPROP`, or reserved flag
//!   bits, are `RDMA2_ERR_INVAL_FLAG` here too, so the machine is safe to drive directly.
//! - The draft sets no limit on the number of messages in a sequence; exceeding the caller's
//!   [`Limits`] has no error code of its own and is reported as `RDMA2_ERR_SYSTEM`.
//! - Zero-length fragments are allowed: the sender "MAY split the RPC message payload on any
//!   convenient boundary".

use super::v2::{
    self,
    F_KNOWN,
    F_MORE,
    F_RESPONSE, //
};

/// Caller limits on one reassembled message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Maximum number of messages in one sequence (a message without continuation counts 1).
    pub max_fragments: u32,
    /// Maximum total payload length in bytes (the caller's reassembly buffer).
    pub max_len: usize,
}

/// One received message, as far as continuation is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fragment {
    /// `rdma_xid`.
    pub xid: u32,
    /// `rdma_htype`.
    pub htype: u32,
    /// `rdma_flags`.
    pub flags: u32,
    /// Length of this message's payload (bytes after its transport header).
    pub len: usize,
}

/// Where a fragment's payload goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Offset in the reassembly buffer at which to copy the payload.
    pub offset: usize,
    /// Length of the payload (the fragment's `len`).
    pub len: usize,
    /// Zero-based index of the fragment in its sequence.
    pub index: u32,
    /// Whether the message is now complete; its length is then `offset + len`.
    pub complete: bool,
}

impl Placement {
    /// End of this fragment in the reassembly buffer: the total length once complete.
    pub const fn end(&self) -> usize {
        // INVARIANT: `offset + len <= Limits::max_len` was checked when placing it.
        self.offset.saturating_add(self.len)
    }
}

/// Errors of reassembly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// A message whose xid, header type or [`F_RESPONSE`] differs from the sequence's.
    Mismatch {
        /// xid of the sequence in progress.
        xid: u32,
        /// Header type of the sequence in progress.
        htype: u32,
        /// The offending message.
        got: Fragment,
    },
    /// [`F_MORE`] on a header type that cannot be continued.
    MoreNotAllowed(u32),
    /// Reserved bits set in `rdma_flags`.
    ReservedFlags(u32),
    /// More fragments than [`Limits::max_fragments`].
    TooManyFragments {
        /// The limit.
        max: u32,
    },
    /// More payload than [`Limits::max_len`].
    TooLong {
        /// The limit.
        max: usize,
    },
}

impl Error {
    /// The `RDMA2_ERROR` code a responder reports for this error.
    pub const fn code(&self) -> u32 {
        match self {
            Error::Mismatch { .. } | Error::MoreNotAllowed(_) | Error::ReservedFlags(_) => {
                v2::ERR_INVAL_FLAG
            }
            Error::TooManyFragments { .. } | Error::TooLong { .. } => v2::ERR_SYSTEM,
        }
    }
}

/// A sequence in progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Sequence {
    xid: u32,
    htype: u32,
    response: bool,
    fragments: u32,
    len: usize,
}

/// Reassembly state for the receive side of one connection.
///
/// # Invariants
///
/// When a sequence is in progress, `1 <= fragments < limits.max_fragments` and
/// `len <= limits.max_len`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reassembly {
    limits: Limits,
    seq: Option<Sequence>,
}

impl Reassembly {
    /// An idle machine enforcing `limits`.
    pub const fn new(limits: Limits) -> Self {
        Reassembly { limits, seq: None }
    }

    /// Whether a sequence is in progress: the next message continues it (decode it with
    /// [`v2::Header::decode_continued`]).
    pub const fn in_progress(&self) -> bool {
        self.seq.is_some()
    }

    /// Bytes of the sequence in progress received so far.
    pub const fn received(&self) -> usize {
        match self.seq {
            Some(s) => s.len,
            None => 0,
        }
    }

    /// The XID of the sequence in progress, if any.
    pub const fn xid(&self) -> Option<u32> {
        match self.seq {
            Some(s) => Some(s.xid),
            None => None,
        }
    }

    /// Abandons any sequence in progress (e.g. on disconnect).
    pub fn reset(&mut self) {
        self.seq = None;
    }

    /// Accounts for one received message and says where its payload goes.
    ///
    /// On error the sequence in progress, if any, is abandoned along with this message. A
    /// fragment with [`F_MORE`] that would need more than [`Limits::max_fragments`] messages is
    /// refused when it arrives, not when the excess one does.
    pub fn feed(&mut self, f: Fragment) -> Result<Placement, Error> {
        let r = self.place(f);
        if r.is_err() {
            self.seq = None;
        }
        r
    }

    fn place(&mut self, f: Fragment) -> Result<Placement, Error> {
        if f.flags & !F_KNOWN != 0 {
            return Err(Error::ReservedFlags(f.flags));
        }
        let more = f.flags & F_MORE != 0;
        let response = f.flags & F_RESPONSE != 0;
        if more && f.htype != v2::MSG && f.htype != v2::CONNPROP {
            return Err(Error::MoreNotAllowed(f.htype));
        }
        let (fragments, offset) = match self.seq {
            Some(s) => {
                if s.xid != f.xid || s.htype != f.htype || s.response != response {
                    return Err(Error::Mismatch {
                        xid: s.xid,
                        htype: s.htype,
                        got: f,
                    });
                }
                (s.fragments, s.len)
            }
            None => (0, 0),
        };
        let max = self.limits.max_fragments;
        let count = fragments
            .checked_add(1)
            .filter(|&c| c <= max)
            .ok_or(Error::TooManyFragments { max })?;
        let max = self.limits.max_len;
        let end = offset
            .checked_add(f.len)
            .filter(|&e| e <= max)
            .ok_or(Error::TooLong { max })?;
        // `count - 1` cannot underflow: `count >= 1`.
        let index = count.saturating_sub(1);
        if more {
            if count >= self.limits.max_fragments {
                // A further fragment is announced but could not be accepted.
                return Err(Error::TooManyFragments {
                    max: self.limits.max_fragments,
                });
            }
            self.seq = Some(Sequence {
                xid: f.xid,
                htype: f.htype,
                response,
                fragments: count,
                len: end,
            });
        } else {
            self.seq = None;
        }
        Ok(Placement {
            offset,
            len: f.len,
            index,
            complete: !more,
        })
    }
}

/// How a sender splits one RPC message over continued messages (Section 6.3.2): every
/// message but the last carries [`Split::per_message`] payload bytes after a header of the
/// length given to [`split`], the last one carries the rest after its own header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Split {
    /// Messages in the sequence, the last one included (1: no continuation).
    pub messages: u32,
    /// Payload bytes of each message but the last.
    pub per_message: u32,
    /// Total payload bytes.
    pub len: u32,
}

impl Split {
    /// Offset and length of the payload of message `index` (zero-based); `None` past the last.
    pub fn piece(&self, index: u32) -> Option<(u32, u32)> {
        if index >= self.messages {
            return None;
        }
        // At most `len`: `split` made `(messages - 1) * per_message` no larger than `len`
        // plus one message's worth, and the `min`s below clamp the rest.
        let off = index.saturating_mul(self.per_message).min(self.len);
        let len = if index + 1 == self.messages {
            self.len - off
        } else {
            self.per_message.min(self.len - off)
        };
        Some((off, len))
    }
}

/// Splits `len` payload bytes over messages of at most `inline` bytes: the messages with
/// [`F_MORE`] have headers of `more_hdr` bytes and carry `inline - more_hdr` bytes each, the
/// last one has a header of `final_hdr` bytes and carries what is left. `None` if a message
/// with [`F_MORE`] could carry nothing, or the final header alone exceeds `inline`.
pub fn split(len: u32, inline: u32, more_hdr: u32, final_hdr: u32) -> Option<Split> {
    let last = inline.checked_sub(final_hdr)?;
    if len <= last {
        return Some(Split {
            messages: 1,
            per_message: 0,
            len,
        });
    }
    let per_message = inline.checked_sub(more_hdr).filter(|&p| p > 0)?;
    // The messages with F_MORE carry everything but what the last one can.
    let more = (len - last).div_ceil(per_message);
    Some(Split {
        messages: more.checked_add(1)?,
        per_message,
        len,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIM: Limits = Limits {
        max_fragments: 3,
        max_len: 100,
    };

    fn frag(xid: u32, htype: u32, flags: u32, len: usize) -> Fragment {
        Fragment {
            xid,
            htype,
            flags,
            len,
        }
    }

    #[test]
    fn single_message() {
        let mut r = Reassembly::new(LIM);
        let p = r.feed(frag(1, v2::MSG, 0, 40)).unwrap();
        assert_eq!(
            p,
            Placement {
                offset: 0,
                len: 40,
                index: 0,
                complete: true
            }
        );
        assert_eq!(p.end(), 40);
        assert!(!r.in_progress());
        // NOMSG and ERROR pass through too.
        assert!(r.feed(frag(0, v2::NOMSG, 0, 0)).unwrap().complete);
        assert!(r.feed(frag(1, v2::ERROR, F_RESPONSE, 0)).unwrap().complete);
    }

    #[test]
    fn three_fragments() {
        let mut r = Reassembly::new(LIM);
        let a = r.feed(frag(9, v2::MSG, F_MORE, 30)).unwrap();
        assert_eq!((a.offset, a.index, a.complete), (0, 0, false));
        assert!(r.in_progress());
        let b = r.feed(frag(9, v2::MSG, F_MORE, 0)).unwrap();
        assert_eq!((b.offset, b.index, b.complete), (30, 1, false));
        assert_eq!(r.received(), 30);
        let c = r.feed(frag(9, v2::MSG, 0, 70)).unwrap();
        assert_eq!((c.offset, c.index, c.complete, c.end()), (30, 2, true, 100));
        assert!(!r.in_progress());
        assert_eq!(r.received(), 0);
    }

    #[test]
    fn connprop_may_continue() {
        let mut r = Reassembly::new(LIM);
        r.feed(frag(0, v2::CONNPROP, F_MORE, 12)).unwrap();
        let p = r.feed(frag(0, v2::CONNPROP, 0, 9)).unwrap();
        assert_eq!((p.offset, p.complete), (12, true));
    }

    #[test]
    fn mismatches_are_inval_flag() {
        for bad in [
            frag(8, v2::MSG, 0, 1),
            frag(9, v2::CONNPROP, 0, 1),
            frag(9, v2::MSG, F_RESPONSE, 1),
            frag(0, v2::NOMSG, 0, 0),
        ] {
            let mut r = Reassembly::new(LIM);
            r.feed(frag(9, v2::MSG, F_MORE, 10)).unwrap();
            let e = r.feed(bad).unwrap_err();
            assert!(matches!(
                e,
                Error::Mismatch {
                    xid: 9,
                    htype: 0,
                    ..
                }
            ));
            assert_eq!(e.code(), v2::ERR_INVAL_FLAG);
            assert!(!r.in_progress());
            // Ready for a fresh message.
            assert_eq!(r.feed(frag(3, v2::MSG, 0, 5)).unwrap().offset, 0);
        }
    }

    #[test]
    fn flag_errors() {
        let mut r = Reassembly::new(LIM);
        for ht in [v2::NOMSG, v2::ERROR, 7] {
            let e = r.feed(frag(1, ht, F_MORE, 0)).unwrap_err();
            assert_eq!(e, Error::MoreNotAllowed(ht));
            assert_eq!(e.code(), v2::ERR_INVAL_FLAG);
        }
        let e = r.feed(frag(1, v2::MSG, 4, 0)).unwrap_err();
        assert_eq!((e, e.code()), (Error::ReservedFlags(4), v2::ERR_INVAL_FLAG));
    }

    #[test]
    fn limits() {
        let mut r = Reassembly::new(LIM);
        r.feed(frag(1, v2::MSG, F_MORE, 1)).unwrap();
        r.feed(frag(1, v2::MSG, F_MORE, 1)).unwrap();
        // A third fragment announcing a fourth is refused at once.
        let e = r.feed(frag(1, v2::MSG, F_MORE, 1)).unwrap_err();
        assert_eq!(
            (e, e.code()),
            (Error::TooManyFragments { max: 3 }, v2::ERR_SYSTEM)
        );
        assert!(!r.in_progress());
        // Exactly max_fragments fragments and max_len bytes is fine.
        r.feed(frag(1, v2::MSG, F_MORE, 1)).unwrap();
        r.feed(frag(1, v2::MSG, F_MORE, 1)).unwrap();
        assert!(r.feed(frag(1, v2::MSG, 0, 98)).unwrap().complete);
        // Length.
        r.feed(frag(1, v2::MSG, F_MORE, 60)).unwrap();
        let e = r.feed(frag(1, v2::MSG, 0, 41)).unwrap_err();
        assert_eq!((e, e.code()), (Error::TooLong { max: 100 }, v2::ERR_SYSTEM));
        assert_eq!(
            r.feed(frag(1, v2::MSG, 0, usize::MAX)),
            Err(Error::TooLong { max: 100 })
        );
        assert_eq!(
            Reassembly::new(Limits {
                max_fragments: 0,
                max_len: 1
            })
            .feed(frag(1, v2::MSG, 0, 0)),
            Err(Error::TooManyFragments { max: 0 })
        );
        let e = Error::TooManyFragments { max: 2 };
        assert_eq!(e.code(), v2::ERR_SYSTEM);
        let mut r = Reassembly::new(LIM);
        r.feed(frag(1, v2::MSG, F_MORE, 1)).unwrap();
        r.reset();
        assert!(!r.in_progress());
    }

    #[test]
    fn split_covers_the_message() {
        // One message when the final header leaves room.
        let one = split(4060, 4096, 36, 36).unwrap();
        assert_eq!((one.messages, one.piece(0)), (1, Some((0, 4060))));
        assert_eq!(one.piece(1), None);
        // One byte more: two messages, the first full.
        let two = split(4061, 4096, 36, 36).unwrap();
        assert_eq!(two.messages, 2);
        assert_eq!(two.piece(0), Some((0, 4060)));
        assert_eq!(two.piece(1), Some((4060, 1)));
        // A final header longer than the others: the last carries less.
        let s = split(10_000, 1000, 100, 300).unwrap();
        assert_eq!(s.messages, 12);
        assert_eq!(s.piece(11), Some((9900, 100)));
        // Nothing fits.
        assert_eq!(split(200, 100, 100, 0), None);
        assert_eq!(split(10, 100, 0, 101), None);
        assert_eq!(split(0, 100, 100, 100).map(|s| s.messages), Some(1));
        // Every split tiles the message, within the sizes given.
        for len in (0..20_000u32).step_by(97) {
            for (inline, more, fin) in [(1024, 36, 36), (4096, 36, 120), (200, 199, 0), (64, 8, 64)]
            {
                let Some(s) = split(len, inline, more, fin) else {
                    continue;
                };
                let mut at = 0;
                for i in 0..s.messages {
                    let (off, n) = s.piece(i).unwrap();
                    assert_eq!(off, at);
                    let cap = if i + 1 == s.messages {
                        inline - fin
                    } else {
                        inline - more
                    };
                    assert!(
                        n <= cap,
                        "{len} {inline} {more} {fin}: piece {i} {n} > {cap}"
                    );
                    at += n;
                }
                assert_eq!(at, len);
            }
        }
    }
}
