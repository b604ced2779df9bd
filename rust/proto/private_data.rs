// SPDX-License-Identifier: GPL-2.0

//! RFC 8797 RDMA-CM private data.
//!
//! RPC-over-RDMA version 1 peers exchange an 8-byte message in the private data of the RDMA-CM
//! connect request and accept (`struct rpcrdma_connect_private` in
//! `include/linux/sunrpc/rpc_rdma.h`):
//!
//! ```text
//! 0               4       5       6           7
//! +---------------+-------+-------+-----------+-----------+
//! | magic (BE32)  | vers  | flags | send size | recv size |
//! +---------------+-------+-------+-----------+-----------+
//! ```
//!
//! The magic is `0xf6ab0e18`, the version 1, flag bit 0 says the sender can handle Send With
//! Invalidate, and each size is the sender's inline threshold encoded as `KiB - 1` (so 1 to
//! 256 KiB). A peer whose private data is missing, too short, or carries another magic or
//! version is treated as having sent none: it uses the version 1 default of 1024 bytes both ways
//! and no remote invalidation.
//!
//! [`negotiate`] turns our own thresholds and the peer's message into the thresholds the
//! connection uses, as `rpcrdma_update_cm_private()` does.

use super::v1::DEF_INLINE_SIZE;

/// `cp_magic`, `rpcrdma_cmp_magic`.
pub const MAGIC: u32 = 0xf6ab_0e18;
/// `cp_version`, `RPCRDMA_CMP_VERSION`.
pub const VERSION: u8 = 1;
/// `cp_flags` bit: the sender can receive Send With Invalidate (`RPCRDMA_CMP_F_SND_W_INV_OK`).
pub const F_SND_W_INV_OK: u8 = 1 << 0;
/// Size of the encoded message.
pub const SIZE: usize = 8;
/// Smallest encodable buffer size (code 0).
pub const MIN_BUFFER_SIZE: u32 = 1024;
/// Largest encodable buffer size (code 255).
pub const MAX_BUFFER_SIZE: u32 = 256 * 1024;

/// Encodes a buffer size as `size / 1024 - 1` (`rpcrdma_encode_buffer_size()`).
///
/// Sizes are rounded down to a whole KiB. The C helper wraps for sizes below 1 KiB (0 becomes
/// 255, i.e. 256 KiB) and truncates above 256 KiB; here sizes are clamped to
/// [`MIN_BUFFER_SIZE`]`..=`[`MAX_BUFFER_SIZE`] instead, so we never advertise more than we have.
pub fn encode_buffer_size(size: u32) -> u8 {
    let kib = size.clamp(MIN_BUFFER_SIZE, MAX_BUFFER_SIZE) >> 10;
    // `kib` is in 1..=256, so `kib - 1` fits a `u8`.
    u8::try_from(kib - 1).unwrap_or(u8::MAX)
}

/// Decodes a buffer size: `(code + 1) * 1024` (`rpcrdma_decode_buffer_size()`).
pub fn decode_buffer_size(code: u8) -> u32 {
    (u32::from(code) + 1) << 10
}

/// A decoded or to-be-encoded private data message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrivateData {
    /// `cp_flags`; unknown bits are kept but ignored.
    pub flags: u8,
    /// Largest message the sender will send, in bytes (`cp_send_size`).
    pub send_size: u32,
    /// Largest message the sender can receive, in bytes (`cp_recv_size`).
    pub recv_size: u32,
}

impl PrivateData {
    /// A message advertising `send_size` and `recv_size` (rounded down to whole KiB and clamped
    /// when encoded) and, if `remote_invalidate`, [`F_SND_W_INV_OK`].
    pub fn new(send_size: u32, recv_size: u32, remote_invalidate: bool) -> Self {
        Self {
            flags: if remote_invalidate { F_SND_W_INV_OK } else { 0 },
            send_size,
            recv_size,
        }
    }

    /// Whether the sender accepts Send With Invalidate.
    pub fn remote_invalidate(&self) -> bool {
        self.flags & F_SND_W_INV_OK != 0
    }

    /// Encodes the 8-byte message.
    pub fn encode(&self) -> [u8; SIZE] {
        let m = MAGIC.to_be_bytes();
        [
            m[0],
            m[1],
            m[2],
            m[3],
            VERSION,
            self.flags,
            encode_buffer_size(self.send_size),
            encode_buffer_size(self.recv_size),
        ]
    }

