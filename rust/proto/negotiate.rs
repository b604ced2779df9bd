// SPDX-License-Identifier: GPL-2.0

//! Protocol version negotiation (version 2 with fallback to 1).
//!
//! Draft Section 4.3.3: a requester offers version 2 in its first message on a new connection,
//! which must fit the version 1 default inline threshold ([`FIRST_CALL_MAX`]). A version 2
//! responder answers in version 2; a responder that does not speak version 2 answers `ERR_VERS`
//! with the range it supports, and the requester continues in a version from that range. The
//! requester remembers, per server, that version 2 is not available after an `ERR_VERS`
//! ([`PeerMemory`]). A connection lost while the first version 2 call is unanswered is no
//! refusal (a link may go down, a server restart): only [`LOST_OFFERS`] such connections in a
//! row count as one, so that the requester does not loop offering version 2 to a server that
//! drops it.
//!
//! [`Requester`] is the requester's state machine (`Offering2` → `Using2` / `Using1`), fed with
//! [`classify`]d replies; [`Responder`] decides what to do with a received header's version and
//! encodes the `ERR_VERS` answer. Everything is pure: no time, no allocation; timeouts and the
//! lifetime of a [`PeerMemory`] are the caller's policy.
//!
//! # Choices where the specifications are unclear
//!
//! - The layout of an `ERR_VERS` answer is not fixed across versions: RFC 8166's is
//!   `xid, vers, credit, 4, 1, low, high` (28 bytes) and the draft's `RDMA2_ERROR` inserts
//!   `rdma_flags` after the fourth word (32 bytes). RFC 8166 also says the answer copies the
//!   request's `rdma_vers`, so a version 1 responder may answer a version 2 call with
//!   `rdma_vers` = 2 in the version 1 layout (Linux's svcrdma does). [`classify`] therefore reads
//!   the version 2 layout only when `rdma_vers` is 2 and the whole version 2 body decodes (for
//!   `ERR_VERS`, to a range that is not empty), and the version 1 layout otherwise. Both
//!   readings of an ambiguous message lead to the same choice, version 1: a version 1
//!   `ERR_VERS` copying `rdma_vers` = 2 with bytes after it (`xid, 2, credit, 4, 1, 1, 1, 0`)
//!   reads in the version 2 layout as the empty range 1..0, which no responder sends, so it is
//!   read in the version 1 layout, 1..1.
//! - An error in the version 1 layout comes from a version 1 responder, whatever `rdma_vers` it
//!   copied: [`classify`] reports it as version 1's ([`Reply::OtherError`] with `vers` 1, not
//!   the copied 2, which would settle version 2 with a server that does not speak it). In
//!   answer to the offer it means version 2 was not understood, as `ERR_VERS` would: the
//!   requester falls back to version 1 (a version 1 `ERR_CHUNK` from a server that parses the
//!   header before checking its version).
//! - When we answer `ERR_VERS`, `rdma_vers` names the layout used, not the request's version:
//!   version 2 when our range includes 2, else the version 1 layout with `rdma_vers` = 1. A peer
//!   speaking a version we do not know cannot parse its own layout from us anyway.
//! - An `ERR_VERS` range that (nonsensically) includes 2 still means version 2 was refused: the
//!   requester picks the highest other common version, so it cannot loop.
//! - Any `RDMA2_ERROR` other than `ERR_VERS` in answer to the first call shows the responder
//!   speaks version 2, so version 2 is settled.
//! - A responder fixes the connection's version with the first header it accepts; a later header
//!   in another version is answered `ERR_VERS` with just that version (Section 4.3.3: the client
//!   MUST NOT change the version for the duration of the connection).

use super::v2;
use super::xdr::{
    self,
    Decoder,
    Encoder, //
};

/// Lowest RPC-over-RDMA version this implementation speaks.
pub const LOWEST: u32 = 1;
/// Highest RPC-over-RDMA version this implementation speaks.
pub const HIGHEST: u32 = 2;

