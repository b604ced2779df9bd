// SPDX-License-Identifier: GPL-2.0

//! Decodes RPC-over-RDMA traffic in a capture of RoCEv2 packets or iWARP (TCP) segments.
//!
//! Frames are read from a pcap or pcapng file ([`capture`]), RoCEv2 packets are picked out by
//! UDP destination port 4791 ([`net`]) and their InfiniBand transport headers parsed
//! ([`roce`]). RC Send packets are reassembled into messages per direction and destination QP
//! (SEND_FIRST, MIDDLE, LAST, ONLY, with immediate data or invalidate), retransmitted request
//! packets (a PSN not newer than one already seen) are dropped, and each Send message's
//! RPC-over-RDMA header is decoded with `rpcrdma_proto`: version 1 (RFC 8166) or version 2
//! ([`msg`]). RDMA WRITE and READ requests get one line each (R_Key, address, length);
//! responses and acknowledgements are counted. iWARP connections (TCP port 20049, as siw
//! makes them) are followed through TCP, MPA, DDP and RDMAP ([`iwarp`]) to the same messages.
//!
//! [`decode`] writes one line per message and a last line with the totals; the number of Send
//! messages whose header did not decode is in [`Totals::undecodable`].

#![forbid(unsafe_code)]

pub mod capture;
pub mod iwarp;
pub mod msg;
pub mod net;
pub mod roce;

use std::{
    collections::HashMap,
    io::{
        self,
        Write, //
    },
    net::{
        IpAddr,
        SocketAddr, //
    },
};

/// Counters of one run, printed on the last line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Frames in the capture.
    pub frames: u64,
    /// Frames that are neither RoCEv2 nor NFS/RDMA TCP (skipped).
    pub not_roce: u64,
    /// RoCEv2 packets whose transport headers could not be parsed.
    pub bad_packets: u64,
    /// Send messages with a version 1 header.
    pub v1: u64,
    /// Send messages with a version 2 header.
    pub v2: u64,
    /// Send messages whose header did not decode, or that are incomplete.
    pub undecodable: u64,
    /// RDMA WRITE packets.
    pub writes: u64,
    /// RDMA READ requests.
    pub reads: u64,
    /// RDMA READ response packets.
    pub read_responses: u64,
    /// Acknowledgements.
    pub acks: u64,
    /// Retransmitted request packets (dropped before reassembly).
    pub retransmits: u64,
    /// Other packets: UD (connection management), CNP, atomics, unknown opcodes, MPA frames,
    /// Terminate messages.
    pub other: u64,
}

impl Totals {
    /// Send messages seen (decoded or not).
    pub fn messages(&self) -> u64 {
        self.v1 + self.v2 + self.undecodable
    }
}

impl std::fmt::Display for Totals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "totals: {} frames ({} not RDMA, {} bad); {} messages: {} v1, {} v2, {} undecodable; \
             {} RDMA WRITE, {} RDMA READ, {} READ response, {} ACK, {} retransmitted, {} other \
             packets",
            self.frames,
            self.not_roce,
            self.bad_packets,
            self.messages(),
            self.v1,
            self.v2,
            self.undecodable,
            self.writes,
            self.reads,
            self.read_responses,
            self.acks,
            self.retransmits,
            self.other
        )
    }
}

/// One direction of one connection: packets from `src` to `dst` for destination QP `qpn`.
type QpKey = (IpAddr, IpAddr, u32);

/// A Send message being reassembled.
#[derive(Debug, Default)]
struct Partial {
    first_frame: u64,
    last_frame: u64,
    frames: u64,
    data: Vec<u8>,
    /// The capture cut some of its packets.
    cut: bool,
    /// It began without SEND_FIRST.
    orphan: bool,
    /// PSN of its last packet.
    psn: u32,
    /// A PSN is missing between two of its packets (lost before the capture point).
    gap: bool,
}

