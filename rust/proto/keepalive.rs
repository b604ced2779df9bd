// SPDX-License-Identifier: GPL-2.0

//! Keep-alive on version 2 connections: when to send a credit refresh, and when a silent peer
//! is dead.
//!
//! A version 2 credit refresh (an `RDMA2_NOMSG` with xid 0 and empty chunk lists, draft
//! Sections 4.3.1 and 6.4.2) "can also act as a keep-alive ping". Each end of a version 2
//! connection ticks every K seconds (the `keepalive` module parameter) and feeds [`KeepAlive`]
//! whether it sent and whether it received anything since the previous tick:
//!
//! - An end that sent nothing during an interval sends a refresh ([`Action::refresh`]). On a
//!   reliable connection that Send alone finds a peer that is gone: the RDMA device runs out
//!   of retries and completes it in error, and the connection is replaced.
//! - A peer that is reachable but has stopped (its RDMA device acknowledges, its transport
//!   sends nothing) is found by its silence: once it has shown that it keeps the connection
//!   alive too (we received a refresh from it), [`MISSES`] of its own intervals without
//!   anything received from it make it dead ([`Action::dead`]). Its interval is learned from
//!   the gaps before its refreshes, so that peers with different intervals do not declare
//!   each other dead; a peer that never sends a refresh (one without keep-alive) is never
//!   declared dead by silence.
//!
//! This is pure bookkeeping: the transports own the timer, the Sends and the disconnect.

/// Intervals of the peer without anything received from it after which it is declared dead.
pub const MISSES: u32 = 3;

/// What a tick asks of the connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Action {
    /// Send a credit refresh: nothing was sent during the interval.
    pub refresh: bool,
    /// The peer has been silent for [`MISSES`] of its intervals: close the connection.
    pub dead: bool,
}

/// The keep-alive state of one connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeepAlive {
    /// Ticks since something was last received.
    silent: u32,
    /// The peer's keep-alive interval in our ticks (the longest gap seen before one of its
    /// refreshes), 0 until it has sent one.
    period: u32,
}

impl KeepAlive {
    /// The state of a new connection: nothing known of the peer.
    pub const fn new() -> Self {
        KeepAlive {
            silent: 0,
            period: 0,
        }
    }

    /// A credit refresh arrived from the peer (between two ticks): it keeps the connection
    /// alive too, and the ticks since its previous message bound its interval.
    pub fn peer_refreshed(&mut self) {
        self.period = self.period.max(self.silent.saturating_add(1));
    }

    /// Ticks since something was last received from the peer.
    pub const fn silent(&self) -> u32 {
        self.silent
    }

    /// The peer's interval in ticks, 0 while it is not known to keep alive.
    pub const fn period(&self) -> u32 {
        self.period
    }

    /// One interval ended: whether we `sent` and `received` anything during it.
    pub fn tick(&mut self, sent: bool, received: bool) -> Action {
        self.silent = if received {
            0
        } else {
            self.silent.saturating_add(1)
        };
        let dead = self.period != 0 && self.silent >= self.period.saturating_mul(MISSES);
        Action {
            refresh: !sent && !dead,
            dead,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_sends_refreshes() {
        let mut k = KeepAlive::new();
        assert_eq!(
            k.tick(true, true),
            Action {
                refresh: false,
                dead: false
            }
        );
        assert!(k.tick(false, true).refresh);
        // A peer without keep-alive is never declared dead by silence.
        for _ in 0..1000 {
            let a = k.tick(false, false);
            assert!(a.refresh && !a.dead);
        }
        assert_eq!(k.period(), 0);
    }

    #[test]
    fn silent_peer_is_dead_after_misses() {
        let mut k = KeepAlive::new();
        k.tick(false, false);
        k.peer_refreshed();
        assert_eq!(k.period(), 2);
        assert!(!k.tick(false, true).dead);
        for i in 1..MISSES * 2 {
            let a = k.tick(false, false);
            assert!(!a.dead, "tick {i}");
            assert!(a.refresh);
        }
        let a = k.tick(true, false);
        assert_eq!(
            a,
            Action {
                refresh: false,
                dead: true
            }
        );
        assert_eq!(k.silent(), MISSES * 2);
    }

    #[test]
    fn slower_peer_is_not_dead() {
        // We tick every interval; the peer refreshes every 6 of our ticks.
        let mut k = KeepAlive::new();
        for _ in 0..50 {
            for _ in 0..5 {
                assert!(!k.tick(false, false).dead);
            }
            k.peer_refreshed();
            assert!(!k.tick(false, true).dead);
        }
        assert_eq!(k.period(), 6);
    }

    #[test]
    fn traffic_resets_silence() {
        let mut k = KeepAlive::new();
        k.peer_refreshed();
        assert_eq!(k.period(), 1);
        for _ in 0..100 {
            assert!(!k.tick(false, false).dead);
            assert!(!k.tick(true, false).dead);
            assert_eq!(k.tick(true, true), Action::default());
        }
        assert!(!k.tick(false, false).dead);
        assert!(!k.tick(false, false).dead);
        assert!(k.tick(false, false).dead);
    }
}