/// Largest first message on a new connection: the version 1 default inline threshold.
pub const FIRST_CALL_MAX: usize = 1024;

/// Connections lost in a row while their version 2 offer was unanswered after which the server
/// is taken to lack version 2 ([`Requester::on_connection_lost`]).
pub const LOST_OFFERS: u8 = 3;

/// `RDMA_ERROR` / `RDMA2_ERROR` header type (the same value in both versions).
const ERROR: u32 = 4;
/// `ERR_VERS` / `RDMA2_ERR_VERS`.
const ERR_VERS: u32 = 1;

/// The default inline threshold of `vers` in bytes, or `None` for an unknown version.
pub const fn default_inline_threshold(vers: u32) -> Option<usize> {
    match vers {
        1 => Some(1024),
        2 => Some(4096),
        _ => None,
    }
}

/// Errors of version negotiation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The reply is too short or malformed to classify.
    Malformed(xdr::Error),
    /// `ERR_VERS` with a range that shares no version with ours: the connection is unusable.
    NoCommonVersion {
        /// The responder's lowest version.
        low: u32,
        /// The responder's highest version.
        high: u32,
    },
    /// A reply in a version other than the one offered or settled.
    UnexpectedVersion {
        /// The version we expected.
        expected: u32,
        /// The version in the reply.
        got: u32,
    },
    /// `ERR_VERS` after the version was settled.
    UnexpectedErrVers,
}

/// What a reply says about the responder's version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    /// Any header that is not an error, in version `vers`.
    Normal {
        /// `rdma_vers`.
        vers: u32,
    },
    /// `ERR_VERS` (either version's layout) with the responder's inclusive range.
    ErrVers {
        /// `rdma_vers_low`.
        low: u32,
        /// `rdma_vers_high`.
        high: u32,
    },
    /// An error other than `ERR_VERS`, in version `vers`.
    OtherError {
        /// The version of the error's layout: `rdma_vers` for version 2's (and for an unknown
        /// version's), 1 for RFC 8166's, whatever `rdma_vers` the responder copied.
        vers: u32,
    },
}

/// Classifies a received header (exactly the received bytes) for negotiation.
///
/// Only the four fixed words and, for errors, the error code and range are read; the caller
/// still decodes the header with the module of the version it settles on.
pub fn classify(buf: &[u8]) -> Result<Reply, Error> {
    let c = v2::Common::peek(buf).ok_or(Error::Malformed(xdr::Error::Short))?;
    if c.htype != ERROR {
        return Ok(Reply::Normal { vers: c.vers });
    }
    if c.vers == v2::VERSION {
        if let Ok((h, _)) = v2::Header::decode(buf, &v2::Limits::UNLIMITED) {
            match h.body {
                v2::Body::Error(v2::ErrorBody::Vers { low, high }) if low <= high => {
                    return Ok(Reply::ErrVers { low, high });
                }
                // An empty range: the version 1 layout with bytes after it (see above).
                v2::Body::Error(v2::ErrorBody::Vers { .. }) => {}
                _ => return Ok(Reply::OtherError { vers: c.vers }),
            }
        }
    }
    // RFC 8166 layout: xid, vers, credit, RDMA_ERROR, rdma_err[, low, high]. Its sender speaks
    // version 1, even if it copied our `rdma_vers` 2.
    let mut d = Decoder::new(buf);
    d.skip(16).map_err(Error::Malformed)?;
    let err = d.u32().map_err(Error::Malformed)?;
    if err != ERR_VERS {
        let vers = if c.vers == v2::VERSION { 1 } else { c.vers };
        return Ok(Reply::OtherError { vers });
    }
    let low = d.u32().map_err(Error::Malformed)?;
    let high = d.u32().map_err(Error::Malformed)?;
    Ok(Reply::ErrVers { low, high })
}