/// Reassembly state of one [`QpKey`].
#[derive(Debug, Default)]
struct Qp {
    /// Newest request PSN seen.
    psn: Option<u32>,
    partial: Option<Partial>,
    /// The last version 2 message had `F_MORE`.
    more: bool,
}

/// PSNs are 24 bits.
const PSN_MASK: u32 = 0x00ff_ffff;

/// How far behind the newest PSN a request packet is taken for a retransmission. Farther
/// behind is a new connection that reuses the QP number with a new (random) starting PSN and
/// whose connection management exchange was not captured. Go-back-N retransmits lie within
/// the PSNs outstanding, far fewer than this even with many 1 MiB RDMA READs in flight.
const PSN_WINDOW: u32 = 1 << 18;

impl Qp {
    /// Records request PSN `psn`; false if it is the newest PSN seen or at most
    /// [`PSN_WINDOW`] behind it (a retransmission).
    fn fresh(&mut self, psn: u32) -> bool {
        if let Some(last) = self.psn {
            let d = psn.wrapping_sub(last) & PSN_MASK;
            if d == 0 || d > PSN_MASK + 1 - PSN_WINDOW {
                return false;
            }
        }
        self.psn = Some(psn);
        true
    }
}

/// One direction of one iWARP (TCP) connection.
type FlowKey = (SocketAddr, SocketAddr);

/// The state of one run over a capture.
struct Decoder<'o> {
    out: &'o mut dyn Write,
    totals: Totals,
    qps: HashMap<QpKey, Qp>,
    flows: HashMap<FlowKey, iwarp::Flow>,
}

/// "frame N" or "frames N-M".
fn frame_range(first: u64, last: u64) -> String {
    if first == last {
        format!("frame {first}")
    } else {
        format!("frames {first}-{last}")
    }
}

/// The frames of a reassembled RoCE message: "frame N" or "frames N-M (count)".
fn frames_text(p: &Partial) -> String {
    if p.frames == 1 {
        format!("frame {}", p.first_frame)
    } else {
        format!("frames {}-{} ({})", p.first_frame, p.last_frame, p.frames)
    }
}