    /// Decodes a peer's private data.
    ///
    /// Returns `None` ("absent": use the defaults) if `buf` is shorter than [`SIZE`], or the
    /// magic or version differ, exactly the cases `rpcrdma_update_cm_private()` and
    /// `svc_rdma_parse_connect_private()` ignore. Bytes after the first [`SIZE`] are ignored:
    /// InfiniBand CM zero-pads private data to a fixed length.
    pub fn decode(buf: &[u8]) -> Option<Self> {
        let [m0, m1, m2, m3, version, flags, send, recv] = *buf.get(..SIZE)? else {
            return None;
        };
        if u32::from_be_bytes([m0, m1, m2, m3]) != MAGIC || version != VERSION {
            return None;
        }
        Some(Self {
            flags,
            send_size: decode_buffer_size(send),
            recv_size: decode_buffer_size(recv),
        })
    }
}

/// Inline thresholds of a connection, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inline {
    /// Largest message we may Send (`re_inline_send`).
    pub send: u32,
    /// Largest message we accept in a Receive (`re_inline_recv`).
    pub recv: u32,
}

impl Inline {
    /// These thresholds as a peer reads them from our private data: each rounded down to a
    /// whole KiB and clamped to [`MIN_BUFFER_SIZE`]`..=`[`MAX_BUFFER_SIZE`], as
    /// [`encode_buffer_size`] does. A side whose configured threshold is not a multiple of
    /// 1 KiB (the sysctls allow any value in range) must use this, not the configured value:
    /// it never receives more than it advertised, and must not expect to.
    pub fn advertised(self) -> Self {
        Self {
            send: decode_buffer_size(encode_buffer_size(self.send)),
            recv: decode_buffer_size(encode_buffer_size(self.recv)),
        }
    }
}

/// Result of [`negotiate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Negotiated {
    /// Thresholds to use on this connection.
    pub inline: Inline,
    /// Whether we may Send With Invalidate to the peer (`sc_snd_w_inv`).
    pub remote_invalidate: bool,
}