/// What a requester remembers about one server across connections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PeerMemory {
    no_v2: bool,
    /// Connections lost in a row with the offer unanswered, below [`LOST_OFFERS`].
    lost_offers: u8,
}

impl PeerMemory {
    /// Nothing known: offer version 2.
    pub const fn new() -> Self {
        PeerMemory {
            no_v2: false,
            lost_offers: 0,
        }
    }

    /// Whether this server is known not to support version 2.
    pub const fn lacks_v2(&self) -> bool {
        self.no_v2
    }

    /// Forgets what was learnt (e.g. after the caller's retry interval), so version 2 is
    /// offered again.
    pub fn forget(&mut self) {
        *self = Self::new();
    }
}

/// Requester negotiation state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Version 2 is offered; the first call's reply has not arrived. Send one message only.
    Offering2,
    /// Version 2 is in use for this connection.
    Using2,
    /// Version 1 is in use for this connection.
    Using1,
}

/// What the requester does after a reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Process the reply normally.
    Proceed,
    /// The first call was refused with `ERR_VERS`: send it again in version `vers`.
    Resend {
        /// The version to use from now on.
        vers: u32,
    },
}

/// Requester side of negotiation for one connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Requester {
    state: State,
    first_sent: bool,
    peer: PeerMemory,
}

impl Requester {
    /// Starts negotiation on a new connection to a server about which `peer` is known.
    pub const fn new(peer: PeerMemory) -> Self {
        Requester {
            state: if peer.no_v2 {
                State::Using1
            } else {
                State::Offering2
            },
            first_sent: false,
            peer,
        }
    }

    /// The current state.
    pub const fn state(&self) -> State {
        self.state
    }

    /// The version to put in the next message's `rdma_vers`.
    pub const fn version(&self) -> u32 {
        match self.state {
            State::Offering2 | State::Using2 => 2,
            State::Using1 => 1,
        }
    }

    /// Whether the version is settled, so more than one message may be outstanding.
    pub const fn settled(&self) -> bool {
        !matches!(self.state, State::Offering2)
    }

    /// What was learnt about the server, to keep for the next connection.
    pub const fn peer(&self) -> PeerMemory {
        self.peer
    }

    /// Records that the first call (at most [`FIRST_CALL_MAX`] bytes) has been sent.
    pub fn on_call_sent(&mut self) {
        self.first_sent = true;
    }

    /// Records that the connection was lost; returns what to remember about the server.
    ///
    /// Losing the connection while the first version 2 call is unanswered (including a call
    /// the caller deems lost) is no refusal: the next connection offers version 2 again. The
    /// [`LOST_OFFERS`]th such connection in a row, with no answer to an offer between them,
    /// marks the server as lacking version 2.
    pub fn on_connection_lost(&mut self) -> PeerMemory {
        if self.state == State::Offering2 && self.first_sent {
            self.peer.lost_offers = self.peer.lost_offers.saturating_add(1);
            if self.peer.lost_offers >= LOST_OFFERS {
                self.peer.no_v2 = true;
            }
        }
        self.peer
    }