impl Decoder<'_> {
    /// Decodes frame `number`.
    fn frame(&mut self, number: u64, f: capture::Frame<'_>) -> io::Result<()> {
        self.totals.frames += 1;
        let r = match net::parse(f.linktype, f.data) {
            Some(net::Transport::Roce(r)) => r,
            Some(net::Transport::Tcp(t)) => {
                let key = (
                    SocketAddr::new(t.src, t.sport),
                    SocketAddr::new(t.dst, t.dport),
                );
                let flow = self.flows.entry(key).or_default();
                let ev = flow.segment(number, t.seq, t.syn, t.payload, t.wire_len);
                return self.iwarp(number, key, ev);
            }
            None => {
                self.totals.not_roce += 1;
                return Ok(());
            }
        };
        let Some(pkt) = roce::parse(r.payload, r.wire_len) else {
            self.totals.bad_packets += 1;
            writeln!(
                self.out,
                "frame {number} {} > {}: RoCE packet too short or truncated ({} of {} bytes)",
                r.src,
                r.dst,
                r.payload.len(),
                r.wire_len
            )?;
            return Ok(());
        };
        let key = (r.src, r.dst, pkt.dqpn);
        let head = format!("frame {number} {} > {} qp {:#x}", r.src, r.dst, pkt.dqpn);
        let request = matches!(
            pkt.kind,
            roce::Kind::Send { .. }
                | roce::Kind::Write { .. }
                | roce::Kind::ReadRequest
                | roce::Kind::OtherRequest
        );
        if request && !self.qps.entry(key).or_default().fresh(pkt.psn) {
            self.totals.retransmits += 1;
            return Ok(());
        }
        match pkt.kind {
            roce::Kind::Send { first, last } => self.send(number, key, &pkt, first, last)?,
            roce::Kind::Write { first } => {
                self.totals.writes += 1;
                if let (true, Some((va, rkey, len))) = (first, roce::reth(pkt.ext)) {
                    writeln!(
                        self.out,
                        "{head} RDMA WRITE rkey {rkey:#x} va {va:#x} len {len}"
                    )?;
                }
            }
            roce::Kind::ReadRequest => {
                self.totals.reads += 1;
                if let Some((va, rkey, len)) = roce::reth(pkt.ext) {
                    writeln!(
                        self.out,
                        "{head} RDMA READ rkey {rkey:#x} va {va:#x} len {len}"
                    )?;
                }
            }
            roce::Kind::ReadResponse => self.totals.read_responses += 1,
            roce::Kind::Ack => {
                self.totals.acks += 1;
                match roce::aeth_syndrome(pkt.ext) {
                    Some(s) if s != "ACK" => writeln!(self.out, "{head} {s}")?,
                    _ => {}
                }
            }
            roce::Kind::UdSend => {
                self.totals.other += 1;
                if let Some(name) = cm_name(pkt.payload) {
                    writeln!(self.out, "{head} CM {name}{}", cm_details(pkt.payload))?;
                    // A connection between these hosts is being set up or torn down: its
                    // QPs start over with new PSNs, perhaps with recycled QP numbers.
                    for (k, q) in self.qps.iter_mut() {
                        if (k.0, k.1) == (r.src, r.dst) || (k.0, k.1) == (r.dst, r.src) {
                            q.psn = None;
                            q.more = false;
                        }
                    }
                }
            }
            roce::Kind::OtherRequest | roce::Kind::Cnp => self.totals.other += 1,
            roce::Kind::Unknown => {
                self.totals.other += 1;
                writeln!(self.out, "{head} opcode {:#04x} not decoded", pkt.opcode)?;
            }
        }
        Ok(())
    }

    /// Adds an RC Send packet to its QP's message; decodes the message when complete.
    fn send(
        &mut self,
        number: u64,
        key: QpKey,
        pkt: &roce::Packet<'_>,
        first: bool,
        last: bool,
    ) -> io::Result<()> {
        let qp = self.qps.entry(key).or_default();
        let mut stale = None;
        if first {
            stale = qp.partial.take();
        }
        let p = qp.partial.get_or_insert_with(|| Partial {
            first_frame: number,
            orphan: !first,
            psn: pkt.psn.wrapping_sub(1) & PSN_MASK,
            ..Partial::default()
        });
        p.gap |= pkt.psn != (p.psn.wrapping_add(1) & PSN_MASK);
        p.psn = pkt.psn;
        p.last_frame = number;
        p.frames += 1;
        p.cut |= pkt.cut;
        p.data.extend_from_slice(pkt.payload);
        let done = if last { qp.partial.take() } else { None };
        if let Some(s) = stale {
            self.incomplete(key, &s, "no SEND_LAST before the next SEND_FIRST")?;
        }
        if let Some(p) = done {
            self.message(key, &p)?;
        }
        Ok(())
    }

    /// Reports a message that lacks packets as undecodable.
    fn incomplete(&mut self, key: QpKey, p: &Partial, why: &str) -> io::Result<()> {
        self.totals.undecodable += 1;
        writeln!(
            self.out,
            "{} {} > {} qp {:#x} UNDECODABLE: incomplete message ({why}), {} bytes",
            frames_text(p),
            key.0,
            key.1,
            key.2,
            p.data.len()
        )
    }

    /// Decodes and prints a reassembled RoCE message.
    fn message(&mut self, key: QpKey, p: &Partial) -> io::Result<()> {
        if p.orphan {
            return self.incomplete(key, p, "no SEND_FIRST: capture began mid-message?");
        }
        if p.gap {
            return self.incomplete(key, p, "a packet is missing from the capture (PSN gap)");
        }
        let head = format!("{} {} > {} qp {:#x}", frames_text(p), key.0, key.1, key.2);
        let continued = self.qps.get(&key).is_some_and(|q| q.more);
        let more = self.emit(&head, &p.data, p.cut, continued)?;
        self.qps.entry(key).or_default().more = more;
        Ok(())
    }

    /// Decodes and prints one Send message; returns whether it has `F_MORE`.
    fn emit(&mut self, head: &str, data: &[u8], cut: bool, continued: bool) -> io::Result<bool> {
        let cut = if cut {
            " [cut by the capture's snap length]"
        } else {
            ""
        };
        match msg::decode(data, continued) {
            Ok(d) => {
                if d.version == 2 {
                    self.totals.v2 += 1;
                } else {
                    self.totals.v1 += 1;
                }
                writeln!(self.out, "{head} {}{cut}", d.text)?;
                Ok(d.more)
            }
            Err(why) => {
                self.totals.undecodable += 1;
                writeln!(self.out, "{head} UNDECODABLE: {why}{cut}")?;
                Ok(false)
            }
        }
    }

    /// Reports what one direction of an iWARP connection yielded with frame `number`.
    fn iwarp(&mut self, number: u64, key: FlowKey, ev: Vec<iwarp::Event>) -> io::Result<()> {
        let head = format!("{} > {} iwarp", key.0, key.1);
        for e in ev {
            match e {
                iwarp::Event::Message {
                    first_frame,
                    last_frame,
                    data,
                } => {
                    let head = format!("{} {head}", frame_range(first_frame, last_frame));
                    let continued = self.flows.get(&key).is_some_and(|f| f.more);
                    let more = self.emit(&head, &data, false, continued)?;
                    self.flows.entry(key).or_default().more = more;
                }
                iwarp::Event::ReadRequest { stag, to, len } => {
                    self.totals.reads += 1;
                    writeln!(
                        self.out,
                        "frame {number} {head} RDMA READ rkey {stag:#x} va {to:#x} len {len}"
                    )?;
                }
                iwarp::Event::Write { stag, to, len } => {
                    self.totals.writes += 1;
                    writeln!(
                        self.out,
                        "frame {number} {head} RDMA WRITE rkey {stag:#x} va {to:#x} len {len}"
                    )?;
                }
                iwarp::Event::ReadResponse => self.totals.read_responses += 1,
                iwarp::Event::Terminate => {
                    self.totals.other += 1;
                    writeln!(self.out, "frame {number} {head} TERMINATE")?;
                }
                iwarp::Event::Mpa(what) => {
                    self.totals.other += 1;
                    writeln!(self.out, "frame {number} {head} {what}")?;
                }
                iwarp::Event::Broken(why) => {
                    self.totals.undecodable += 1;
                    writeln!(self.out, "frame {number} {head} UNDECODABLE: stream: {why}")?;
                }
            }
        }
        Ok(())
    }

    /// Reports what is left unfinished at the end of the capture.
    fn finish(&mut self) -> io::Result<()> {
        let mut left: Vec<(QpKey, Partial)> = self
            .qps
            .iter_mut()
            .filter_map(|(k, q)| q.partial.take().map(|p| (*k, p)))
            .collect();
        left.sort_by_key(|(_, p)| p.first_frame);
        for (k, p) in left {
            self.incomplete(k, &p, "capture ended before SEND_LAST")?;
        }
        let mut keys: Vec<FlowKey> = self.flows.keys().copied().collect();
        keys.sort();
        for k in keys {
            let ev = self
                .flows
                .get_mut(&k)
                .map(iwarp::Flow::finish)
                .unwrap_or_default();
            let frames = self.totals.frames;
            self.iwarp(frames, k, ev)?;
        }
        Ok(())
    }
}

