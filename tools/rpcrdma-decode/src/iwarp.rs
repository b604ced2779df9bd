// SPDX-License-Identifier: GPL-2.0

//! iWARP as siw speaks it: TCP stream reassembly, MPA (RFC 5044) request/reply frames and
//! FPDUs without markers, DDP (RFC 5041) tagged and untagged segments and RDMAP (RFC 5040)
//! operations. Untagged Send segments (queue 0) are reassembled into messages by MSN.

use std::collections::{
    BTreeMap,
    VecDeque, //
};

/// Size of an MPA request or reply header: the key, the flag/revision bits and `PD_Length`.
const MPA_RR_LEN: usize = 20;
/// MPA flag: markers.
const MPA_MARKERS: u8 = 0x80;
/// MPA flag: enhanced connection establishment (revision 2 IRD/ORD words).
const MPA_ENHANCED: u8 = 0x10;
/// Most out-of-order segments kept per direction while waiting for a gap to fill.
const MAX_PENDING: usize = 256;

/// What one direction of a connection yields.
#[derive(Debug, PartialEq, Eq)]
pub enum Event {
    /// A complete Send message (queue 0), with the frames that carried it.
    Message {
        /// Frame that carried the start of its first segment.
        first_frame: u64,
        /// Frame that completed its last segment.
        last_frame: u64,
        /// The message.
        data: Vec<u8>,
    },
    /// An RDMA READ request (queue 1): source STag, tagged offset and length.
    ReadRequest {
        /// Data source STag.
        stag: u32,
        /// Data source tagged offset.
        to: u64,
        /// RDMA Read message size.
        len: u32,
    },
    /// A whole RDMA WRITE message: STag, tagged offset of its first segment, total length.
    Write {
        /// Data sink STag.
        stag: u32,
        /// Tagged offset of the first segment.
        to: u64,
        /// Bytes written.
        len: u64,
    },
    /// One RDMA READ response segment.
    ReadResponse,
    /// An RDMAP Terminate message.
    Terminate,
    /// An MPA request or reply frame.
    Mpa(String),
    /// The stream cannot be decoded from here on (reason); nothing more is reported for it.
    Broken(String),
}

/// Reassembly state of one direction of one TCP connection.
#[derive(Debug, Default)]
pub struct Flow {
    /// Next expected sequence number, once known.
    next: Option<u32>,
    /// Bytes received in order but not yet parsed.
    buf: Vec<u8>,
    /// Which frame supplied which bytes of `buf`: (end offset in `buf`, frame), in order.
    origin: VecDeque<(usize, u64)>,
    /// Segments beyond a gap, by sequence number, with their frames.
    pending: BTreeMap<u32, (u64, Vec<u8>)>,
    /// The MPA request or reply has been seen.
    mpa_done: bool,
    /// Nothing more is decoded.
    broken: bool,
    /// Send message being reassembled: MSN, first frame, bytes.
    send: Option<(u32, u64, Vec<u8>)>,
    /// RDMA WRITE message being reassembled: STag, first TO, length.
    write: Option<(u32, u64, u64)>,
    /// The last version 2 message had `F_MORE` (kept here for the caller).
    pub more: bool,
}

impl Flow {
    /// Feeds one TCP segment (`payload`, `wire_len` bytes on the wire) seen in frame `frame`.
    pub fn segment(
        &mut self,
        frame: u64,
        seq: u32,
        syn: bool,
        payload: &[u8],
        wire_len: usize,
    ) -> Vec<Event> {
        let mut ev = Vec::new();
        if self.broken {
            return ev;
        }
        if syn {
            self.next = Some(seq.wrapping_add(1));
            return ev;
        }
        if payload.len() < wire_len {
            return self.fail("a segment is cut by the capture's snap length");
        }
        if payload.is_empty() {
            return ev;
        }
        let next = *self.next.get_or_insert(seq);
        let rel = seq.wrapping_sub(next) as i32;
        if rel > 0 {
            if self.pending.len() >= MAX_PENDING {
                return self.fail("too many segments missing from the capture");
            }
            self.pending.insert(seq, (frame, payload.to_vec()));
            return ev;
        }
        self.append(frame, seq, payload);
        // Segments that the gap held back, now in order.
        while let Some(next) = self.next {
            let Some((&s, _)) = self
                .pending
                .iter()
                .find(|(&s, _)| s.wrapping_sub(next) as i32 <= 0)
            else {
                break;
            };
            let (f, data) = self.pending.remove(&s).unwrap_or_default();
            self.append(f, s, &data);
        }
        self.parse(frame, &mut ev);
        ev
    }

    /// Appends the part of segment `seq` that is new.
    fn append(&mut self, frame: u64, seq: u32, data: &[u8]) {
        let Some(next) = self.next else { return };
        let skip = next.wrapping_sub(seq) as usize;
        if let Some(new) = data.get(skip..) {
            self.buf.extend_from_slice(new);
            self.origin.push_back((self.buf.len(), frame));
            self.next = Some(seq.wrapping_add(data.len() as u32));
        }
    }

    /// Marks the stream undecodable from here on.
    fn fail(&mut self, why: &str) -> Vec<Event> {
        self.broken = true;
        vec![Event::Broken(why.to_string())]
    }

    /// At the end of the capture: what is left unfinished.
    pub fn finish(&mut self) -> Vec<Event> {
        if self.broken {
            return Vec::new();
        }
        if !self.pending.is_empty() {
            return self.fail("segments missing from the capture");
        }
        if self.send.is_some() {
            return self.fail("capture ended inside a Send message");
        }
        Vec::new()
    }

