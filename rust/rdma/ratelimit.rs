// SPDX-License-Identifier: GPL-2.0

//! Rate-limited log messages, for everything a peer can make us print.
//!
//! A peer controls what it sends, and so how often a transport logs that something was wrong
//! with it: a hostile peer must not be able to flood the kernel log. [`RateLimit`] is the
//! kernel's `__ratelimit()` with `DEFAULT_RATELIMIT_INTERVAL` and `DEFAULT_RATELIMIT_BURST`
//! (at most 10 messages in 5 seconds per call site), lock-free so that completion handlers can
//! use it; [`pr_warn_peer!`], [`pr_err_peer!`] and [`pr_info_peer!`] give each call site its own
//! limit, like `pr_warn_ratelimited()`.
//!
//! C header: [`include/linux/ratelimit.h`](srctree/include/linux/ratelimit.h)

use kernel::{
    sync::atomic::{
        Atomic,
        Relaxed, //
    },
    time::msecs_to_jiffies,
};

/// Length of a window, in milliseconds (`DEFAULT_RATELIMIT_INTERVAL`).
const INTERVAL_MS: u32 = 5000;
/// Messages allowed per window (`DEFAULT_RATELIMIT_BURST`).
const BURST: u32 = 10;

/// The state of one call site's limit.
pub(crate) struct RateLimit {
    /// Length of a window, in milliseconds.
    interval_ms: u32,
    /// Messages allowed per window.
    burst: u32,
    /// Start of the current window in jiffies, 0 before the first message.
    begin: Atomic<usize>,
    /// Messages asked for in the current window.
    asked: Atomic<u32>,
    /// Messages suppressed since the last report of them.
    missed: Atomic<u32>,
}

impl RateLimit {
    /// A limit that has let nothing through yet, of the kernel's default window and burst.
    pub(crate) const fn new() -> Self {
        Self::with(INTERVAL_MS, BURST)
    }

    /// A limit of `burst` messages per window of `interval_ms` milliseconds.
    pub(crate) const fn with(interval_ms: u32, burst: u32) -> Self {
        Self {
            interval_ms,
            burst,
            begin: Atomic::new(0),
            asked: Atomic::new(0),
            missed: Atomic::new(0),
        }
    }

    /// Whether a message may be printed now. When a new window opens, the number of messages
    /// suppressed in the previous ones is returned in the second field, to be reported.
    /// Racing callers may let a message or two beyond the burst through, never a flood.
    pub(crate) fn allow(&self) -> (bool, u32) {
        // SAFETY: `jiffies` is always valid to read; it is volatile, as in C.
        let now = unsafe { core::ptr::read_volatile(&raw const kernel::bindings::jiffies) };
        let interval = msecs_to_jiffies(self.interval_ms);
        let begin = self.begin.load(Relaxed);
        let mut missed = 0;
        if (begin == 0 || now.wrapping_sub(begin) >= interval)
            && self.begin.cmpxchg(begin, now.max(1), Relaxed).is_ok()
        {
            self.asked.store(0, Relaxed);
            missed = self.missed.xchg(0, Relaxed);
        }
        if self.asked.fetch_add(1, Relaxed) < self.burst {
            (true, missed)
        } else {
            self.missed.add(1, Relaxed);
            (false, missed)
        }
    }
}

/// Prints with `::kernel::$level!` (`pr_warn`, `pr_err`, `pr_info`) a message that a peer can
/// trigger, at most 10 in 5 seconds from this call site; suppressed messages are counted and
/// reported with the next one. The macros below name the level.
macro_rules! pr_peer {
    ($level:ident, $($arg:tt)*) => {{
        static LIMIT: $crate::rdma::ratelimit::RateLimit =
            $crate::rdma::ratelimit::RateLimit::new();
        let (print, missed) = LIMIT.allow();
        if missed > 0 {
            ::kernel::$level!("{} similar messages suppressed\n", missed);
        }
        if print {
            ::kernel::$level!($($arg)*);
        }
    }};
}

/// Prints a warning that a peer can trigger, at most 10 in 5 seconds from this call site
/// (`pr_warn_ratelimited`); suppressed messages are counted and reported with the next one.
macro_rules! pr_warn_peer {
    ($($arg:tt)*) => {
        $crate::rdma::ratelimit::pr_peer!(pr_warn, $($arg)*)
    };
}

/// As [`pr_warn_peer!`], at the error level (`pr_err_ratelimited`).
macro_rules! pr_err_peer {
    ($($arg:tt)*) => {
        $crate::rdma::ratelimit::pr_peer!(pr_err, $($arg)*)
    };
}

/// As [`pr_warn_peer!`], at the info level (`pr_info_ratelimited`).
macro_rules! pr_info_peer {
    ($($arg:tt)*) => {
        $crate::rdma::ratelimit::pr_peer!(pr_info, $($arg)*)
    };
}

pub(crate) use pr_err_peer;
pub(crate) use pr_info_peer;
pub(crate) use pr_peer;
pub(crate) use pr_warn_peer;
