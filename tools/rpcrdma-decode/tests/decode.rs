// SPDX-License-Identifier: GPL-2.0

//! Captures built here, around headers that `rpcrdma_proto`'s own encoders make, decoded by
//! the library and by the binary.

use rpcrdma_decode::{
    decode,
    Totals, //
};
use rpcrdma_proto::{
    v1::{
        self,
        Lists,
        Proc,
        ReadSegment,
        Segment, //
    },
    v2::{
        self,
        ErrorBody,
        Flags,
        Prefix, //
    },
    v2msg,
    xdr::Encoder,
};
use std::net::IpAddr;

const CLIENT: [u8; 4] = [10, 0, 0, 1];
const SERVER: [u8; 4] = [10, 0, 0, 2];
const CLIENT6: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
const SERVER6: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
const SERVER_QP: u32 = 0x11;
const CLIENT_QP: u32 = 0x12;

/// RC opcodes used below.
const SEND_FIRST: u8 = 0x00;
const SEND_MIDDLE: u8 = 0x01;
const SEND_LAST: u8 = 0x02;
const SEND_ONLY: u8 = 0x04;
const SEND_LAST_INV: u8 = 0x16;
const SEND_ONLY_INV: u8 = 0x17;
const WRITE_ONLY: u8 = 0x0a;
const READ_REQUEST: u8 = 0x0c;
const READ_RESPONSE_ONLY: u8 = 0x10;
const ACK: u8 = 0x11;

/// A classic pcap file (little-endian, microseconds) being built.
struct Pcap {
    buf: Vec<u8>,
}

impl Pcap {
    fn new(linktype: u32) -> Self {
        let mut buf = Vec::new();
        buf.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        buf.extend_from_slice(&2u16.to_le_bytes());
        buf.extend_from_slice(&4u16.to_le_bytes());
        buf.extend_from_slice(&[0; 8]);
        buf.extend_from_slice(&65535u32.to_le_bytes());
        buf.extend_from_slice(&linktype.to_le_bytes());
        Pcap { buf }
    }

    /// Adds a frame of which only the first `caplen` bytes were captured.
    fn frame_cut(&mut self, f: &[u8], caplen: usize) -> &mut Self {
        let caplen = caplen.min(f.len());
        self.buf.extend_from_slice(&[0; 8]);
        self.buf.extend_from_slice(&(caplen as u32).to_le_bytes());
        self.buf.extend_from_slice(&(f.len() as u32).to_le_bytes());
        self.buf.extend_from_slice(&f[..caplen]);
        self
    }

    fn frame(&mut self, f: &[u8]) -> &mut Self {
        self.frame_cut(f, f.len())
    }
}

/// The same frames as a pcapng file (one section, one Ethernet interface, Enhanced Packet
/// Blocks).
fn pcapng(frames: &[Vec<u8>]) -> Vec<u8> {
    fn block(out: &mut Vec<u8>, btype: u32, body: &[u8]) {
        let mut body = body.to_vec();
        while body.len() % 4 != 0 {
            body.push(0);
        }
        let len = (body.len() + 12) as u32;
        out.extend_from_slice(&btype.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&body);
        out.extend_from_slice(&len.to_le_bytes());
    }
    let mut out = Vec::new();
    let mut shb = Vec::new();
    shb.extend_from_slice(&0x1a2b_3c4du32.to_le_bytes());
    shb.extend_from_slice(&1u16.to_le_bytes());
    shb.extend_from_slice(&0u16.to_le_bytes());
    shb.extend_from_slice(&u64::MAX.to_le_bytes());
    block(&mut out, 0x0a0d_0d0a, &shb);
    let mut idb = Vec::new();
    idb.extend_from_slice(&1u16.to_le_bytes());
    idb.extend_from_slice(&0u16.to_le_bytes());
    idb.extend_from_slice(&0u32.to_le_bytes());
    block(&mut out, 1, &idb);
    for f in frames {
        let mut epb = Vec::new();
        epb.extend_from_slice(&0u32.to_le_bytes());
        epb.extend_from_slice(&[0; 8]);
        epb.extend_from_slice(&(f.len() as u32).to_le_bytes());
        epb.extend_from_slice(&(f.len() as u32).to_le_bytes());
        epb.extend_from_slice(f);
        block(&mut out, 6, &epb);
    }
    out
}

/// An Ethernet / IPv4 or IPv6 / UDP 4791 / BTH frame with extended headers `ext` and
/// `payload` (padded to four bytes, zero ICRC).
fn roce(
    src: IpAddr,
    dst: IpAddr,
    opcode: u8,
    dqpn: u32,
    psn: u32,
    ext: &[u8],
    payload: &[u8],
) -> Vec<u8> {
    let pad = (4 - payload.len() % 4) % 4;
    let mut ib = vec![opcode, (pad as u8) << 4, 0xff, 0xff];
    ib.extend_from_slice(&dqpn.to_be_bytes());
    ib.extend_from_slice(&(psn & 0x00ff_ffff).to_be_bytes());
    ib.extend_from_slice(ext);
    ib.extend_from_slice(payload);
    ib.extend(std::iter::repeat_n(0, pad + 4));
    let mut udp = Vec::new();
    udp.extend_from_slice(&49152u16.to_be_bytes());
    udp.extend_from_slice(&4791u16.to_be_bytes());
    udp.extend_from_slice(&((ib.len() + 8) as u16).to_be_bytes());
    udp.extend_from_slice(&[0, 0]);
    udp.extend_from_slice(&ib);
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            f.extend_from_slice(&0x0800u16.to_be_bytes());
            f.extend_from_slice(&[0x45, 0]);
            f.extend_from_slice(&((udp.len() + 20) as u16).to_be_bytes());
            f.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0]);
            f.extend_from_slice(&s.octets());
            f.extend_from_slice(&d.octets());
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            f.extend_from_slice(&0x86ddu16.to_be_bytes());
            f.extend_from_slice(&[0x60, 0, 0, 0]);
            f.extend_from_slice(&(udp.len() as u16).to_be_bytes());
            f.extend_from_slice(&[17, 64]);
            f.extend_from_slice(&s.octets());
            f.extend_from_slice(&d.octets());
        }
        _ => unreachable!(),
    }
    f.extend_from_slice(&udp);
    f
}