/// Combines our thresholds with the peer's private data (`None` if absent or unrecognised).
///
/// As `rpcrdma_update_cm_private()`: we never send more than the peer can receive, nor expect
/// to receive more than the peer will send; a peer without private data is assumed to use
/// [`DEF_INLINE_SIZE`] both ways. Each result is the minimum of ours and the peer's, so it never
/// exceeds what we can handle (the C client likewise only ever lowers its own values).
///
/// The C server does not call this: it ignores the client's sizes and keeps its own
/// `sc_max_req_size` both ways, using only the flag. Using the minimum on the server too is
/// RFC 8797's rule (a sender must not exceed the peer's receive size) and never larger than
/// what the C server would do.
pub fn negotiate(ours: Inline, peer: Option<&PrivateData>) -> Negotiated {
    let (peer_send, peer_recv, remote_invalidate) = match peer {
        Some(p) => (p.send_size, p.recv_size, p.remote_invalidate()),
        None => (DEF_INLINE_SIZE, DEF_INLINE_SIZE, false),
    };
    Negotiated {
        inline: Inline {
            send: ours.send.min(peer_recv),
            recv: ours.recv.min(peer_send),
        },
        remote_invalidate,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the Linux client sends with its default 4 KiB thresholds (`rpcrdma_ep_create()`).
    const LINUX_CLIENT: [u8; 8] = [0xf6, 0xab, 0x0e, 0x18, 0x01, 0x01, 0x03, 0x03];
    /// What the Linux server sends with `svcrdma_max_req_size` 4096 (`svc_rdma_accept()`).
    const LINUX_SERVER: [u8; 8] = [0xf6, 0xab, 0x0e, 0x18, 0x01, 0x00, 0x03, 0x03];

    #[test]
    fn golden_client_and_server() {
        assert_eq!(PrivateData::new(4096, 4096, true).encode(), LINUX_CLIENT);
        assert_eq!(PrivateData::new(4096, 4096, false).encode(), LINUX_SERVER);
        let c = PrivateData::decode(&LINUX_CLIENT).unwrap();
        assert_eq!(c, PrivateData::new(4096, 4096, true));
        assert!(c.remote_invalidate());
        let s = PrivateData::decode(&LINUX_SERVER).unwrap();
        assert!(!s.remote_invalidate());
        // Largest sizes: 64 KiB send (0x3f), 256 KiB receive (0xff).
        let b = [0xf6, 0xab, 0x0e, 0x18, 0x01, 0x01, 0x3f, 0xff];
        let p = PrivateData::decode(&b).unwrap();
        assert_eq!((p.send_size, p.recv_size), (65536, 262144));
        assert_eq!(p.encode(), b);
    }

    #[test]
    fn buffer_size_codes() {
        assert_eq!(encode_buffer_size(1024), 0);
        assert_eq!(encode_buffer_size(4096), 3);
        assert_eq!(encode_buffer_size(4097), 3);
        assert_eq!(encode_buffer_size(8191), 6);
        assert_eq!(encode_buffer_size(262144), 255);
        // Clamped, where C would wrap or truncate.
        assert_eq!(encode_buffer_size(0), 0);
        assert_eq!(encode_buffer_size(1023), 0);
        assert_eq!(encode_buffer_size(1 << 20), 255);
        assert_eq!(encode_buffer_size(u32::MAX), 255);
        for code in 0..=255u8 {
            assert_eq!(encode_buffer_size(decode_buffer_size(code)), code);
        }
        assert_eq!(decode_buffer_size(0), 1024);
        assert_eq!(decode_buffer_size(255), 262144);
    }

    #[test]
    fn absent_cases() {
        for n in 0..SIZE {
            assert_eq!(PrivateData::decode(&LINUX_CLIENT[..n]), None);
        }
        let mut b = LINUX_CLIENT;
        b[3] = 0x19;
        assert_eq!(PrivateData::decode(&b), None);
        let mut b = LINUX_CLIENT;
        b[4] = 2;
        assert_eq!(PrivateData::decode(&b), None);
        let mut b = LINUX_CLIENT;
        b[4] = 0;
        assert_eq!(PrivateData::decode(&b), None);
        // Byte-swapped magic.
        let b = [0x18, 0x0e, 0xab, 0xf6, 0x01, 0x01, 0x03, 0x03];
        assert_eq!(PrivateData::decode(&b), None);
    }

    #[test]
    fn trailing_bytes_and_unknown_flags_are_ignored() {
        let mut b = [0u8; 56];
        b[..8].copy_from_slice(&LINUX_CLIENT);
        b[5] = 0xff;
        b[8..].fill(0xee);
        let p = PrivateData::decode(&b).unwrap();
        assert!(p.remote_invalidate());
        assert_eq!(p.flags, 0xff);
        assert_eq!(p.send_size, 4096);
    }

    #[test]
    fn advertised_thresholds() {
        let c = Inline {
            send: 1500,
            recv: 65536,
        };
        assert_eq!(
            c.advertised(),
            Inline {
                send: 1024,
                recv: 65536,
            }
        );
        // What the peer decodes is what `advertised` says.
        let wire = PrivateData::new(c.send, c.recv, false).encode();
        let p = PrivateData::decode(&wire).unwrap();
        assert_eq!((p.send_size, p.recv_size), (1024, 65536));
        let c = Inline {
            send: 4096,
            recv: 5000,
        };
        assert_eq!(
            c.advertised(),
            Inline {
                send: 4096,
                recv: 4096,
            }
        );
        assert_eq!(c.advertised().advertised(), c.advertised());
    }

    #[test]
    fn negotiation() {
        let ours = Inline {
            send: 4096,
            recv: 8192,
        };
        // Absent: v1 defaults.
        let n = negotiate(ours, None);
        assert_eq!(
            n.inline,
            Inline {
                send: 1024,
                recv: 1024,
            }
        );
        assert!(!n.remote_invalidate);
        // Peer sends up to 2 KiB, receives up to 64 KiB.
        let peer = PrivateData::new(2048, 65536, true);
        let n = negotiate(ours, Some(&peer));
        assert_eq!(
            n.inline,
            Inline {
                send: 4096,
                recv: 2048,
            }
        );
        assert!(n.remote_invalidate);
        // A larger peer never raises ours.
        let peer = PrivateData::new(262144, 262144, false);
        assert_eq!(negotiate(ours, Some(&peer)).inline, ours);
        // Round trip through the wire.
        let wire = PrivateData::new(16384, 1024, false).encode();
        let n = negotiate(ours, PrivateData::decode(&wire).as_ref());
        assert_eq!(
            n.inline,
            Inline {
                send: 1024,
                recv: 8192,
            }
        );
    }
}