    /// Feeds a reply received on this connection.
    ///
    /// On error the caller closes the connection (and, for [`Error::NoCommonVersion`], gives
    /// up on the server).
    pub fn on_reply(&mut self, reply: Reply) -> Result<Action, Error> {
        match (self.state, reply) {
            // An error in the version 1 layout: the responder speaks version 1 and did not
            // understand our version 2 call (see the module's documentation).
            (State::Offering2, Reply::OtherError { vers: 1 }) => {
                self.peer.no_v2 = true;
                self.state = State::Using1;
                Ok(Action::Resend { vers: LOWEST })
            }
            (State::Offering2, Reply::Normal { vers } | Reply::OtherError { vers }) => {
                if vers != v2::VERSION {
                    return Err(Error::UnexpectedVersion {
                        expected: v2::VERSION,
                        got: vers,
                    });
                }
                self.state = State::Using2;
                self.peer.lost_offers = 0;
                Ok(Action::Proceed)
            }
            (State::Offering2, Reply::ErrVers { low, high }) => {
                self.peer.no_v2 = true;
                // Highest common version other than the refused 2: with LOWEST..=HIGHEST being
                // 1..=2 that is 1, if the responder's range has it.
                if low <= LOWEST && LOWEST <= high {
                    self.state = State::Using1;
                    Ok(Action::Resend { vers: LOWEST })
                } else {
                    Err(Error::NoCommonVersion { low, high })
                }
            }
            (State::Using2 | State::Using1, Reply::ErrVers { .. }) => Err(Error::UnexpectedErrVers),
            (
                State::Using2 | State::Using1,
                Reply::Normal { vers } | Reply::OtherError { vers },
            ) => {
                let expected = self.version();
                if vers == expected {
                    Ok(Action::Proceed)
                } else {
                    Err(Error::UnexpectedVersion {
                        expected,
                        got: vers,
                    })
                }
            }
        }
    }
}

/// A responder's verdict on a received header's `rdma_vers`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Process the header with this version's decoder.
    Accept(u32),
    /// Answer `ERR_VERS` with this range and do not process the header.
    ErrVers {
        /// `rdma_vers_low`.
        low: u32,
        /// `rdma_vers_high`.
        high: u32,
    },
}

/// Responder side of negotiation for one connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Responder {
    low: u32,
    high: u32,
    locked: Option<u32>,
}

impl Responder {
    /// A responder for versions `low..=high` (this implementation: [`LOWEST`]..=[`HIGHEST`]).
    pub const fn new(low: u32, high: u32) -> Self {
        Responder {
            low,
            high,
            locked: None,
        }
    }

    /// The version this connection settled on, if any.
    pub const fn version(&self) -> Option<u32> {
        self.locked
    }

    /// Decides what to do with a received header whose `rdma_vers` is `vers`.
    ///
    /// The first accepted version is kept for the connection; `ERR_VERS` answers never lock.
    pub fn decide(&mut self, vers: u32) -> Decision {
        match self.locked {
            Some(v) if v == vers => Decision::Accept(v),
            Some(v) => Decision::ErrVers { low: v, high: v },
            None if self.low <= vers && vers <= self.high => {
                self.locked = Some(vers);
                Decision::Accept(vers)
            }
            None => Decision::ErrVers {
                low: self.low,
                high: self.high,
            },
        }
    }

    /// Encodes the `ERR_VERS` answer for `decision` to a header with `xid` into `buf`.
    ///
    /// Uses the `RDMA2_ERROR` layout (`rdma_vers` = 2, [`v2::F_RESPONSE`]) when this responder
    /// speaks version 2 and RFC 8166's `RDMA_ERROR` layout (`rdma_vers` = 1) otherwise. Returns
    /// the length, or `Ok(0)` for [`Decision::Accept`], which needs no answer.
    pub fn encode_err_vers(
        &self,
        buf: &mut [u8],
        decision: Decision,
        xid: u32,
        credit: u32,
    ) -> Result<usize, v2::Error> {
        let Decision::ErrVers { low, high } = decision else {
            return Ok(0);
        };
        if self.high >= v2::VERSION {
            let prefix = v2::Prefix {
                xid,
                credit,
                flags: v2::Flags {
                    response: true,
                    more: false,
                },
            };
            return v2::encode(
                buf,
                &prefix,
                &v2::Outgoing::Error(v2::ErrorBody::Vers { low, high }),
            );
        }
        let mut e = Encoder::new(buf);
        for w in [xid, 1, credit, ERROR, ERR_VERS, low, high] {
            e.u32(w)?;
        }
        Ok(e.finish())
    }
}