/// Name of the connection management message in a UD Send to QP 1, if it is one.
fn cm_name(mad: &[u8]) -> Option<&'static str> {
    // Management class 7 (CM); the attribute id is at offset 16 of the MAD header.
    if mad.get(1) != Some(&7) {
        return None;
    }
    let attr = u16::from_be_bytes(mad.get(16..18)?.try_into().ok()?);
    Some(match attr {
        0x0010 => "REQ",
        0x0011 => "MRA",
        0x0012 => "REJ",
        0x0013 => "REP",
        0x0014 => "RTU",
        0x0015 => "DREQ",
        0x0016 => "DREP",
        0x0019 => "LAP",
        0x001a => "APR",
        _ => "MAD",
    })
}

/// Offset of the CM message in a MAD (after the common MAD header).
const CM_AT: usize = 24;
/// Offset of the private data in a CM REQ.
const REQ_PRIVATE_AT: usize = CM_AT + 140;
/// Offset of the private data in a CM REP.
const REP_PRIVATE_AT: usize = CM_AT + 36;
/// Size of the RDMA CM's own header at the start of a REQ's private data (`struct cma_hdr`).
const CMA_HDR_LEN: usize = 36;

/// The sender's QP number and starting PSN of a CM REQ or REP, and the RPC-over-RDMA private
/// data (RFC 8797) it carries, if any.
fn cm_details(mad: &[u8]) -> String {
    let be24 = |at: usize| {
        mad.get(at..at + 3)
            .map(|b| u32::from_be_bytes([0, b[0], b[1], b[2]]))
    };
    let Some(attr) = mad.get(16..18).map(|b| u16::from_be_bytes([b[0], b[1]])) else {
        return String::new();
    };
    let (qpn, psn, pd) = match attr {
        0x0010 => (
            be24(CM_AT + 32),
            be24(CM_AT + 44),
            mad.get(REQ_PRIVATE_AT + CMA_HDR_LEN..),
        ),
        0x0013 => (
            be24(CM_AT + 12),
            be24(CM_AT + 20),
            mad.get(REP_PRIVATE_AT..),
        ),
        _ => return String::new(),
    };
    let (Some(qpn), Some(psn)) = (qpn, psn) else {
        return " (short)".to_string();
    };
    format!(" qpn {qpn:#x} psn {psn:#x}{}", private_data(pd))
}