fn c2s(opcode: u8, psn: u32, ext: &[u8], payload: &[u8]) -> Vec<u8> {
    roce(
        CLIENT.into(),
        SERVER.into(),
        opcode,
        SERVER_QP,
        psn,
        ext,
        payload,
    )
}

fn s2c(opcode: u8, psn: u32, ext: &[u8], payload: &[u8]) -> Vec<u8> {
    roce(
        SERVER.into(),
        CLIENT.into(),
        opcode,
        CLIENT_QP,
        psn,
        ext,
        payload,
    )
}

/// An RPC Call header (RFC 5531) for NFS version 4 procedure 1, AUTH_NONE, and some args.
fn rpc_call(xid: u32, args: usize) -> Vec<u8> {
    let mut v = Vec::new();
    for w in [xid, 0, 2, 100003, 4, 1, 0, 0, 0, 0] {
        v.extend_from_slice(&w.to_be_bytes());
    }
    v.resize(v.len() + args, 0xab);
    v
}

/// An accepted, successful RPC Reply header with `res` bytes of results.
fn rpc_reply(xid: u32, res: usize) -> Vec<u8> {
    let mut v = Vec::new();
    for w in [xid, 1, 0, 0, 0, 0] {
        v.extend_from_slice(&w.to_be_bytes());
    }
    v.resize(v.len() + res, 0xcd);
    v
}

fn cat(a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut v = a.to_vec();
    v.extend_from_slice(b);
    v
}

/// Runs the decoder; returns the totals and the output lines.
///
/// With `RPCRDMA_DECODE_DUMP=DIR`, the capture is also written to `DIR/<test name>-N.pcap`,
/// for a look with tshark or Wireshark.
fn run(file: &[u8]) -> (Totals, Vec<String>) {
    if let Ok(dir) = std::env::var("RPCRDMA_DECODE_DUMP") {
        let name = std::thread::current()
            .name()
            .unwrap_or("capture")
            .to_string();
        let ext = if file.starts_with(&[0x0a, 0x0d, 0x0d, 0x0a]) {
            "pcapng"
        } else {
            "pcap"
        };
        let path = (0..)
            .map(|i| std::path::Path::new(&dir).join(format!("{name}-{i}.{ext}")))
            .find(|p| !p.exists())
            .unwrap();
        std::fs::write(path, file).unwrap();
    }
    let mut out = Vec::new();
    let t = decode(file, &mut out).expect("capture decodes");
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    for l in &lines {
        println!("{l}");
    }
    assert_eq!(
        lines.last().unwrap(),
        &t.to_string(),
        "the last line gives the totals"
    );
    (t, lines)
}

const WRITE_SEG: Segment = Segment {
    handle: 0x1234,
    length: 8192,
    offset: 0xffff_8880_0000_1000,
};
const REPLY_SEG: Segment = Segment {
    handle: 0x5678,
    length: 4096,
    offset: 0x2000,
};
const READ_SEG: ReadSegment = ReadSegment {
    position: 40,
    segment: Segment {
        handle: 0x9abc,
        length: 65536,
        offset: 0x3000,
    },
};

/// A v1 Call with a Read chunk, a Write chunk and a Reply chunk, and its reply that used the
/// Write chunk, with the RDMA READ and WRITE traffic between them.
fn v1_exchange() -> Vec<Vec<u8>> {
    let mut hdr = [0u8; 256];
    let writes: [&[Segment]; 1] = [&[WRITE_SEG]];
    let lists = Lists {
        reads: &[READ_SEG],
        writes: &writes,
        reply: Some(&[REPLY_SEG]),
    };
    let n = v1::encode(&mut Encoder::new(&mut hdr), 0xa1, 128, Proc::Msg, &lists).unwrap();
    let call = cat(&hdr[..n], &rpc_call(0xa1, 0));
    let decoded = v1::Header::decode(&call, &v1::Limits::UNLIMITED).unwrap();
    let chunks = *decoded.header.body.chunks().unwrap();
    let mut rhdr = [0u8; 256];
    let n = v1::encode_reply(
        &mut Encoder::new(&mut rhdr),
        0xa1,
        32,
        &chunks,
        &[5000],
        None,
    )
    .unwrap();
    let reply = cat(&rhdr[..n], &rpc_reply(0xa1, 8));
    let mut reth_read = 0x3000u64.to_be_bytes().to_vec();
    reth_read.extend_from_slice(&0x9abcu32.to_be_bytes());
    reth_read.extend_from_slice(&65536u32.to_be_bytes());
    let mut reth_write = 0xffff_8880_0000_1000u64.to_be_bytes().to_vec();
    reth_write.extend_from_slice(&0x1234u32.to_be_bytes());
    reth_write.extend_from_slice(&5000u32.to_be_bytes());
    vec![
        c2s(SEND_ONLY, 100, &[], &call),
        s2c(ACK, 100, &[0, 0, 0, 1], &[]),
        s2c(READ_REQUEST, 500, &reth_read, &[]),
        c2s(READ_RESPONSE_ONLY, 500, &[0, 0, 0, 2], &[0x55; 64]),
        s2c(WRITE_ONLY, 501, &reth_write, &[0x66; 64]),
        s2c(SEND_ONLY_INV, 502, &0x5678u32.to_be_bytes(), &reply),
    ]
}

