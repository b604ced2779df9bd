// SPDX-License-Identifier: GPL-2.0

//! RPC-over-RDMA headers of reassembled Send messages, decoded with `rpcrdma_proto`, and a
//! summary of the RPC message that follows an `RDMA_MSG`/`RDMA2_MSG` header.

use rpcrdma_proto::{
    v1,
    v2,
    xdr::Decoder, //
};
use std::fmt::Write;

/// A decoded message, as one line of text (without frames and addresses).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// Version of the transport header (1 or 2).
    pub version: u32,
    /// The description.
    pub text: String,
    /// For version 2: whether `F_MORE` was set (the next message on the connection continues
    /// this one).
    pub more: bool,
}

/// Decodes one Send message. `continued`: the previous version 2 message in this direction had
/// `F_MORE` set. `Err` holds why the header cannot be decoded.
pub fn decode(buf: &[u8], continued: bool) -> Result<Decoded, String> {
    let fixed = v1::peek(buf).ok_or_else(|| {
        format!(
            "{} bytes, fewer than the {} of the fixed header fields",
            buf.len(),
            v1::FIXED_SIZE
        )
    })?;
    match fixed.vers {
        v1::VERSION => decode_v1(buf, &fixed),
        v2::VERSION => decode_v2(buf, continued),
        v => Err(format!("xid {:#010x}: unknown version {v}", fixed.xid)),
    }
}

/// Appends a segment as `handle:length@offset`.
fn seg(out: &mut String, s: &v1::Segment) {
    let _ = write!(out, "{:#x}:{}@{:#x}", s.handle, s.length, s.offset);
}

/// Appends segments separated by spaces.
fn segs(out: &mut String, it: impl Iterator<Item = v1::Segment>) {
    for (i, s) in it.enumerate() {
        if i > 0 {
            out.push(' ');
        }
        seg(out, &s);
    }
}

/// Decodes a version 1 header and what follows it.
fn decode_v1(buf: &[u8], fixed: &v1::Fixed) -> Result<Decoded, String> {
    let xid = fixed.xid;
    let d = match v1::Header::decode(buf, &v1::Limits::UNLIMITED) {
        Ok(d) => d,
        Err(v1::Error::Done) => {
            return Ok(Decoded {
                version: 1,
                text: format!("v1 RDMA_DONE xid {xid:#010x} credits {}", fixed.credits),
                more: false,
            })
        }
        Err(e) => return Err(format!("v1 xid {xid:#010x} proc {}: {e:?}", fixed.proc)),
    };
    let h = d.header;
    let mut t = String::new();
    let name = match h.body {
        v1::Body::Msg(_) => "RDMA_MSG",
        v1::Body::NoMsg(_) => "RDMA_NOMSG",
        v1::Body::Error(_) => "RDMA_ERROR",
    };
    let _ = write!(t, "v1 {name} xid {xid:#010x} credits {}", h.credits);
    match h.body {
        v1::Body::Msg(c) | v1::Body::NoMsg(c) => {
            v1_chunks(&mut t, &c);
            if matches!(h.body, v1::Body::Msg(_)) {
                rpc(&mut t, buf.get(d.payload_offset..).unwrap_or(&[]));
            }
        }
        v1::Body::Error(v1::ErrorBody::Vers { low, high }) => {
            let _ = write!(t, " ERR_VERS {low}-{high}");
        }
        v1::Body::Error(v1::ErrorBody::Chunk) => t.push_str(" ERR_CHUNK"),
    }
    Ok(Decoded {
        version: 1,
        text: t,
        more: false,
    })
}

/// Appends the non-empty version 1 chunk lists.
fn v1_chunks(t: &mut String, c: &v1::Chunks<'_>) {
    if c.reads.is_empty() && c.writes.is_empty() && c.reply.is_none() {
        t.push_str(" no chunks");
        return;
    }
    if !c.reads.is_empty() {
        t.push_str(" reads [");
        for (i, ch) in c.reads.chunks().enumerate() {
            if i > 0 {
                t.push_str("; ");
            }
            let _ = write!(t, "pos {}: ", ch.position());
            segs(t, ch.segments());
        }
        t.push(']');
    }
    if !c.writes.is_empty() {
        t.push_str(" writes [");
        for (i, ch) in c.writes.chunks().enumerate() {
            if i > 0 {
                t.push_str("; ");
            }
            segs(t, ch.segments());
        }
        t.push(']');
    }
    if let Some(r) = c.reply {
        t.push_str(" reply [");
        segs(t, r.segments());
        t.push(']');
    }
}

