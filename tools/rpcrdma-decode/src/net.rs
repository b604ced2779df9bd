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

/// TCP port of NFS over RDMA (iWARP connections, as siw makes them, use it as a TCP port).
pub const NFS_RDMA_PORT: u16 = 20049;

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

/// A TCP segment to or from port [`NFS_RDMA_PORT`].
#[derive(Clone, Copy, Debug)]
pub struct Tcp<'a> {
    /// IP source address.
    pub src: IpAddr,
    /// IP destination address.
    pub dst: IpAddr,
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// Sequence number.
    pub seq: u32,
    /// Whether SYN is set.
    pub syn: bool,
    /// The captured part of the segment's data.
    pub payload: &'a [u8],
    /// Length of the segment's data on the wire.
    pub wire_len: usize,
}

/// What a frame carries, as far as the decoder cares.
#[derive(Clone, Copy, Debug)]
pub enum Transport<'a> {
    /// A RoCEv2 packet.
    Roce(Roce<'a>),
    /// A TCP segment of an NFS/RDMA (iWARP) connection.
    Tcp(Tcp<'a>),
}

/// The big-endian `u16` at `at`.
fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

/// The big-endian `u32` at `at`.
fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// The RoCEv2 packet or NFS/RDMA TCP segment in `data` (a frame of link type `linktype`), or
/// `None` for anything else.
pub fn parse(linktype: u32, data: &[u8]) -> Option<Transport<'_>> {
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
    let ip = match ethertype {
        0x0800 => ipv4(ip)?,
        0x86dd => ipv6(ip)?,
        _ => return None,
    };
    match ip.proto {
        17 => udp(&ip),
        6 => tcp(&ip),
        _ => None,
    }
}

/// An IP packet's addresses and upper-layer protocol data.
struct Ip<'a> {
    src: IpAddr,
    dst: IpAddr,
    proto: u8,
    /// Captured upper-layer bytes (at most `wire_len`).
    l4: &'a [u8],
    /// Upper-layer length on the wire, from the IP length field.
    wire_len: usize,
}

/// A RoCEv2 packet, if the UDP datagram goes to port 4791.
fn udp<'a>(ip: &Ip<'a>) -> Option<Transport<'a>> {
    let udp = ip.l4;
    if be16(udp, 2)? != ROCE_PORT {
        return None;
    }
    let wire_len = usize::from(be16(udp, 4)?).checked_sub(8)?;
    let rest = udp.get(8..)?;
    let payload = &rest[..rest.len().min(wire_len)];
    Some(Transport::Roce(Roce {
        src: ip.src,
        dst: ip.dst,
        payload,
        wire_len,
    }))
}

/// A TCP segment, if either port is 20049.
fn tcp<'a>(ip: &Ip<'a>) -> Option<Transport<'a>> {
    let t = ip.l4;
    let sport = be16(t, 0)?;
    let dport = be16(t, 2)?;
    if sport != NFS_RDMA_PORT && dport != NFS_RDMA_PORT {
        return None;
    }
    let seq = be32(t, 4)?;
    let off = usize::from(t.get(12)? >> 4) * 4;
    let syn = t.get(13)? & 0x02 != 0;
    let wire_len = ip.wire_len.checked_sub(off)?;
    let payload = t.get(off..)?;
    Some(Transport::Tcp(Tcp {
        src: ip.src,
        dst: ip.dst,
        sport,
        dport,
        seq,
        syn,
        payload,
        wire_len,
    }))
}

/// The addresses and upper layer of an IPv4 packet.
fn ipv4(ip: &[u8]) -> Option<Ip<'_>> {
    let ihl = usize::from(ip.first()? & 0x0f) * 4;
    // Fragments other than a whole datagram are not decoded: rxe never fragments.
    if be16(ip, 6)? & 0x3fff != 0 || ihl < 20 {
        return None;
    }
    let total = usize::from(be16(ip, 2)?);
    let src: [u8; 4] = ip.get(12..16)?.try_into().ok()?;
    let dst: [u8; 4] = ip.get(16..20)?.try_into().ok()?;
    let wire_len = total.checked_sub(ihl)?;
    let l4 = ip.get(ihl..)?;
    Some(Ip {
        src: Ipv4Addr::from(src).into(),
        dst: Ipv4Addr::from(dst).into(),
        proto: *ip.get(9)?,
        l4: &l4[..l4.len().min(wire_len)],
        wire_len,
    })
}

/// The addresses and upper layer of an IPv6 packet.
fn ipv6(ip: &[u8]) -> Option<Ip<'_>> {
    let src: [u8; 16] = ip.get(8..24)?.try_into().ok()?;
    let dst: [u8; 16] = ip.get(24..40)?.try_into().ok()?;
    let mut next = *ip.get(6)?;
    let end = 40 + usize::from(be16(ip, 4)?);
    let mut at = 40usize;
    // Hop-by-hop, routing and destination options; a fragment header is not decoded.
    // Each extension header is at least 8 bytes, so the packet bounds the loop.
    while matches!(next, 0 | 43 | 60) {
        next = *ip.get(at)?;
        at += (usize::from(*ip.get(at + 1)?) + 1) * 8;
    }
    let wire_len = end.checked_sub(at)?;
    let l4 = ip.get(at..)?;
    Some(Ip {
        src: Ipv6Addr::from(src).into(),
        dst: Ipv6Addr::from(dst).into(),
        proto: next,
        l4: &l4[..l4.len().min(wire_len)],
        wire_len,
    })
}