/// The RPC-over-RDMA private data (RFC 8797) at the start of `pd`, described.
pub(crate) fn private_data(pd: Option<&[u8]>) -> String {
    match pd.and_then(rpcrdma_proto::private_data::PrivateData::decode) {
        Some(p) => format!(
            " rpcrdma private data: send {} recv {}{}",
            p.send_size,
            p.recv_size,
            if p.remote_invalidate() {
                " remote invalidate"
            } else {
                ""
            }
        ),
        None => " no rpcrdma private data".to_string(),
    }
}

/// Why a capture could not be decoded at all.
#[derive(Debug)]
pub enum Error {
    /// The capture file is not readable (the frames before the problem were decoded).
    Capture(capture::Error),
    /// Writing the output failed.
    Io(io::Error),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Capture(e) => write!(f, "{e}"),
            Error::Io(e) => write!(f, "{e}"),
        }
    }
}

/// Decodes the capture file `file`, writing one line per message and packet of interest, then
/// the totals, to `out`.
///
/// A capture file that cannot be read to its end is an error after the totals line.
pub fn decode(file: &[u8], out: &mut dyn Write) -> Result<Totals, Error> {
    let mut d = Decoder {
        out,
        totals: Totals::default(),
        qps: HashMap::new(),
        flows: HashMap::new(),
    };
    let mut io_err = None;
    let mut number = 0u64;
    let r = capture::for_each_frame(file, |f| {
        number += 1;
        if io_err.is_none() {
            if let Err(e) = d.frame(number, f) {
                io_err = Some(e);
            }
        }
    });
    if let Some(e) = io_err {
        return Err(Error::Io(e));
    }
    d.finish().map_err(Error::Io)?;
    writeln!(d.out, "{}", d.totals).map_err(Error::Io)?;
    r.map_err(Error::Capture)?;
    Ok(d.totals)
}