#[test]
fn v1_call_and_reply_with_chunks() {
    let mut p = Pcap::new(1);
    for f in v1_exchange() {
        p.frame(&f);
    }
    let (t, lines) = run(&p.buf);
    assert_eq!((t.frames, t.v1, t.v2, t.undecodable), (6, 2, 0, 0));
    assert_eq!((t.reads, t.writes, t.read_responses, t.acks), (1, 1, 1, 1));
    let call = &lines[0];
    assert!(
        call.starts_with(
            "frame 1 10.0.0.1 > 10.0.0.2 qp 0x11 v1 RDMA_MSG xid 0x000000a1 credits 128"
        ),
        "{call}"
    );
    assert!(
        call.contains("reads [pos 40: 0x9abc:65536@0x3000]"),
        "{call}"
    );
    assert!(
        call.contains("writes [0x1234:8192@0xffff888000001000]"),
        "{call}"
    );
    assert!(call.contains("reply [0x5678:4096@0x2000]"), "{call}");
    assert!(
        call.ends_with("| CALL xid 0x000000a1 prog 100003 (nfs) v4 proc 1"),
        "{call}"
    );
    assert!(
        lines[1].contains("RDMA READ rkey 0x9abc va 0x3000 len 65536"),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].contains("RDMA WRITE rkey 0x1234 va 0xffff888000001000 len 5000"),
        "{}",
        lines[2]
    );
    let reply = &lines[3];
    assert!(
        reply.starts_with(
            "frame 6 10.0.0.2 > 10.0.0.1 qp 0x12 v1 RDMA_MSG xid 0x000000a1 credits 32"
        ),
        "{reply}"
    );
    // The reply echoes the Write chunk with the length actually written.
    assert!(
        reply.contains("writes [0x1234:5000@0xffff888000001000]"),
        "{reply}"
    );
    assert!(!reply.contains("reply ["), "{reply}");
    assert!(
        reply.ends_with("| REPLY xid 0x000000a1 accepted SUCCESS"),
        "{reply}"
    );
    assert!(lines[4].ends_with("0 undecodable; 1 RDMA WRITE, 1 RDMA READ, 1 READ response, 1 ACK, 0 retransmitted, 0 other packets"), "{}", lines[4]);
}

#[test]
fn pcapng_and_byte_swapped_pcap() {
    let frames = v1_exchange();
    let (t, _) = run(&pcapng(&frames));
    assert_eq!((t.frames, t.v1, t.undecodable), (6, 2, 0));
    // A big-endian classic pcap of the same frames, nanosecond magic.
    let mut be = Vec::new();
    be.extend_from_slice(&0xa1b2_3c4du32.to_be_bytes());
    be.extend_from_slice(&2u16.to_be_bytes());
    be.extend_from_slice(&4u16.to_be_bytes());
    be.extend_from_slice(&[0; 8]);
    be.extend_from_slice(&65535u32.to_be_bytes());
    be.extend_from_slice(&1u32.to_be_bytes());
    for f in &frames {
        be.extend_from_slice(&[0; 8]);
        be.extend_from_slice(&(f.len() as u32).to_be_bytes());
        be.extend_from_slice(&(f.len() as u32).to_be_bytes());
        be.extend_from_slice(f);
    }
    let (t, _) = run(&be);
    assert_eq!((t.frames, t.v1, t.undecodable), (6, 2, 0));
}

#[test]
fn v2_call_and_reply() {
    let mut hdr = [0u8; 256];
    let writes: [&[Segment]; 1] = [&[WRITE_SEG]];
    let lists = Lists {
        reads: &[],
        writes: &writes,
        reply: Some(&[REPLY_SEG]),
    };
    let credit = v2msg::credit_word(64);
    let n = v2msg::encode_call(
        &mut Encoder::new(&mut hdr),
        (0xb2, credit),
        Proc::Msg,
        &lists,
        0,
    )
    .unwrap();
    let call = cat(&hdr[..n], &rpc_call(0xb2, 12));
    let v2msg::Inbound::Call(c) = v2msg::decode_call(&call, &v1::Limits::UNLIMITED).unwrap() else {
        panic!("not a Call");
    };
    let chunks = c.chunks(&call);
    // A reply sent through the Reply chunk: RDMA2_NOMSG.
    let mut rhdr = [0u8; 256];
    let n = v2msg::encode_reply(
        &mut Encoder::new(&mut rhdr),
        0xb2,
        v2msg::credit_word(32),
        &chunks,
        &[0],
        Some(300),
    )
    .unwrap();
    let reply = rhdr[..n].to_vec();
    let mut p = Pcap::new(1);
    p.frame(&c2s(SEND_ONLY, 7, &[], &call));
    p.frame(&s2c(SEND_ONLY, 9, &[], &reply));
    let (t, lines) = run(&p.buf);
    assert_eq!((t.v1, t.v2, t.undecodable), (0, 2, 0));
    assert!(lines[0].contains("v2 RDMA2_MSG xid 0x000000b2 credits 64/64 flags - writes [0x1234:8192@0xffff888000001000] reply [0x5678:4096@0x2000] | CALL xid 0x000000b2 prog 100003 (nfs) v4 proc 1"), "{}", lines[0]);
    assert!(lines[1].contains("v2 RDMA2_NOMSG xid 0x000000b2 credits 32/32 flags RESPONSE writes [0x1234:0@0xffff888000001000] reply [0x5678:300@0x2000]"), "{}", lines[1]);
    assert!(
        lines[2].contains("0 v1, 2 v2, 0 undecodable"),
        "{}",
        lines[2]
    );
}

