// SPDX-License-Identifier: GPL-2.0

//! Capture files: classic pcap (microsecond and nanosecond, either byte order) and pcapng
//! (Section Header, Interface Description, Enhanced, Simple and obsolete Packet blocks).

/// One captured frame.
#[derive(Clone, Copy, Debug)]
pub struct Frame<'a> {
    /// Link-layer type (`LINKTYPE_*`) of the interface it was captured on.
    pub linktype: u32,
    /// The captured bytes (possibly fewer than were on the wire).
    pub data: &'a [u8],
    /// Length of the frame on the wire.
    pub orig_len: u32,
}

/// Why a capture file cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The file starts with neither a pcap nor a pcapng magic number.
    NotACapture,
    /// The file ends inside a header or a record (after `frames` complete frames).
    Truncated {
        /// Frames read before the truncated record.
        frames: u64,
    },
    /// A pcapng block is malformed (after `frames` frames).
    BadBlock {
        /// Frames read before the bad block.
        frames: u64,
    },
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Error::NotACapture => write!(f, "not a pcap or pcapng file"),
            Error::Truncated { frames } => {
                write!(f, "capture file truncated after frame {frames}")
            }
            Error::BadBlock { frames } => write!(f, "malformed pcapng block after frame {frames}"),
        }
    }
}

/// Reads `u32`/`u16` fields in a file's byte order.
#[derive(Clone, Copy, Debug)]
struct Order {
    big: bool,
}

impl Order {
    /// The `u32` at `at`, if `b` holds it.
    fn u32(self, b: &[u8], at: usize) -> Option<u32> {
        let w: [u8; 4] = b.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(if self.big {
            u32::from_be_bytes(w)
        } else {
            u32::from_le_bytes(w)
        })
    }

    /// The `u16` at `at`, if `b` holds it.
    fn u16(self, b: &[u8], at: usize) -> Option<u16> {
        let w: [u8; 2] = b.get(at..at.checked_add(2)?)?.try_into().ok()?;
        Some(if self.big {
            u16::from_be_bytes(w)
        } else {
            u16::from_le_bytes(w)
        })
    }
}

/// Classic pcap magic, microsecond timestamps.
const PCAP_USEC: u32 = 0xa1b2_c3d4;
/// Classic pcap magic, nanosecond timestamps.
const PCAP_NSEC: u32 = 0xa1b2_3c4d;
/// pcapng Section Header Block type.
const PCAPNG_SHB: u32 = 0x0a0d_0d0a;
/// pcapng byte-order magic.
const PCAPNG_BOM: u32 = 0x1a2b_3c4d;

/// Reads every frame of `file`, calling `each` with it.
///
/// On an error the frames before it have already been given to `each`.
pub fn for_each_frame(file: &[u8], mut each: impl FnMut(Frame<'_>)) -> Result<u64, Error> {
    let le = Order { big: false };
    let magic = le.u32(file, 0).ok_or(Error::NotACapture)?;
    match magic {
        PCAP_USEC | PCAP_NSEC => pcap(file, le, &mut each),
        m if m.swap_bytes() == PCAP_USEC || m.swap_bytes() == PCAP_NSEC => {
            pcap(file, Order { big: true }, &mut each)
        }
        PCAPNG_SHB => pcapng(file, &mut each),
        _ => Err(Error::NotACapture),
    }
}

/// Reads the records of a classic pcap file.
fn pcap(file: &[u8], o: Order, each: &mut dyn FnMut(Frame<'_>)) -> Result<u64, Error> {
    let linktype = o.u32(file, 20).ok_or(Error::Truncated { frames: 0 })? & 0xffff;
    let mut at = 24usize;
    let mut frames = 0u64;
    while at < file.len() {
        let trunc = Error::Truncated { frames };
        let incl = o.u32(file, at + 8).ok_or(trunc.clone())?;
        let orig_len = o.u32(file, at + 12).ok_or(trunc.clone())?;
        let start = at + 16;
        let end = start
            .checked_add(usize::try_from(incl).map_err(|_| trunc.clone())?)
            .ok_or(trunc.clone())?;
        let data = file.get(start..end).ok_or(trunc)?;
        each(Frame {
            linktype,
            data,
            orig_len,
        });
        frames += 1;
        at = end;
    }
    Ok(frames)
}

/// Reads the packet blocks of a pcapng file (every section).
fn pcapng(file: &[u8], each: &mut dyn FnMut(Frame<'_>)) -> Result<u64, Error> {
    let mut at = 0usize;
    let mut frames = 0u64;
    let mut o = Order { big: false };
    let mut links: Vec<u32> = Vec::new();
    while at < file.len() {
        let bad = Error::BadBlock { frames };
        let trunc = Error::Truncated { frames };
        let raw_type = Order { big: false }.u32(file, at).ok_or(trunc.clone())?;
        if raw_type == PCAPNG_SHB {
            // The byte-order magic decides how this section is read.
            let bom = Order { big: false }
                .u32(file, at + 8)
                .ok_or(trunc.clone())?;
            o = Order {
                big: bom != PCAPNG_BOM,
            };
            if o.u32(file, at + 8) != Some(PCAPNG_BOM) {
                return Err(bad);
            }
            links.clear();
        }
        let btype = o.u32(file, at).ok_or(trunc.clone())?;
        let blen =
            usize::try_from(o.u32(file, at + 4).ok_or(trunc.clone())?).map_err(|_| bad.clone())?;
        if blen < 12 || blen % 4 != 0 {
            return Err(bad);
        }
        let end = at.checked_add(blen).ok_or(bad.clone())?;
        let block = file.get(at..end).ok_or(trunc)?;
        let body = &block[8..blen - 4];
        match btype {
            1 => links.push(u32::from(o.u16(body, 0).ok_or(bad.clone())?)),
            // Enhanced Packet Block and the obsolete Packet Block.
            6 | 2 => {
                let iface = if btype == 6 {
                    o.u32(body, 0)
                } else {
                    o.u16(body, 0).map(u32::from)
                }
                .ok_or(bad.clone())?;
                let caplen = o.u32(body, 12).ok_or(bad.clone())?;
                let orig_len = o.u32(body, 16).ok_or(bad.clone())?;
                let caplen = usize::try_from(caplen).map_err(|_| bad.clone())?;
                let data = body.get(20..20 + caplen).ok_or(bad.clone())?;
                let linktype = *links
                    .get(usize::try_from(iface).map_err(|_| bad.clone())?)
                    .ok_or(bad.clone())?;
                each(Frame {
                    linktype,
                    data,
                    orig_len,
                });
                frames += 1;
            }
            // Simple Packet Block: interface 0, captured length bounded by the block.
            3 => {
                let orig_len = o.u32(body, 0).ok_or(bad.clone())?;
                let rest = &body[4..];
                let n = rest
                    .len()
                    .min(usize::try_from(orig_len).unwrap_or(usize::MAX));
                let linktype = *links.first().ok_or(bad.clone())?;
                each(Frame {
                    linktype,
                    data: &rest[..n],
                    orig_len,
                });
                frames += 1;
            }
            _ => {}
        }
        at = end;
    }
    Ok(frames)
}
