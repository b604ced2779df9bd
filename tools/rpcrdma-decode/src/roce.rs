// SPDX-License-Identifier: GPL-2.0

//! InfiniBand transport headers as RoCEv2 carries them: the Base Transport Header and the
//! extended headers of each opcode (IBTA Volume 1, chapter 9).

/// Size of the Base Transport Header.
pub const BTH_LEN: usize = 12;
/// Size of the invariant CRC that ends every packet.
pub const ICRC_LEN: usize = 4;

/// What a packet is, by opcode, as far as the decoder cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// RC Send: `first`/`last` say where in a message it is.
    Send {
        /// SEND_FIRST or SEND_ONLY*.
        first: bool,
        /// SEND_LAST* or SEND_ONLY*.
        last: bool,
    },
    /// RC RDMA WRITE packet; `reth` is set on WRITE_FIRST and WRITE_ONLY*.
    Write {
        /// Whether the packet starts a Write (carries a RETH).
        first: bool,
    },
    /// RC RDMA READ request (carries a RETH).
    ReadRequest,
    /// RC RDMA READ response packet.
    ReadResponse,
    /// RC ACKNOWLEDGE or ATOMIC ACKNOWLEDGE.
    Ack,
    /// RC atomic or flush request, or another RC request that carries no Send data.
    OtherRequest,
    /// Unreliable Datagram SEND_ONLY (with DETH): connection management MADs on QP 1.
    UdSend,
    /// RoCEv2 congestion notification packet.
    Cnp,
    /// An opcode this decoder does not know.
    Unknown,
}

/// A parsed RoCEv2 packet.
#[derive(Clone, Copy, Debug)]
pub struct Packet<'a> {
    /// BTH OpCode.
    pub opcode: u8,
    /// What it is.
    pub kind: Kind,
    /// BTH DestQP.
    pub dqpn: u32,
    /// BTH PSN.
    pub psn: u32,
    /// The extended headers (RETH, AETH, ImmDt, IETH, DETH ...).
    pub ext: &'a [u8],
    /// The captured part of the payload (after the extended headers, without pad and ICRC).
    pub payload: &'a [u8],
    /// Whether the capture cut part of the payload (snap length).
    pub cut: bool,
}

/// Classifies `opcode` and gives the length of its extended headers.
fn classify(opcode: u8) -> (Kind, usize) {
    use Kind::*;
    match opcode {
        0x00 => (
            Send {
                first: true,
                last: false,
            },
            0,
        ),
        0x01 => (
            Send {
                first: false,
                last: false,
            },
            0,
        ),
        0x02 => (
            Send {
                first: false,
                last: true,
            },
            0,
        ),
        // SEND_LAST_WITH_IMMEDIATE (ImmDt), SEND_LAST_WITH_INVALIDATE (IETH).
        0x03 | 0x16 => (
            Send {
                first: false,
                last: true,
            },
            4,
        ),
        0x04 => (
            Send {
                first: true,
                last: true,
            },
            0,
        ),
        0x05 | 0x17 => (
            Send {
                first: true,
                last: true,
            },
            4,
        ),
        0x06 | 0x0a => (Write { first: true }, 16),
        0x07 | 0x08 => (Write { first: false }, 0),
        0x09 => (Write { first: false }, 4),
        0x0b => (Write { first: true }, 20),
        0x0c => (ReadRequest, 16),
        0x0d | 0x0f | 0x10 => (ReadResponse, 4),
        0x0e => (ReadResponse, 0),
        0x11 => (Ack, 4),
        0x12 => (Ack, 12),
        0x13 | 0x14 => (OtherRequest, 28),
        // FLUSH (FETH + RETH), ATOMIC WRITE (RETH).
        0x1c => (OtherRequest, 20),
        0x1d => (OtherRequest, 16),
        // UD SEND_ONLY (DETH), SEND_ONLY_WITH_IMMEDIATE (DETH + ImmDt).
        0x64 => (UdSend, 8),
        0x65 => (UdSend, 12),
        0x81 => (Cnp, 0),
        _ => (Unknown, 0),
    }
}

/// Parses the UDP payload of a RoCEv2 packet, `wire_len` bytes long on the wire of which
/// `data` were captured. `None` if even the headers were not captured or do not fit.
pub fn parse(data: &[u8], wire_len: usize) -> Option<Packet<'_>> {
    let bth = data.get(..BTH_LEN)?;
    let opcode = bth[0];
    let pad = usize::from((bth[1] >> 4) & 3);
    let dqpn = u32::from_be_bytes([0, bth[5], bth[6], bth[7]]);
    let psn = u32::from_be_bytes([0, bth[9], bth[10], bth[11]]);
    let (kind, ext_len) = classify(opcode);
    let ext = data.get(BTH_LEN..BTH_LEN + ext_len)?;
    let start = BTH_LEN + ext_len;
    let end = wire_len.checked_sub(pad + ICRC_LEN)?;
    if end < start {
        return None;
    }
    let cut = data.len() < end;
    let payload = data.get(start..end.min(data.len()))?;
    Some(Packet {
        opcode,
        kind,
        dqpn,
        psn,
        ext,
        payload,
        cut,
    })
}

/// The RETH of a packet that carries one: (virtual address, R_Key, DMA length).
pub fn reth(ext: &[u8]) -> Option<(u64, u32, u32)> {
    let va = u64::from_be_bytes(ext.get(..8)?.try_into().ok()?);
    let rkey = u32::from_be_bytes(ext.get(8..12)?.try_into().ok()?);
    let len = u32::from_be_bytes(ext.get(12..16)?.try_into().ok()?);
    Some((va, rkey, len))
}

/// The AETH syndrome of an acknowledgement, named: "ACK", "RNR NAK" or "NAK <code>".
pub fn aeth_syndrome(ext: &[u8]) -> Option<String> {
    let syn = *ext.first()?;
    Some(match syn >> 5 {
        0 => "ACK".to_string(),
        1 => "RNR NAK".to_string(),
        3 => format!("NAK {}", syn & 0x1f),
        _ => format!("reserved syndrome {syn:#04x}"),
    })
}
