// SPDX-License-Identifier: GPL-2.0

//! Credit accounting for requesters and responders.
//!
//! RPC-over-RDMA version 1 flow control (RFC 8166, section 3.3.1): every message carries
//! `rdma_credit`. In a call it is the number of credits the requester asks for; in a reply it is
//! the number the responder grants, i.e. how many calls the requester may have outstanding,
//! each needing a posted Receive at the responder.
//!
//! The requester side mirrors `rpcrdma_reply_handler()` and `rpcrdma_update_cwnd()`: the grant
//! is untrusted, so it is clamped to `1..=max_requests` before use, and the RPC congestion
//! window is `credits << RPC_CWNDSHIFT`. The responder side is a grant policy.

/// `RPC_CWNDSHIFT`: the RPC client's congestion window is in units of `1 << CWNDSHIFT` per
/// request.
pub const CWNDSHIFT: u32 = 8;

/// `RPC_CWNDSCALE`: congestion window of one request.
pub const CWNDSCALE: u32 = 1 << CWNDSHIFT;

/// Clamps a received credit grant to `1..=max_requests`.
///
/// Zero is raised to one so the requester cannot deadlock ("don't deadlock" in
/// `rpcrdma_reply_handler()`); anything above what we provisioned (`re_max_requests`) is cut
/// down to it. If `max_requests` is zero (a misconfiguration) the result is still one.
pub fn sanitize_grant(granted: u32, max_requests: u32) -> u32 {
    granted.min(max_requests).max(1)
}

/// Congestion window for `credits` outstanding requests (`credits << RPC_CWNDSHIFT`),
/// saturating instead of wrapping for absurd credit counts.
pub fn cwnd(credits: u32) -> u32 {
    credits.saturating_mul(CWNDSCALE)
}

/// Requester-side credit state (`rb_credits` and `re_max_requests`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Requester {
    credits: u32,
    max_requests: u32,
}

impl Requester {
    /// New state for a connection provisioned for `max_requests` outstanding calls.
    ///
    /// Starts with one credit, like `rpcrdma_reset_cwnd()` on connect.
    pub fn new(max_requests: u32) -> Self {
        Self {
            credits: 1,
            max_requests: max_requests.max(1),
        }
    }

    /// The `rdma_credit` value to put in calls: the number of requests provisioned
    /// (`rb_max_requests`).
    pub fn requested(&self) -> u32 {
        self.max_requests
    }

    /// Credits currently granted (`rb_credits`), always in `1..=max_requests`.
    pub fn credits(&self) -> u32 {
        self.credits
    }

    /// Current congestion window (`xprt->cwnd`).
    pub fn cwnd(&self) -> u32 {
        cwnd(self.credits)
    }

    /// Takes the grant from a reply whose header passed the version check and matched a
    /// pending call. Returns the new credit count if it changed (the caller then updates the
    /// RPC congestion window, as `rpcrdma_update_cwnd()` does), `None` otherwise.
    ///
    /// Replies that are short or carry a wrong version must not be passed here: C ignores
    /// their grant and keeps `rb_credits`. Note that C also ignores the grant of a reply whose
    /// xid matches no pending call.
    pub fn update(&mut self, granted: u32) -> Option<u32> {
        let credits = sanitize_grant(granted, self.max_requests);
        if credits == self.credits {
            return None;
        }
        self.credits = credits;
        Some(credits)
    }

    /// Back to one credit, as on (re)connect (`rpcrdma_reset_cwnd()`).
    pub fn reset(&mut self) {
        self.credits = 1;
    }

    /// Receives to keep posted after a reply: one per credit plus two per backchannel slot
    /// (`rpcrdma_post_recvs(r_xprt, credits + (rb_bc_srv_max_requests << 1))`).
    pub fn receives_needed(&self, bc_max_requests: u32) -> u32 {
        self.credits
            .saturating_add(bc_max_requests.saturating_mul(2))
    }
}

/// Receives a requester keeps posted when it re-posts each one once it is done with it: one per
/// request it provisioned plus two per backchannel slot, i.e. [`Requester::receives_needed`]
/// at the full grant (C's `credits + (rb_bc_srv_max_requests << 1)`). A backward Call holds its
/// Receive until the callback service frees the request, so up to `bc_max_requests` of them
/// are out of the queue at once and the rest still covers every forward credit.
pub fn receives_provisioned(max_requests: u32, bc_max_requests: u32) -> u32 {
    let mut r = Requester::new(max_requests);
    r.update(max_requests);
    r.receives_needed(bc_max_requests)
}

/// Responder grant policy.
///
/// The C server always grants `sc_max_requests`, the number of Receives it keeps posted
/// (`svc_rdma_post_recvs()` posts that many and `svc_rdma_wc_receive()` refills below it). We
/// grant what is actually posted, so a requester never has more calls in flight than there
/// are Receives to catch them, even while the receive queue is being refilled:
///
/// - never more than `max_requests` (the configured maximum, `sc_max_requests`);
/// - never more than `posted_receives`;
/// - never zero, so the requester can always make progress (RFC 8166 section 3.3.1 requires
///   a grant of at least one), even if that one call may briefly wait for a Receive.
pub fn grant(posted_receives: u32, max_requests: u32) -> u32 {
    posted_receives.min(max_requests).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_like_reply_handler() {
        assert_eq!(sanitize_grant(0, 128), 1);
        assert_eq!(sanitize_grant(1, 128), 1);
        assert_eq!(sanitize_grant(64, 128), 64);
        assert_eq!(sanitize_grant(128, 128), 128);
        assert_eq!(sanitize_grant(129, 128), 128);
        assert_eq!(sanitize_grant(u32::MAX, 128), 128);
        assert_eq!(sanitize_grant(5, 0), 1);
    }

    #[test]
    fn cwnd_scaling() {
        assert_eq!(CWNDSCALE, 256);
        assert_eq!(cwnd(1), 256);
        assert_eq!(cwnd(128), 128 << 8);
        assert_eq!(cwnd(u32::MAX), u32::MAX);
    }

    #[test]
    fn requester_updates() {
        let mut r = Requester::new(32);
        assert_eq!((r.credits(), r.cwnd(), r.requested()), (1, 256, 32));
        assert_eq!(r.update(0), None);
        assert_eq!(r.update(16), Some(16));
        assert_eq!(r.update(16), None);
        assert_eq!(r.update(1000), Some(32));
        assert_eq!(r.cwnd(), 32 << 8);
        assert_eq!(r.receives_needed(2), 36);
        assert_eq!(r.update(0), Some(1));
        r.update(8);
        r.reset();
        assert_eq!(r.credits(), 1);
        assert_eq!(Requester::new(0).requested(), 1);
    }

    #[test]
    fn receives_with_a_backchannel() {
        assert_eq!(receives_provisioned(128, 16), 160);
        assert_eq!(receives_provisioned(128, 0), 128);
        assert_eq!(receives_provisioned(0, 16), 33);
        assert_eq!(receives_provisioned(u32::MAX, 16), u32::MAX);
    }

    #[test]
    fn responder_grants() {
        assert_eq!(grant(128, 128), 128);
        assert_eq!(grant(100, 128), 100);
        assert_eq!(grant(500, 128), 128);
        assert_eq!(grant(0, 128), 1);
        assert_eq!(grant(0, 0), 1);
    }
}