#[test]
fn version_errors_v1_and_v2() {
    // A v2 Call refused by a v1-only server, and by a v2 server with RDMA2_ERROR ERR_VERS.
    let mut hdr = [0u8; 64];
    let n = v2msg::encode_call(
        &mut Encoder::new(&mut hdr),
        (0xc3, v2msg::credit_word(8)),
        Proc::Msg,
        &Lists::default(),
        0,
    )
    .unwrap();
    let call = cat(&hdr[..n], &rpc_call(0xc3, 0));
    let mut e1 = [0u8; 64];
    let n1 = v1::encode_error(
        &mut Encoder::new(&mut e1),
        0xc3,
        1,
        8,
        &v1::ErrorBody::OUR_VERS,
    )
    .unwrap();
    let mut e2 = [0u8; 64];
    let n2 = v2msg::encode_error(
        &mut e2,
        0xc3,
        v2msg::credit_word(8),
        ErrorBody::Vers { low: 1, high: 2 },
    )
    .unwrap();
    let mut p = Pcap::new(1);
    p.frame(&c2s(SEND_ONLY, 1, &[], &call));
    p.frame(&s2c(SEND_ONLY, 1, &[], &e1[..n1]));
    p.frame(&s2c(SEND_ONLY, 2, &[], &e2[..n2]));
    let (t, lines) = run(&p.buf);
    assert_eq!((t.v1, t.v2, t.undecodable), (1, 2, 0));
    assert!(
        lines[0].contains("v2 RDMA2_MSG xid 0x000000c3 credits 8/8 flags - no chunks | CALL"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].ends_with("v1 RDMA_ERROR xid 0x000000c3 credits 8 ERR_VERS 1-1"),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].ends_with("v2 RDMA2_ERROR xid 0x000000c3 credits 8/8 flags RESPONSE ERR_VERS 1-2"),
        "{}",
        lines[2]
    );
}

#[test]
fn message_split_over_send_first_middle_last_ipv6() {
    let mut hdr = [0u8; 256];
    let n = v2msg::encode_call(
        &mut Encoder::new(&mut hdr),
        (0xd4, v2msg::credit_word(16)),
        Proc::Msg,
        &Lists::default(),
        0,
    )
    .unwrap();
    let call = cat(&hdr[..n], &rpc_call(0xd4, 3000));
    let (a, rest) = call.split_at(1024);
    let (b, c) = rest.split_at(1024);
    let (s, d) = (IpAddr::from(CLIENT6), IpAddr::from(SERVER6));
    let other = roce(d, s, SEND_ONLY, CLIENT_QP, 77, &[], &[0; 8]);
    let mut p = Pcap::new(1);
    p.frame(&roce(s, d, SEND_FIRST, SERVER_QP, 10, &[], a));
    // A packet of another direction in between does not disturb the reassembly; a
    // retransmitted MIDDLE is dropped.
    p.frame(&other);
    p.frame(&roce(s, d, SEND_MIDDLE, SERVER_QP, 11, &[], b));
    p.frame(&roce(s, d, SEND_MIDDLE, SERVER_QP, 11, &[], b));
    p.frame(&roce(
        s,
        d,
        SEND_LAST_INV,
        SERVER_QP,
        12,
        &[0, 0, 0x12, 0x34],
        c,
    ));
    let (t, lines) = run(&p.buf);
    assert_eq!(t.retransmits, 1);
    // The 8-byte message to the client is undecodable.
    assert_eq!((t.v2, t.undecodable), (1, 1));
    let msg = lines.iter().find(|l| l.contains("RDMA2_MSG")).unwrap();
    assert!(
        msg.starts_with(
            "frames 1-5 (3) fd00::1 > fd00::2 qp 0x11 v2 RDMA2_MSG xid 0x000000d4 credits 16/16"
        ),
        "{msg}"
    );
    assert!(
        msg.ends_with("| CALL xid 0x000000d4 prog 100003 (nfs) v4 proc 1"),
        "{msg}"
    );
}

