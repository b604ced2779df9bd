// SPDX-License-Identifier: GPL-2.0

//! Link, IP and UDP layers: finds the RoCEv2 payload (UDP destination port 4791) of a frame.

use std::net::{
    IpAddr,
    Ipv4Addr,
    Ipv6Addr, //
};

/// UDP destination port of RoCEv2.
pub const ROCE_PORT: u16 = 4791;

/// `LINKTYPE_NULL` (BSD loopback).
pub const LINKTYPE_NULL: u32 = 0;
/// `LINKTYPE_ETHERNET`.
pub const LINKTYPE_ETHERNET: u32 = 1;
/// `LINKTYPE_RAW`.
pub const LINKTYPE_RAW: u32 = 101;
/// `LINKTYPE_LINUX_SLL` (`tcpdump -i any`).
pub const LINKTYPE_LINUX_SLL: u32 = 113;
/// `LINKTYPE_IPV4`.
pub const LINKTYPE_IPV4: u32 = 228;
/// `LINKTYPE_IPV6`.
pub const LINKTYPE_IPV6: u32 = 229;
/// `LINKTYPE_LINUX_SLL2` (`tcpdump -i any`, newer libpcap).
pub const LINKTYPE_LINUX_SLL2: u32 = 276;

/// The UDP payload of a RoCEv2 packet.
#[derive(Clone, Copy, Debug)]
pub struct Roce<'a> {
    /// IP source address.
    pub src: IpAddr,
    /// IP destination address.
    pub dst: IpAddr,
    /// The captured part of the UDP payload (BTH onwards).
    pub payload: &'a [u8],
    /// Length of the UDP payload on the wire, from the UDP length field.
    pub wire_len: usize,
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

/// The RoCEv2 packet in `data` (a frame of link type `linktype`), or `None` for anything else.
pub fn roce(linktype: u32, data: &[u8]) -> Option<Roce<'_>> {
    let (ethertype, ip) = match linktype {
        LINKTYPE_ETHERNET => {
            let mut at = 12;
            let mut t = be16(data, at)?;
            // 802.1Q and 802.1ad tags.
            while t == 0x8100 || t == 0x88a8 {
                at += 4;
                t = be16(data, at)?;
            }
            (t, data.get(at + 2..)?)
        }
        LINKTYPE_LINUX_SLL => (be16(data, 14)?, data.get(16..)?),
        LINKTYPE_LINUX_SLL2 => (be16(data, 0)?, data.get(20..)?),
        LINKTYPE_RAW | LINKTYPE_IPV4 | LINKTYPE_IPV6 | 12 | 14 => match data.first()? >> 4 {
            4 => (0x0800, data),
            6 => (0x86dd, data),
            _ => return None,
        },
        LINKTYPE_NULL => {
            let af = u32::from_ne_bytes(data.get(..4)?.try_into().ok()?);
            let af = if af > 0xffff { af.swap_bytes() } else { af };
            match af {
                2 => (0x0800, data.get(4..)?),
                24 | 28 | 30 => (0x86dd, data.get(4..)?),
                _ => return None,
            }
        }
        _ => return None,
    };
    let (src, dst, udp) = match ethertype {
        0x0800 => ipv4(ip)?,
        0x86dd => ipv6(ip)?,
        _ => return None,
    };
    if be16(udp, 2)? != ROCE_PORT {
        return None;
    }
    let wire_len = usize::from(be16(udp, 4)?).checked_sub(8)?;
    let rest = udp.get(8..)?;
    let payload = &rest[..rest.len().min(wire_len)];
    Some(Roce {
        src,
        dst,
        payload,
        wire_len,
    })
}

/// Source, destination and the UDP datagram of an IPv4 packet that carries UDP.
fn ipv4(ip: &[u8]) -> Option<(IpAddr, IpAddr, &[u8])> {
    let ihl = usize::from(ip.first()? & 0x0f) * 4;
    // Fragments other than a whole datagram are not RoCE: rxe never fragments.
    if be16(ip, 6)? & 0x3fff != 0 || ip.get(9)? != &17 || ihl < 20 {
        return None;
    }
    let src: [u8; 4] = ip.get(12..16)?.try_into().ok()?;
    let dst: [u8; 4] = ip.get(16..20)?.try_into().ok()?;
    Some((
        Ipv4Addr::from(src).into(),
        Ipv4Addr::from(dst).into(),
        ip.get(ihl..)?,
    ))
}

/// Source, destination and the UDP datagram of an IPv6 packet that carries UDP.
fn ipv6(ip: &[u8]) -> Option<(IpAddr, IpAddr, &[u8])> {
    let src: [u8; 16] = ip.get(8..24)?.try_into().ok()?;
    let dst: [u8; 16] = ip.get(24..40)?.try_into().ok()?;
    let mut next = *ip.get(6)?;
    let mut at = 40usize;
    // Hop-by-hop, routing and destination options; a fragment header is not RoCE.
    // Each extension header is at least 8 bytes, so the packet bounds the loop.
    while matches!(next, 0 | 43 | 60) {
        next = *ip.get(at)?;
        at += (usize::from(*ip.get(at + 1)?) + 1) * 8;
    }
    if next != 17 {
        return None;
    }
    Some((
        Ipv6Addr::from(src).into(),
        Ipv6Addr::from(dst).into(),
        ip.get(at..)?,
    ))
}