/// Decodes a version 2 header and what follows it.
fn decode_v2(buf: &[u8], continued: bool) -> Result<Decoded, String> {
    let limits = v2::Limits::UNLIMITED;
    let r = if continued {
        v2::Header::decode_continued(buf, &limits)
    } else {
        v2::Header::decode(buf, &limits)
    };
    let (h, off) = r.map_err(|e| {
        let xid = v1::peek(buf).map_or(0, |f| f.xid);
        format!("v2 xid {xid:#010x}: {e:?}")
    })?;
    let p = h.prefix;
    let name = match h.body {
        v2::Body::Msg(_) => "RDMA2_MSG",
        v2::Body::NoMsg(_) => "RDMA2_NOMSG",
        v2::Body::Error(_) => "RDMA2_ERROR",
        v2::Body::ConnProp(_) | v2::Body::ConnPropFragment => "RDMA2_CONNPROP",
    };
    let mut t = String::new();
    let _ = write!(
        t,
        "v2 {name} xid {:#010x} credits {}/{} flags ",
        p.xid,
        p.credits_granted(),
        p.credits_max()
    );
    t.push_str(match (p.flags.response, p.flags.more) {
        (false, false) => "-",
        (true, false) => "RESPONSE",
        (false, true) => "MORE",
        (true, true) => "RESPONSE|MORE",
    });
    if continued {
        t.push_str(" (continuation)");
    }
    match h.body {
        v2::Body::Msg(l) | v2::Body::NoMsg(l) => {
            if l.inv_handle != 0 {
                let _ = write!(t, " inv {:#x}", l.inv_handle);
            }
            if h.is_credit_refresh() {
                t.push_str(" credit refresh");
            } else {
                v2_chunks(&mut t, &l);
            }
            if matches!(h.body, v2::Body::Msg(_)) {
                let payload = buf.get(off..).unwrap_or(&[]);
                if continued {
                    let _ = write!(t, " | {} more RPC bytes", payload.len());
                } else {
                    rpc(&mut t, payload);
                }
            }
        }
        v2::Body::Error(e) => v2_error(&mut t, &e),
        v2::Body::ConnProp(ps) => {
            let _ = write!(t, " {} properties", ps.len());
            for prop in ps.iter() {
                let _ = write!(t, " {prop:?}");
            }
        }
        v2::Body::ConnPropFragment => {
            let _ = write!(t, " fragment of {} bytes", buf.len().saturating_sub(off));
        }
    }
    Ok(Decoded {
        version: 2,
        text: t,
        more: p.flags.more,
    })
}

/// Appends the non-empty version 2 chunk lists.
fn v2_chunks(t: &mut String, l: &v2::ChunkLists<'_>) {
    if l.lists_empty() {
        t.push_str(" no chunks");
        return;
    }
    if !l.reads.is_empty() {
        t.push_str(" reads [");
        for (i, ch) in l.reads.chunks().enumerate() {
            if i > 0 {
                t.push_str("; ");
            }
            let _ = write!(t, "pos {}: ", ch.position);
            segs(t, ch.iter().map(|s| s.target));
        }
        t.push(']');
    }
    if !l.writes.is_empty() {
        t.push_str(" writes [");
        for (i, ch) in l.writes.iter().enumerate() {
            if i > 0 {
                t.push_str("; ");
            }
            segs(t, ch.iter());
        }
        t.push(']');
    }
    if let Some(r) = l.reply {
        t.push_str(" reply [");
        segs(t, r.iter());
        t.push(']');
    }
}

/// Appends an `RDMA2_ERROR` body.
fn v2_error(t: &mut String, e: &v2::ErrorBody) {
    use v2::ErrorBody as E;
    let _ = match *e {
        E::Vers { low, high } => write!(t, " ERR_VERS {low}-{high}"),
        E::BadXdr => write!(t, " ERR_BAD_XDR"),
        E::InvalHtype => write!(t, " ERR_INVAL_HTYPE"),
        E::InvalFlag => write!(t, " ERR_INVAL_FLAG"),
        E::ReadChunks { max_chunks } => write!(t, " ERR_READ_CHUNKS max {max_chunks}"),
        E::WriteChunks { max_chunks } => write!(t, " ERR_WRITE_CHUNKS max {max_chunks}"),
        E::Segments { max_segments } => write!(t, " ERR_SEGMENTS max {max_segments}"),
        E::WriteResource {
            chunk_index,
            length_needed,
        } => write!(
            t,
            " ERR_WRITE_RESOURCE chunk {chunk_index} needs {length_needed}"
        ),
        E::ReplyResource { length_needed } => {
            write!(t, " ERR_REPLY_RESOURCE needs {length_needed}")
        }
        E::System => write!(t, " ERR_SYSTEM"),
        E::Other(c) => write!(t, " error code {c}"),
    };
}

/// Name of a well-known ONC RPC program.
fn program(prog: u32) -> &'static str {
    match prog {
        100000 => " (portmap)",
        100003 => " (nfs)",
        100005 => " (mount)",
        100021 => " (nlm)",
        100024 => " (status)",
        100227 => " (nfs_acl)",
        0x4000_0000 => " (nfs4_cb)",
        _ => "",
    }
}

/// Appends a summary of the RPC message at the start of `p` (RFC 5531).
fn rpc(t: &mut String, p: &[u8]) {
    let mut d = Decoder::new(p);
    let (Ok(xid), Ok(mtype)) = (d.u32(), d.u32()) else {
        let _ = write!(t, " | RPC: {} bytes", p.len());
        return;
    };
    match mtype {
        0 => {
            let (Ok(rpcvers), Ok(prog), Ok(vers), Ok(proc)) = (d.u32(), d.u32(), d.u32(), d.u32())
            else {
                let _ = write!(t, " | CALL xid {xid:#010x} (short)");
                return;
            };
            let _ = write!(
                t,
                " | CALL xid {xid:#010x} prog {prog}{} v{vers} proc {proc}",
                program(prog)
            );
            if rpcvers != 2 {
                let _ = write!(t, " rpcvers {rpcvers}");
            }
        }
        1 => {
            let _ = write!(t, " | REPLY xid {xid:#010x}");
            match d.u32() {
                Ok(0) => {
                    // Accepted: skip the verifier (flavor, opaque body), then accept_stat.
                    let stat = d.u32().and_then(|_| d.opaque(400)).and_then(|_| d.u32());
                    let _ = match stat {
                        Ok(0) => write!(t, " accepted SUCCESS"),
                        Ok(s) => write!(t, " accepted stat {s}"),
                        Err(_) => write!(t, " accepted (short)"),
                    };
                }
                Ok(1) => t.push_str(" denied"),
                Ok(s) => {
                    let _ = write!(t, " reply_stat {s}");
                }
                Err(_) => t.push_str(" (short)"),
            }
        }
        m => {
            let _ = write!(t, " | RPC xid {xid:#010x} msg_type {m}");
        }
    }
}