#[test]
fn v2_continuation_with_more() {
    let pre = |more| Prefix {
        xid: 0xe5,
        credit: v2::credit_word(4, 4),
        flags: Flags {
            response: false,
            more,
        },
    };
    let body = v2::Outgoing::Msg(v2::Chunks::default());
    let mut h1 = [0u8; 64];
    let n1 = v2::encode(&mut h1, &pre(true), &body).unwrap();
    let mut h2 = [0u8; 64];
    let n2 = v2::encode(&mut h2, &pre(false), &body).unwrap();
    let mut p = Pcap::new(1);
    p.frame(&c2s(
        SEND_ONLY,
        1,
        &[],
        &cat(&h1[..n1], &rpc_call(0xe5, 100)),
    ));
    p.frame(&c2s(SEND_ONLY, 2, &[], &cat(&h2[..n2], &[0xab; 200])));
    let (t, lines) = run(&p.buf);
    assert_eq!((t.v2, t.undecodable), (2, 0));
    assert!(
        lines[0].contains("flags MORE no chunks | CALL xid 0x000000e5"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains("flags - (continuation) no chunks | 200 more RPC bytes"),
        "{}",
        lines[1]
    );
}

#[test]
fn truncated_headers_are_undecodable() {
    let mut hdr = [0u8; 256];
    let writes: [&[Segment]; 1] = [&[WRITE_SEG]];
    let lists = Lists {
        reads: &[],
        writes: &writes,
        reply: None,
    };
    let n = v1::encode(&mut Encoder::new(&mut hdr), 0xf6, 1, Proc::Msg, &lists).unwrap();
    let n2 = v2msg::encode_call(
        &mut Encoder::new(&mut [0u8; 256]),
        (0xf7, 1),
        Proc::Msg,
        &lists,
        0,
    )
    .unwrap();
    let mut h2 = [0u8; 256];
    v2msg::encode_call(&mut Encoder::new(&mut h2), (0xf7, 1), Proc::Msg, &lists, 0).unwrap();
    let mut p = Pcap::new(1);
    // The v1 header cut in the middle of its Write chunk, the v2 one before its Reply chunk,
    // 12 bytes, an unknown version, and a SEND_FIRST never completed.
    p.frame(&c2s(SEND_ONLY, 1, &[], &hdr[..n - 12]));
    p.frame(&c2s(SEND_ONLY, 2, &[], &h2[..n2 - 4]));
    p.frame(&c2s(SEND_ONLY, 3, &[], &hdr[..12]));
    p.frame(&c2s(
        SEND_ONLY,
        4,
        &[],
        &[0, 0, 0, 1, 0, 0, 0, 7, 0, 0, 0, 1, 0, 0, 0, 0],
    ));
    p.frame(&c2s(SEND_FIRST, 5, &[], &hdr[..n]));
    let (t, lines) = run(&p.buf);
    assert_eq!((t.v1, t.v2, t.undecodable), (0, 0, 5));
    assert!(
        lines[0].contains("UNDECODABLE: v1 xid 0x000000f6"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains("UNDECODABLE: v2 xid 0x000000f7"),
        "{}",
        lines[1]
    );
    assert!(lines[2].contains("UNDECODABLE: 12 bytes"), "{}", lines[2]);
    assert!(
        lines[3].contains("UNDECODABLE: xid 0x00000001: unknown version 7"),
        "{}",
        lines[3]
    );
    assert!(
        lines[4].contains("UNDECODABLE: incomplete message (capture ended before SEND_LAST)"),
        "{}",
        lines[4]
    );
    assert!(lines[5].contains("5 undecodable"), "{}", lines[5]);
}

#[test]
fn non_roce_frames_are_skipped() {
    let mut p = Pcap::new(1);
    // ARP, then a UDP datagram to port 53, then one v1 message, then a short Ethernet frame.
    let mut arp = vec![0xff; 12];
    arp.extend_from_slice(&0x0806u16.to_be_bytes());
    arp.resize(60, 0);
    let mut dns = c2s(SEND_ONLY, 1, &[], &[0; 32]);
    dns[36..38].copy_from_slice(&53u16.to_be_bytes());
    let mut hdr = [0u8; 64];
    let n = v1::encode(
        &mut Encoder::new(&mut hdr),
        0x42,
        3,
        Proc::Msg,
        &Lists::default(),
    )
    .unwrap();
    p.frame(&arp).frame(&dns);
    p.frame(&c2s(SEND_ONLY, 1, &[], &cat(&hdr[..n], &rpc_call(0x42, 0))));
    p.frame(&[0u8; 5]);
    let (t, lines) = run(&p.buf);
    assert_eq!((t.frames, t.not_roce, t.v1, t.undecodable), (4, 3, 1, 0));
    assert_eq!(lines.len(), 2);
}

#[test]
fn snap_length_cut_is_noted() {
    let mut hdr = [0u8; 64];
    let n = v1::encode(
        &mut Encoder::new(&mut hdr),
        0x43,
        3,
        Proc::Msg,
        &Lists::default(),
    )
    .unwrap();
    let f = c2s(SEND_ONLY, 1, &[], &cat(&hdr[..n], &rpc_call(0x43, 4000)));
    let mut p = Pcap::new(1);
    p.frame_cut(&f, 200);
    let (t, lines) = run(&p.buf);
    assert_eq!((t.v1, t.undecodable), (1, 0));
    assert!(
        lines[0].ends_with("[cut by the capture's snap length]"),
        "{}",
        lines[0]
    );
}

#[test]
fn binary_exit_status() {
    let dir = std::env::temp_dir().join(format!("rpcrdma-decode-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.pcap");
    let bad = dir.join("bad.pcap");
    let mut p = Pcap::new(1);
    for f in v1_exchange() {
        p.frame(&f);
    }
    std::fs::write(&good, &p.buf).unwrap();
    p.frame(&c2s(SEND_ONLY, 200, &[], &[0; 8]));
    std::fs::write(&bad, &p.buf).unwrap();
    let exe = env!("CARGO_BIN_EXE_rpcrdma-decode");
    let out = std::process::Command::new(exe).arg(&good).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let out = std::process::Command::new(exe).arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.lines()
            .last()
            .unwrap()
            .contains("2 v1, 0 v2, 1 undecodable"),
        "{text}"
    );
    std::fs::write(&bad, b"not a capture").unwrap();
    let out = std::process::Command::new(exe).arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn incomplete_sequences_are_undecodable() {
    let mut hdr = [0u8; 64];
    let n = v1::encode(
        &mut Encoder::new(&mut hdr),
        0x44,
        3,
        Proc::Msg,
        &Lists::default(),
    )
    .unwrap();
    let msg = cat(&hdr[..n], &rpc_call(0x44, 100));
    let (a, b) = msg.split_at(64);
    let mut p = Pcap::new(1);
    // The capture began in the middle of a message; then a SEND_FIRST is followed by another
    // SEND_FIRST (the first message never ended); then a complete one.
    p.frame(&c2s(SEND_MIDDLE, 1, &[], a));
    p.frame(&c2s(SEND_LAST, 2, &[], b));
    p.frame(&c2s(SEND_FIRST, 3, &[], a));
    p.frame(&c2s(SEND_FIRST, 4, &[], a));
    p.frame(&c2s(SEND_LAST, 5, &[], b));
    let (t, lines) = run(&p.buf);
    assert_eq!((t.v1, t.undecodable), (1, 2));
    assert!(lines[0].starts_with("frames 1-2 (2) 10.0.0.1 > 10.0.0.2 qp 0x11 UNDECODABLE: incomplete message (no SEND_FIRST"), "{}", lines[0]);
    assert!(lines[1].starts_with("frame 3 10.0.0.1 > 10.0.0.2 qp 0x11 UNDECODABLE: incomplete message (no SEND_LAST before the next SEND_FIRST)"), "{}", lines[1]);
    assert!(
        lines[2]
            .starts_with("frames 4-5 (2) 10.0.0.1 > 10.0.0.2 qp 0x11 v1 RDMA_MSG xid 0x00000044"),
        "{}",
        lines[2]
    );
}

/// A connection management MAD (UD SEND_ONLY to QP 1 with a DETH) with attribute `attr`.
fn cm(src: [u8; 4], dst: [u8; 4], attr: u16) -> Vec<u8> {
    let mut mad = vec![1, 7, 2, 3];
    mad.resize(256, 0);
    mad[16..18].copy_from_slice(&attr.to_be_bytes());
    let deth = [0x80, 0x01, 0, 0, 0, 0, 0, 1];
    roce(src.into(), dst.into(), 0x64, 1, 0, &deth, &mad)
}

#[test]
fn new_connection_restarts_psns() {
    let mut hdr = [0u8; 64];
    let n = v1::encode(
        &mut Encoder::new(&mut hdr),
        0x45,
        3,
        Proc::Msg,
        &Lists::default(),
    )
    .unwrap();
    let msg = cat(&hdr[..n], &rpc_call(0x45, 0));
    let mut p = Pcap::new(1);
    p.frame(&c2s(SEND_ONLY, 1000, &[], &msg));
    // The same PSN again, and one shortly before: retransmissions.
    p.frame(&c2s(SEND_ONLY, 1000, &[], &msg));
    p.frame(&c2s(SEND_ONLY, 990, &[], &msg));
    // A new connection reusing the QP number starts at a PSN "behind" the old one.
    p.frame(&cm(CLIENT, SERVER, 0x0010));
    p.frame(&cm(SERVER, CLIENT, 0x0013));
    p.frame(&c2s(SEND_ONLY, 500, &[], &msg));
    // Without a captured CM exchange, a PSN far behind is a new start too.
    p.frame(&c2s(SEND_ONLY, 0x00f0_0000, &[], &msg));
    let (t, lines) = run(&p.buf);
    assert_eq!((t.v1, t.retransmits, t.other, t.undecodable), (3, 2, 2, 0));
    assert!(lines[1].contains("qp 0x1 CM REQ qpn 0x0"), "{}", lines[1]);
    assert!(lines[2].contains("qp 0x1 CM REP qpn 0x0"), "{}", lines[2]);
}

/// An Ethernet / IPv4 / TCP frame of an NFS/RDMA connection (client port 40000, server 20049).
fn tcp(to_server: bool, seq: u32, syn: bool, payload: &[u8]) -> Vec<u8> {
    let (src, dst, sport, dport) = if to_server {
        (CLIENT, SERVER, 40000u16, 20049u16)
    } else {
        (SERVER, CLIENT, 20049, 40000)
    };
    let mut t = Vec::new();
    t.extend_from_slice(&sport.to_be_bytes());
    t.extend_from_slice(&dport.to_be_bytes());
    t.extend_from_slice(&seq.to_be_bytes());
    t.extend_from_slice(&[0; 4]);
    t.extend_from_slice(&[0x50, if syn { 0x02 } else { 0x18 }, 0xff, 0xff, 0, 0, 0, 0]);
    t.extend_from_slice(payload);
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00, 0x45, 0];
    f.extend_from_slice(&((t.len() + 20) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x40, 0, 64, 6, 0, 0]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&t);
    // Ethernet padding of a short frame, which the IP length excludes.
    f.resize(f.len().max(60), 0);
    f
}

/// An MPA request or reply of revision 2, CRC requested, enhanced mode: IRD/ORD, then (in
/// the request) the RPC-over-RDMA private data.
fn mpa(req: bool) -> Vec<u8> {
    let mut v = if req {
        b"MPA ID Req Frame".to_vec()
    } else {
        b"MPA ID Rep Frame".to_vec()
    };
    let pd = rpcrdma_proto::private_data::PrivateData::new(4096, 4096, true).encode();
    let len = if req { 4 + pd.len() } else { 4 };
    v.extend_from_slice(&[0x40 | 0x10, 2, 0, len as u8, 0x80, 0x10, 0x80, 0x10]);
    if req {
        v.extend_from_slice(&pd);
    }
    v
}

/// An FPDU around a DDP segment: ULPDU length, the segment, pad, a zero CRC.
fn fpdu(ddp: &[u8]) -> Vec<u8> {
    let mut v = (ddp.len() as u16).to_be_bytes().to_vec();
    v.extend_from_slice(ddp);
    while v.len() % 4 != 0 {
        v.push(0);
    }
    v.extend_from_slice(&[0; 4]);
    v
}

/// An untagged DDP segment of RDMAP `opcode` on queue `qn`.
fn untagged(opcode: u8, last: bool, qn: u32, msn: u32, mo: u32, data: &[u8]) -> Vec<u8> {
    let mut v = vec![
        0x01 | if last { 0x40 } else { 0 },
        0x40 | opcode,
        0,
        0,
        0,
        0,
    ];
    for w in [qn, msn, mo] {
        v.extend_from_slice(&w.to_be_bytes());
    }
    v.extend_from_slice(data);
    v
}

/// A tagged DDP segment (RDMA Write, opcode 0, or Read Response, 2).
fn tagged(opcode: u8, last: bool, stag: u32, to: u64, data: &[u8]) -> Vec<u8> {
    let mut v = vec![0x81 | if last { 0x40 } else { 0 }, 0x40 | opcode];
    v.extend_from_slice(&stag.to_be_bytes());
    v.extend_from_slice(&to.to_be_bytes());
    v.extend_from_slice(data);
    v
}

#[test]
fn iwarp_siw_connection() {
    let writes: [&[Segment]; 1] = [&[WRITE_SEG]];
    let lists = Lists {
        reads: &[],
        writes: &writes,
        reply: None,
    };
    let mut hdr = [0u8; 256];
    let n = v2msg::encode_call(
        &mut Encoder::new(&mut hdr),
        (0x77, v2msg::credit_word(32)),
        Proc::Msg,
        &lists,
        0,
    )
    .unwrap();
    let call = cat(&hdr[..n], &rpc_call(0x77, 40));
    let v2msg::Inbound::Call(c) = v2msg::decode_call(&call, &v1::Limits::UNLIMITED).unwrap() else {
        panic!("not a Call");
    };
    let mut rhdr = [0u8; 256];
    let n = v2msg::encode_reply(
        &mut Encoder::new(&mut rhdr),
        0x77,
        v2msg::credit_word(32),
        &c.chunks(&call),
        &[100],
        None,
    )
    .unwrap();
    let reply = cat(&rhdr[..n], &rpc_reply(0x77, 20));

    // Client to server: the MPA request, then the Call in one FPDU split over two segments,
    // the second sent twice.
    let mut c2s_stream = mpa(true);
    let req_len = c2s_stream.len() as u32;
    let call_fpdu = fpdu(&untagged(3, true, 0, 1, 0, &call));
    c2s_stream.extend_from_slice(&call_fpdu);
    let (a, b) = c2s_stream.split_at(req_len as usize + 30);
    // Server to client: the MPA reply; an RDMA Read request; an RDMA Write in two segments
    // and the reply (Send with Invalidate) in two, all in one TCP segment.
    let mut rr = Vec::new();
    rr.extend_from_slice(&0x1111u32.to_be_bytes());
    rr.extend_from_slice(&0u64.to_be_bytes());
    rr.extend_from_slice(&4096u32.to_be_bytes());
    rr.extend_from_slice(&0x9abcu32.to_be_bytes());
    rr.extend_from_slice(&0x3000u64.to_be_bytes());
    let mut s2c_data = fpdu(&untagged(1, true, 1, 1, 0, &rr));
    s2c_data.extend(fpdu(&tagged(
        0,
        false,
        0x1234,
        0xffff_8880_0000_1000,
        &[0x66; 60],
    )));
    s2c_data.extend(fpdu(&tagged(
        0,
        true,
        0x1234,
        0xffff_8880_0000_103c,
        &[0x66; 40],
    )));
    s2c_data.extend(fpdu(&untagged(4, false, 0, 1, 0, &reply[..50])));
    s2c_data.extend(fpdu(&untagged(4, true, 0, 1, 50, &reply[50..])));
    let rep = mpa(false);

    let mut p = Pcap::new(1);
    p.frame(&tcp(true, 999, true, &[]));
    p.frame(&tcp(false, 4999, true, &[]));
    p.frame(&tcp(true, 1000, false, a));
    p.frame(&tcp(false, 5000, false, &rep));
    p.frame(&tcp(true, 1000 + a.len() as u32, false, b));
    p.frame(&tcp(true, 1000 + a.len() as u32, false, b));
    p.frame(&tcp(false, 5000 + rep.len() as u32, false, &s2c_data));
    p.frame(&tcp(
        false,
        5000 + (rep.len() + s2c_data.len()) as u32,
        false,
        &[],
    ));
    let (t, lines) = run(&p.buf);
    assert_eq!((t.v1, t.v2, t.undecodable), (0, 2, 0));
    assert_eq!((t.reads, t.writes), (1, 1));
    assert_eq!(lines[0], "frame 3 10.0.0.1:40000 > 10.0.0.2:20049 iwarp MPA request revision 2 flags 0x50 rpcrdma private data: send 4096 recv 4096 remote invalidate");
    assert_eq!(lines[1], "frame 4 10.0.0.2:20049 > 10.0.0.1:40000 iwarp MPA reply revision 2 flags 0x50 no rpcrdma private data");
    let call_line = lines
        .iter()
        .find(|l| l.contains("RDMA2_MSG xid 0x00000077 credits 32/32 flags -"))
        .unwrap();
    assert!(
        call_line.starts_with("frames 3-5 10.0.0.1:40000 > 10.0.0.2:20049 iwarp v2"),
        "{call_line}"
    );
    assert!(
        call_line.contains("writes [0x1234:8192@0xffff888000001000] | CALL xid 0x00000077"),
        "{call_line}"
    );
    assert!(lines.iter().any(|l| l == "frame 7 10.0.0.2:20049 > 10.0.0.1:40000 iwarp RDMA READ rkey 0x9abc va 0x3000 len 4096"));
    assert!(lines.iter().any(|l| l == "frame 7 10.0.0.2:20049 > 10.0.0.1:40000 iwarp RDMA WRITE rkey 0x1234 va 0xffff888000001000 len 100"));
    let reply_line = lines.iter().find(|l| l.contains("flags RESPONSE")).unwrap();
    assert!(
        reply_line.contains(
            "writes [0x1234:100@0xffff888000001000] | REPLY xid 0x00000077 accepted SUCCESS"
        ),
        "{reply_line}"
    );
}

#[test]
fn iwarp_stream_without_its_start_is_undecodable() {
    let mut hdr = [0u8; 64];
    let n = v1::encode(
        &mut Encoder::new(&mut hdr),
        0x46,
        3,
        Proc::Msg,
        &Lists::default(),
    )
    .unwrap();
    let mut p = Pcap::new(1);
    p.frame(&tcp(
        true,
        1,
        false,
        &fpdu(&untagged(3, true, 0, 7, 0, &hdr[..n])),
    ));
    p.frame(&tcp(
        true,
        1 + 100,
        false,
        &fpdu(&untagged(3, true, 0, 8, 0, &hdr[..n])),
    ));
    let (t, lines) = run(&p.buf);
    assert_eq!((t.messages(), t.undecodable), (1, 1));
    assert!(
        lines[0]
            .ends_with("UNDECODABLE: stream: no MPA request or reply at the start of the stream"),
        "{}",
        lines[0]
    );
}

#[test]
fn psn_gap_inside_a_message_is_undecodable() {
    let mut hdr = [0u8; 64];
    let n = v1::encode(
        &mut Encoder::new(&mut hdr),
        0x47,
        3,
        Proc::Msg,
        &Lists::default(),
    )
    .unwrap();
    let msg = cat(&hdr[..n], &rpc_call(0x47, 100));
    let (a, b) = msg.split_at(64);
    let mut p = Pcap::new(1);
    // SEND_MIDDLE (PSN 21) was lost before the capture point.
    p.frame(&c2s(SEND_FIRST, 20, &[], a));
    p.frame(&c2s(SEND_LAST, 22, &[], b));
    let (t, lines) = run(&p.buf);
    assert_eq!((t.v1, t.undecodable), (0, 1));
    assert!(
        lines[0].contains(
            "UNDECODABLE: incomplete message (a packet is missing from the capture (PSN gap))"
        ),
        "{}",
        lines[0]
    );
}

/// xorshift64: a deterministic stream of pseudo-random numbers.
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn mutated_captures_never_panic() {
    let mut base = Pcap::new(1);
    for f in v1_exchange() {
        base.frame(&f);
    }
    // And an iWARP connection.
    let mut hdr = [0u8; 64];
    let n = v1::encode(
        &mut Encoder::new(&mut hdr),
        0x48,
        3,
        Proc::Msg,
        &Lists::default(),
    )
    .unwrap();
    let mut stream = mpa(true);
    stream.extend(fpdu(&untagged(3, false, 0, 1, 0, &hdr[..8])));
    stream.extend(fpdu(&untagged(3, true, 0, 1, 8, &hdr[8..n])));
    stream.extend(fpdu(&tagged(0, true, 0x1234, 0x1000, &[0x66; 40])));
    let (a, b) = stream.split_at(30);
    let mut iw = Pcap::new(1);
    iw.frame(&tcp(true, 99, true, &[]));
    iw.frame(&tcp(true, 100, false, a));
    iw.frame(&tcp(true, 130, false, b));
    let (t, _) = run(&iw.buf);
    assert_eq!((t.v1, t.writes, t.undecodable), (1, 1, 0));
    let seeds = [base.buf.clone(), pcapng(&v1_exchange()), iw.buf.clone()];
    let mut rng = 0x1234_5678_9abc_def0u64;
    for i in 0..3000 {
        let mut file = seeds[i % seeds.len()].clone();
        for _ in 0..1 + xorshift(&mut rng) % 8 {
            let at = (xorshift(&mut rng) % file.len() as u64) as usize;
            match xorshift(&mut rng) % 3 {
                0 => file[at] = xorshift(&mut rng) as u8,
                1 => file[at] ^= 1 << (xorshift(&mut rng) % 8),
                _ => file.truncate(at.max(1)),
            }
        }
        let _ = decode(&file, &mut std::io::sink());
    }
}

#[test]
fn cm_req_and_rep_show_qpn_psn_and_private_data() {
    use rpcrdma_proto::private_data::PrivateData;
    let pd = PrivateData::new(4096, 8192, true).encode();
    let mut req = vec![1, 7, 2, 3];
    req.resize(256, 0);
    req[16..18].copy_from_slice(&0x0010u16.to_be_bytes());
    req[24 + 32..24 + 35].copy_from_slice(&[0, 0, 0x12]);
    req[24 + 44..24 + 47].copy_from_slice(&[0xab, 0xcd, 0xef]);
    req[24 + 140] = 0x00;
    req[24 + 141] = 0x40;
    req[24 + 176..24 + 184].copy_from_slice(&pd);
    let mut rep = vec![1, 7, 2, 3];
    rep.resize(256, 0);
    rep[16..18].copy_from_slice(&0x0013u16.to_be_bytes());
    rep[24 + 12..24 + 15].copy_from_slice(&[0, 0, 0x11]);
    rep[24 + 20..24 + 23].copy_from_slice(&[0x01, 0x02, 0x03]);
    let deth = [0x80, 0x01, 0, 0, 0, 0, 0, 1];
    let mut p = Pcap::new(1);
    p.frame(&roce(CLIENT.into(), SERVER.into(), 0x64, 1, 0, &deth, &req));
    p.frame(&roce(SERVER.into(), CLIENT.into(), 0x64, 1, 0, &deth, &rep));
    let (t, lines) = run(&p.buf);
    assert_eq!((t.other, t.undecodable), (2, 0));
    assert!(lines[0].ends_with("CM REQ qpn 0x12 psn 0xabcdef rpcrdma private data: send 4096 recv 8192 remote invalidate"), "{}", lines[0]);
    assert!(
        lines[1].ends_with("CM REP qpn 0x11 psn 0x10203 no rpcrdma private data"),
        "{}",
        lines[1]
    );
}