impl Default for Responder {
    fn default() -> Self {
        Responder::new(LOWEST, HIGHEST)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn words(w: &[u32]) -> Vec<u8> {
        w.iter().flat_map(|v| v.to_be_bytes()).collect()
    }

    #[test]
    fn classify_layouts() {
        // v1 responder, RFC 8166 layout with its own version.
        let v1 = words(&[7, 1, 1, 4, 1, 1, 1]);
        assert_eq!(classify(&v1), Ok(Reply::ErrVers { low: 1, high: 1 }));
        // v1 responder copying the request's version 2 (Linux svcrdma).
        let copied = words(&[7, 2, 1, 4, 1, 1, 1]);
        assert_eq!(classify(&copied), Ok(Reply::ErrVers { low: 1, high: 1 }));
        // v2 layout: flags word, then ERR_VERS range.
        let v2e = words(&[7, 2, 1, 4, 1, 1, 1, 2]);
        assert_eq!(classify(&v2e), Ok(Reply::ErrVers { low: 1, high: 2 }));
        // Other errors in both layouts.
        assert_eq!(
            classify(&words(&[7, 1, 1, 4, 2])),
            Ok(Reply::OtherError { vers: 1 })
        );
        assert_eq!(
            classify(&words(&[7, 2, 1, 4, 1, 10])),
            Ok(Reply::OtherError { vers: 2 })
        );
        // Normal replies.
        assert_eq!(
            classify(&words(&[7, 2, 1, 0, 1, 0, 0, 0, 0])),
            Ok(Reply::Normal { vers: 2 })
        );
        assert_eq!(
            classify(&words(&[7, 1, 1, 0])),
            Ok(Reply::Normal { vers: 1 })
        );
        // Version 1 layout copying version 2, an error other than ERR_VERS: version 1's (the
        // version 2 reading fails: F_MORE on an error, and no body).
        assert_eq!(
            classify(&words(&[7, 2, 1, 4, 2])),
            Ok(Reply::OtherError { vers: 1 })
        );
        assert_eq!(
            classify(&words(&[7, 2, 1, 4, 2, 0, 0])),
            Ok(Reply::OtherError { vers: 1 })
        );
        // Version 1 ERR_VERS copying version 2 with bytes after it: not the version 2 reading
        // (1..0, or 1..0 again with more zeroes).
        for tail in [&[0][..], &[0, 0, 0]] {
            let mut w = std::vec![7, 2, 1, 4, 1, 1, 1];
            w.extend_from_slice(tail);
            assert_eq!(classify(&words(&w)), Ok(Reply::ErrVers { low: 1, high: 1 }));
        }
        // A version 2 range that is not empty is read as such, with or without 1.
        assert_eq!(
            classify(&words(&[7, 2, 1, 4, 1, 1, 2, 2])),
            Ok(Reply::ErrVers { low: 2, high: 2 })
        );
        // An unknown version's error stays that version's.
        assert_eq!(
            classify(&words(&[7, 3, 1, 4, 2])),
            Ok(Reply::OtherError { vers: 3 })
        );
        // Truncated.
        assert!(classify(&words(&[7, 1, 1])).is_err());
        assert!(classify(&words(&[7, 1, 1, 4])).is_err());
        assert!(classify(&words(&[7, 1, 1, 4, 1, 1])).is_err());
    }

    #[test]
    fn v2_server() {
        let mut r = Requester::new(PeerMemory::new());
        assert_eq!(
            (r.state(), r.version(), r.settled()),
            (State::Offering2, 2, false)
        );
        r.on_call_sent();
        assert_eq!(r.on_reply(Reply::Normal { vers: 2 }), Ok(Action::Proceed));
        assert_eq!((r.state(), r.settled()), (State::Using2, true));
        assert_eq!(
            r.on_reply(Reply::OtherError { vers: 2 }),
            Ok(Action::Proceed)
        );
        assert_eq!(
            r.on_reply(Reply::Normal { vers: 1 }),
            Err(Error::UnexpectedVersion {
                expected: 2,
                got: 1
            })
        );
        assert_eq!(
            r.on_reply(Reply::ErrVers { low: 1, high: 2 }),
            Err(Error::UnexpectedErrVers)
        );
        // Losing an established v2 connection teaches nothing.
        assert!(!r.on_connection_lost().lacks_v2());
    }

    #[test]
    fn v1_server_err_vers_then_remembered() {
        let mut r = Requester::new(PeerMemory::new());
        r.on_call_sent();
        assert_eq!(
            r.on_reply(Reply::ErrVers { low: 1, high: 1 }),
            Ok(Action::Resend { vers: 1 })
        );
        assert_eq!((r.state(), r.version()), (State::Using1, 1));
        assert_eq!(r.on_reply(Reply::Normal { vers: 1 }), Ok(Action::Proceed));
        let mem = r.on_connection_lost();
        assert!(mem.lacks_v2());
        let mut again = Requester::new(mem);
        assert_eq!((again.state(), again.version()), (State::Using1, 1));
        let mut mem = again.on_connection_lost();
        mem.forget();
        assert_eq!(Requester::new(mem).state(), State::Offering2);
    }

    #[test]
    fn v1_server_edge_cases_fall_back() {
        // What a version 1 server may answer our version 2 offer with, read as a version 1
        // answer: version 1 from now on, remembered.
        for answer in [
            words(&[7, 2, 1, 4, 2]),
            words(&[7, 1, 1, 4, 2]),
            words(&[7, 2, 1, 4, 1, 1, 1, 0]),
            words(&[7, 2, 1, 4, 1, 1, 1]),
        ] {
            let mut r = Requester::new(PeerMemory::new());
            r.on_call_sent();
            let reply = classify(&answer).unwrap();
            assert_eq!(
                r.on_reply(reply),
                Ok(Action::Resend { vers: 1 }),
                "{answer:?}"
            );
            assert_eq!(r.state(), State::Using1);
            assert!(r.peer().lacks_v2());
            // The version 1 resend may be answered with a version 1 error: the call's.
            assert_eq!(
                r.on_reply(Reply::OtherError { vers: 1 }),
                Ok(Action::Proceed)
            );
        }
    }

    #[test]
    fn drop_after_first_call() {
        let mut r = Requester::new(PeerMemory::default());
        // Lost before anything was sent: nothing learnt.
        assert!(!r.on_connection_lost().lacks_v2());
        let mut mem = PeerMemory::default();
        // Each offer lost with its connection: version 2 is offered again, up to the
        // `LOST_OFFERS`th in a row.
        for _ in 1..LOST_OFFERS {
            let mut r = Requester::new(mem);
            assert_eq!(r.state(), State::Offering2);
            r.on_call_sent();
            mem = r.on_connection_lost();
            assert!(!mem.lacks_v2());
        }
        let mut r = Requester::new(mem);
        r.on_call_sent();
        mem = r.on_connection_lost();
        assert!(mem.lacks_v2());
        assert_eq!(Requester::new(mem).state(), State::Using1);
    }

    #[test]
    fn lost_offers_counted_in_a_row() {
        let mut mem = PeerMemory::new();
        for _ in 1..LOST_OFFERS {
            let mut r = Requester::new(mem);
            r.on_call_sent();
            mem = r.on_connection_lost();
        }
        // An answered offer starts the count again, even if its connection is lost later.
        let mut r = Requester::new(mem);
        r.on_call_sent();
        assert_eq!(r.on_reply(Reply::Normal { vers: 2 }), Ok(Action::Proceed));
        mem = r.on_connection_lost();
        assert_eq!(mem, PeerMemory::new());
        for _ in 1..LOST_OFFERS {
            let mut r = Requester::new(mem);
            r.on_call_sent();
            mem = r.on_connection_lost();
            assert!(!mem.lacks_v2());
        }
        // A connection lost before its offer went out counts for nothing.
        mem = Requester::new(mem).on_connection_lost();
        assert!(!mem.lacks_v2());
    }

    #[test]
    fn bad_ranges() {
        let mut r = Requester::new(PeerMemory::new());
        r.on_call_sent();
        assert_eq!(
            r.on_reply(Reply::ErrVers { low: 3, high: 4 }),
            Err(Error::NoCommonVersion { low: 3, high: 4 })
        );
        assert!(r.peer().lacks_v2());
        // A range claiming 2 after refusing it: fall back to 1, never loop.
        let mut r = Requester::new(PeerMemory::new());
        assert_eq!(
            r.on_reply(Reply::ErrVers { low: 1, high: 2 }),
            Ok(Action::Resend { vers: 1 })
        );
        let mut r = Requester::new(PeerMemory::new());
        assert_eq!(
            r.on_reply(Reply::ErrVers { low: 2, high: 2 }),
            Err(Error::NoCommonVersion { low: 2, high: 2 })
        );
        // Reply in version 1 to a version 2 offer.
        let mut r = Requester::new(PeerMemory::new());
        assert_eq!(
            r.on_reply(Reply::Normal { vers: 1 }),
            Err(Error::UnexpectedVersion {
                expected: 2,
                got: 1
            })
        );
        // A v2 error other than ERR_VERS settles version 2.
        let mut r = Requester::new(PeerMemory::new());
        assert_eq!(
            r.on_reply(Reply::OtherError { vers: 2 }),
            Ok(Action::Proceed)
        );
        assert_eq!(r.state(), State::Using2);
    }

    #[test]
    fn responder_decisions_and_answers() {
        let mut both = Responder::default();
        assert_eq!(both.decide(3), Decision::ErrVers { low: 1, high: 2 });
        assert_eq!(both.decide(0), Decision::ErrVers { low: 1, high: 2 });
        assert_eq!(both.version(), None);
        assert_eq!(both.decide(2), Decision::Accept(2));
        assert_eq!(both.decide(2), Decision::Accept(2));
        assert_eq!(both.decide(1), Decision::ErrVers { low: 2, high: 2 });
        assert_eq!(both.version(), Some(2));

        let mut b = [0u8; 64];
        let d = Responder::default().decide(3);
        let n = Responder::default()
            .encode_err_vers(&mut b, d, 9, 0x0001_0001)
            .unwrap();
        assert_eq!(b[..n], words(&[9, 2, 0x0001_0001, 4, 1, 1, 1, 2]));
        assert_eq!(classify(&b[..n]), Ok(Reply::ErrVers { low: 1, high: 2 }));

        // A version 1 only responder answers a version 2 call the RFC 8166 way.
        let mut v1 = Responder::new(1, 1);
        let d = v1.decide(2);
        assert_eq!(d, Decision::ErrVers { low: 1, high: 1 });
        let n = v1.encode_err_vers(&mut b, d, 9, 32).unwrap();
        assert_eq!(b[..n], words(&[9, 1, 32, 4, 1, 1, 1]));
        // ... and the requester falls back.
        let mut r = Requester::new(PeerMemory::new());
        r.on_call_sent();
        let reply = classify(&b[..n]).unwrap();
        assert_eq!(r.on_reply(reply), Ok(Action::Resend { vers: 1 }));
        // The v1 retry is accepted and locks the connection.
        assert_eq!(v1.decide(r.version()), Decision::Accept(1));
        assert_eq!(
            v1.encode_err_vers(&mut b, Decision::Accept(1), 9, 32),
            Ok(0)
        );
        assert!(v1.encode_err_vers(&mut b[..27], d, 9, 32).is_err());
    }

    #[test]
    fn thresholds() {
        assert_eq!(default_inline_threshold(1), Some(1024));
        assert_eq!(default_inline_threshold(2), Some(4096));
        assert_eq!(default_inline_threshold(3), None);
        assert_eq!(Some(FIRST_CALL_MAX), default_inline_threshold(1));
    }
}