    /// Parses the MPA request or reply, then every complete FPDU, in `buf`.
    fn parse(&mut self, frame: u64, ev: &mut Vec<Event>) {
        if !self.mpa_done {
            if self.buf.len() < MPA_RR_LEN {
                return;
            }
            let kind = match &self.buf[..16] {
                b"MPA ID Req Frame" => "request",
                b"MPA ID Rep Frame" => "reply",
                _ => {
                    ev.extend(self.fail("no MPA request or reply at the start of the stream"));
                    return;
                }
            };
            let flags = self.buf[16];
            let rev = self.buf[17];
            let pd = usize::from(u16::from_be_bytes([self.buf[18], self.buf[19]]));
            if self.buf.len() < MPA_RR_LEN + pd {
                return;
            }
            // Enhanced mode (MPA revision 2) puts IRD/ORD words before the consumer's data.
            let skip = if flags & MPA_ENHANCED != 0 { 4 } else { 0 };
            let consumer = self.buf.get(MPA_RR_LEN + skip..MPA_RR_LEN + pd);
            ev.push(Event::Mpa(format!(
                "MPA {kind} revision {rev} flags {flags:#04x}{}",
                crate::private_data(consumer)
            )));
            self.consume(MPA_RR_LEN + pd);
            self.mpa_done = true;
            if flags & MPA_MARKERS != 0 {
                ev.extend(self.fail("MPA markers are not decoded"));
                return;
            }
        }
        let mut at = 0usize;
        while let Some(len) = self
            .buf
            .get(at..at + 2)
            .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
        {
            // ULPDU, padded to four bytes with its length field, then the CRC.
            let total = (2 + len).next_multiple_of(4) + 4;
            let Some(fpdu) = self.buf.get(at..at + total) else {
                break;
            };
            let ulpdu = fpdu[2..2 + len].to_vec();
            let start = self.frame_at(at).unwrap_or(frame);
            at += total;
            if let Err(why) = self.ddp(start, frame, &ulpdu, ev) {
                self.consume(self.buf.len());
                ev.extend(self.fail(&why));
                return;
            }
        }
        self.consume(at);
    }

    /// The frame that supplied byte `at` of `buf`.
    fn frame_at(&self, at: usize) -> Option<u64> {
        self.origin
            .iter()
            .find(|(end, _)| *end > at)
            .map(|(_, f)| *f)
    }

    /// Drops the first `n` bytes of `buf`.
    fn consume(&mut self, n: usize) {
        self.buf.drain(..n);
        for o in self.origin.iter_mut() {
            o.0 = o.0.saturating_sub(n);
        }
        while self.origin.front().is_some_and(|o| o.0 == 0) {
            self.origin.pop_front();
        }
    }

    /// One DDP segment, which began in frame `start` and ended in frame `frame`.
    fn ddp(&mut self, start: u64, frame: u64, s: &[u8], ev: &mut Vec<Event>) -> Result<(), String> {
        let w32 = |at: usize| {
            s.get(at..at + 4)
                .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        };
        let ctl = *s.first().ok_or("empty DDP segment")?;
        let opcode = s.get(1).ok_or("short DDP segment")? & 0x0f;
        let (tagged, last) = (ctl & 0x80 != 0, ctl & 0x40 != 0);
        if tagged {
            let stag = w32(2).ok_or("short tagged DDP header")?;
            let to = u64::from(w32(6).ok_or("short tagged DDP header")?) << 32
                | u64::from(w32(10).ok_or("short tagged DDP header")?);
            let n = s.len().saturating_sub(14) as u64;
            match opcode {
                // RDMA Write.
                0 => {
                    let w = self.write.get_or_insert((stag, to, 0));
                    w.2 += n;
                    if last {
                        let (stag, to, len) = *w;
                        self.write = None;
                        ev.push(Event::Write { stag, to, len });
                    }
                }
                // RDMA Read Response.
                2 => ev.push(Event::ReadResponse),
                o => return Err(format!("tagged RDMAP opcode {o}")),
            }
            return Ok(());
        }
        let qn = w32(6).ok_or("short untagged DDP header")?;
        let msn = w32(10).ok_or("short untagged DDP header")?;
        let mo = w32(14).ok_or("short untagged DDP header")?;
        let data = &s[18..];
        match (qn, opcode) {
            // Send, Send with Invalidate, with Solicited Event, with both.
            (0, 3..=6) => {
                let m = self.send.get_or_insert_with(|| (msn, start, Vec::new()));
                if m.0 != msn || m.2.len() != mo as usize {
                    return Err(format!(
                        "Send segment MSN {msn} MO {mo} out of order (MSN {} at {})",
                        m.0,
                        m.2.len()
                    ));
                }
                m.2.extend_from_slice(data);
                if last {
                    let (_, first_frame, data) = self.send.take().unwrap_or_default();
                    ev.push(Event::Message {
                        first_frame,
                        last_frame: frame,
                        data,
                    });
                }
            }
            (1, 1) => {
                let r = |at: usize| {
                    data.get(at..at + 4)
                        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
                };
                let bad = "short RDMA Read Request";
                let len = r(12).ok_or(bad)?;
                let stag = r(16).ok_or(bad)?;
                let to = u64::from(r(20).ok_or(bad)?) << 32 | u64::from(r(24).ok_or(bad)?);
                ev.push(Event::ReadRequest { stag, to, len });
            }
            (2, 7) => ev.push(Event::Terminate),
            (q, o) => return Err(format!("untagged RDMAP opcode {o} on queue {q}")),
        }
        Ok(())
    }
}
