// SPDX-License-Identifier: GPL-2.0

//! Property tests for the RPC-over-RDMA version 1 header codec.

use proptest::prelude::*;
use rpcrdma_proto::v1::{
    self,
    Body,
    Call,
    Chunks,
    Error,
    Header,
    Limits,
    Lists,
    Proc,
    ReadSegment,
    Role,
    Segment,
    Verdict, //
};
use rpcrdma_proto::xdr::Encoder;

fn segment() -> impl Strategy<Value = Segment> {
    (any::<u32>(), any::<u32>(), any::<u64>()).prop_map(|(handle, length, offset)| Segment {
        handle,
        length,
        offset,
    })
}

/// A segment no longer than 1 MiB, as a real client registers.
fn small_segment() -> impl Strategy<Value = Segment> {
    (any::<u32>(), 0u32..=1 << 20, any::<u64>()).prop_map(|(handle, length, offset)| Segment {
        handle,
        length,
        offset,
    })
}

fn read_segment() -> impl Strategy<Value = ReadSegment> {
    (0u32..64, segment()).prop_map(|(p, segment)| ReadSegment {
        position: p * 4,
        segment,
    })
}

/// Random chunk lists: up to 8 Read segments, 4 Write chunks of up to 6 segments, and an
/// optional Reply chunk of up to 6 segments.
#[derive(Clone, Debug)]
struct Owned {
    reads: Vec<ReadSegment>,
    writes: Vec<Vec<Segment>>,
    reply: Option<Vec<Segment>>,
}

fn owned() -> impl Strategy<Value = Owned> {
    (
        prop::collection::vec(read_segment(), 0..8),
        prop::collection::vec(prop::collection::vec(segment(), 1..6), 0..4),
        prop::option::of(prop::collection::vec(segment(), 1..6)),
    )
        .prop_map(|(reads, writes, reply)| Owned {
            reads,
            writes,
            reply,
        })
}

fn encode_owned(xid: u32, credits: u32, proc: Proc, o: &Owned, payload: &[u8]) -> Vec<u8> {
    let writes: Vec<&[Segment]> = o.writes.iter().map(Vec::as_slice).collect();
    let lists = Lists {
        reads: &o.reads,
        writes: &writes,
        reply: o.reply.as_deref(),
    };
    let mut buf = vec![0u8; 16 + lists.encoded_len() + payload.len()];
    let mut e = Encoder::new(&mut buf);
    let len = v1::encode(&mut e, xid, credits, proc, &lists).unwrap();
    assert_eq!(e.finish(), len);
    buf[len..].copy_from_slice(payload);
    buf
}

/// Checks that `c` describes exactly the lists in `o`.
fn same_lists(c: &Chunks<'_>, o: &Owned) {
    assert_eq!(c.reads.segments().collect::<Vec<_>>(), o.reads);
    let writes: Vec<Vec<Segment>> = c.writes.chunks().map(|w| w.segments().collect()).collect();
    assert_eq!(writes, o.writes);
    let reply: Option<Vec<Segment>> = c.reply.map(|r| r.segments().collect());
    assert_eq!(reply, o.reply);
}

/// Exercises every accessor of a decoded header so that iteration is covered too.
fn walk(h: &Header<'_>) -> u64 {
    let mut n = u64::from(h.xid);
    if let Some(c) = h.body.chunks() {
        n = n.wrapping_add(c.reads.total_length());
        if let Some(pz) = c.reads.position_zero() {
            n = n.wrapping_add(pz.length() + u64::from(pz.segment_count()));
        }
        for chunk in c.reads.chunks() {
            n = n.wrapping_add(u64::from(chunk.position()) + chunk.length());
            n = n.wrapping_add(chunk.segments().map(|s| u64::from(s.handle)).sum::<u64>());
        }
        n = n.wrapping_add(c.writes.total_length());
        if let Some(r) = c.reply {
            n = n.wrapping_add(r.length());
        }
    }
    n
}

/// [`Call::decode`] (decoded once, kept by the server) agrees with [`Header::decode_call`]:
/// the same verdict, and the same lists, lengths and Read chunks when accepted. Limits above
/// [`Limits::MAX_CHUNKS`] chunks per list are clamped by `Call`, so only the absence of a
/// panic is checked then.
fn call_agrees(bytes: &[u8], limits: &Limits) {
    let call = Call::decode(bytes, limits);
    if limits.max_read_chunks > Limits::MAX_CHUNKS || limits.max_write_chunks > Limits::MAX_CHUNKS {
        if let Ok(c) = call {
            let _ = c.chunks(bytes).reads.total_length();
            let _ = c.read_chunks(bytes).count();
        }
        return;
    }
    match (Header::decode_call(bytes, limits), call) {
        (Err(e), Err(f)) => assert_eq!(e, f),
        (Ok(d), Ok(c)) => {
            let dc = d.header.body.chunks().unwrap();
            let cc = c.chunks(bytes);
            assert_eq!(&cc, dc);
            assert_eq!(c.xid, d.header.xid);
            assert_eq!(c.credits, d.header.credits);
            assert_eq!(c.proc, d.header.body.proc());
            assert_eq!(c.payload_offset, d.payload_offset);
            assert_eq!(c.write_count(), dc.writes.len() as usize);
            for (i, w) in dc.writes.chunks().enumerate() {
                assert_eq!(c.write_len(i), Some(w.length()));
            }
            assert_eq!(c.write_len(c.write_count()), None);
            assert_eq!(c.reply_len(), dc.reply.map(|r| r.length()));
            assert_eq!(c.has_reads(), !dc.reads.is_empty());
            assert_eq!(c.position_zero(bytes), dc.reads.position_zero());
            assert_eq!(
                c.read_chunks(bytes).collect::<Vec<_>>(),
                dc.reads.chunks().collect::<Vec<_>>()
            );
        }
        (a, b) => panic!("decode_call {a:?} but Call::decode {b:?}"),
    }
}

/// Decodes `bytes` every way a receiver can; none may panic, and errors map to verdicts.
fn decode_all(bytes: &[u8], limits: &Limits) {
    let _ = v1::peek(bytes);
    call_agrees(bytes, limits);
    for (role, r) in [
        (Role::Requester, Header::decode_reply(bytes, limits)),
        (Role::Responder, Header::decode_call(bytes, limits)),
        (Role::Responder, Header::decode(bytes, limits)),
    ] {
        match r {
            Ok(d) => {
                assert!(d.payload_offset <= bytes.len());
                assert_eq!(d.payload_offset % 4, 0);
                walk(&d.header);
            }
            Err(e) => {
                let v = e.verdict(role);
                if role == Role::Requester {
                    assert!(matches!(v, Verdict::Drop | Verdict::Fail));
                } else {
                    assert_ne!(v, Verdict::Fail);
                }
            }
        }
    }
}

/// An RPC message as a requester reduces it (RFC 8166, Sections 3.4.4.4 and 3.4.5): `items`
/// are its XDR items in order, each an inline run (`false`, its length a multiple of four) or
/// a data item moved to a Read chunk (`true`, any length, its XDR padding removed with it).
/// Returns the unreduced message, its inline part and the Read chunks as (position, data).
#[allow(clippy::type_complexity)]
fn reduce(items: &[(bool, Vec<u8>)]) -> (Vec<u8>, Vec<u8>, Vec<(u32, Vec<u8>)>) {
    let (mut whole, mut inline, mut chunks) = (Vec::new(), Vec::new(), Vec::new());
    for (chunk, data) in items {
        if *chunk {
            chunks.push((whole.len() as u32, data.clone()));
            whole.extend_from_slice(data);
            whole.resize(whole.len().next_multiple_of(4), 0);
        } else {
            whole.extend_from_slice(data);
            inline.extend_from_slice(data);
        }
    }
    (whole, inline, chunks)
}

/// Rebuilds the message as a responder places it: inline bytes up to each chunk's position,
/// the chunk's data, its XDR round-up (zeroes), then the rest of the inline part.
fn rebuild(inline: &[u8], chunks: &[(u32, &[u8])]) -> Option<Vec<u8>> {
    let (mut out, mut used) = (Vec::new(), 0usize);
    for &(pos, data) in chunks {
        let n = (pos as usize).checked_sub(out.len())?;
        out.extend_from_slice(inline.get(used..used + n)?);
        used += n;
        out.extend_from_slice(data);
        out.resize(out.len().next_multiple_of(4), 0);
    }
    out.extend_from_slice(inline.get(used..)?);
    Some(out)
}

fn xdr_item() -> impl Strategy<Value = (bool, Vec<u8>)> {
    prop_oneof![
        (0usize..6).prop_map(|w| (false, vec![0xa5; w * 4])),
        prop::collection::vec(any::<u8>(), 1..23).prop_map(|d| (true, d)),
    ]
}

fn limits() -> impl Strategy<Value = Limits> {
    (0u32..20, 0u32..5, 0u32..5, any::<u64>(), any::<u64>()).prop_map(|(s, r, w, rb, wb)| Limits {
        max_segments: s,
        max_read_chunks: r,
        max_write_chunks: w,
        max_read_bytes: rb,
        max_write_bytes: wb,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Any header the encoder writes decodes back to the same fields and lists.
    #[test]
    fn encode_decode_round_trip(
        xid in any::<u32>(),
        credits in any::<u32>(),
        nomsg in any::<bool>(),
        o in owned(),
        payload in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let proc = if nomsg { Proc::NoMsg } else { Proc::Msg };
        let buf = encode_owned(xid, credits, proc, &o, &payload);
        let d = Header::decode(&buf, &Limits::UNLIMITED).unwrap();
        prop_assert_eq!(d.header.xid, xid);
        prop_assert_eq!(d.header.vers, v1::VERSION);
        prop_assert_eq!(d.header.credits, credits);
        prop_assert_eq!(d.header.body.proc(), proc);
        prop_assert_eq!(&buf[d.payload_offset..], &payload[..]);
        same_lists(d.header.body.chunks().unwrap(), &o);
        walk(&d.header);
    }

    /// A well-formed Linux-shaped call (one Read chunk after `pos` inline bytes, one Write
    /// chunk, optional Reply chunk) passes the responder's validation.
    #[test]
    fn linux_shaped_calls_are_accepted(
        pos in 0u32..32,
        nread in 1usize..8,
        writes in prop::collection::vec(small_segment(), 1..8),
        reply in prop::option::of(prop::collection::vec(small_segment(), 1..8)),
    ) {
        let position = pos * 4;
        let reads: Vec<ReadSegment> = (0..nread)
            .map(|i| ReadSegment {
                position,
                segment: Segment { handle: 7, length: 4096, offset: (i as u64) << 12 },
            })
            .collect();
        let nomsg = position == 0;
        let o = Owned { reads, writes: vec![writes], reply };
        let payload = if nomsg { vec![] } else { vec![0u8; position as usize] };
        let proc = if nomsg { Proc::NoMsg } else { Proc::Msg };
        let buf = encode_owned(1, 128, proc, &o, &payload);
        let d = Header::decode_call(&buf, &Limits::svcrdma(260, 4096)).unwrap();
        same_lists(d.header.body.chunks().unwrap(), &o);
        call_agrees(&buf, &Limits::svcrdma(260, 4096));
    }

    /// Well-formed calls with random lists (and payloads) decode the same once kept as a
    /// [`Call`] as with [`Header::decode_call`], accepted or not.
    #[test]
    fn call_agrees_with_decode_call(
        nomsg in any::<bool>(),
        o in owned(),
        payload in prop::collection::vec(any::<u8>(), 0..256),
        maxpages in 1u32..300,
    ) {
        let proc = if nomsg { Proc::NoMsg } else { Proc::Msg };
        let buf = encode_owned(9, 32, proc, &o, &payload);
        call_agrees(&buf, &Limits::svcrdma(maxpages, 4096));
    }

    /// A call reduced as RFC 8166 says, its Read chunks of any length (their positions count
    /// the XDR round-up of the chunks before them), is accepted, and placing its chunks at
    /// their positions with their round-up gives back the message. Moving the last chunk
    /// beyond the inline part is refused.
    #[test]
    fn reduced_calls_are_accepted_and_rebuilt(
        lead in 1usize..6,
        mut items in prop::collection::vec(xdr_item(), 0..7),
        chunk in prop::collection::vec(any::<u8>(), 1..23),
        at in any::<prop::sample::Index>(),
    ) {
        // At least one Read chunk, and inline bytes first: a Read chunk at position zero
        // would be a Position-Zero Read chunk.
        let i = at.index(items.len() + 1);
        items.insert(i, (true, chunk));
        items.insert(0, (false, vec![0x5a; lead * 4]));
        let (whole, inline, data) = reduce(&items);
        let reads: Vec<ReadSegment> = data
            .iter()
            .enumerate()
            .map(|(i, (position, d))| ReadSegment {
                position: *position,
                segment: Segment { handle: i as u32 + 1, length: d.len() as u32, offset: 0 },
            })
            .collect();
        let o = Owned { reads, writes: vec![], reply: None };
        let limits = Limits::svcrdma(260, 4096);
        let buf = encode_owned(3, 32, Proc::Msg, &o, &inline);
        prop_assert!(Header::decode_call(&buf, &limits).is_ok());
        call_agrees(&buf, &limits);
        let c = Call::decode(&buf, &limits).unwrap();
        let placed: Vec<(u32, &[u8])> = c
            .read_chunks(&buf)
            .map(|r| {
                let h = r.segments().next().unwrap().handle as usize;
                (r.position(), data[h - 1].1.as_slice())
            })
            .collect();
        prop_assert_eq!(rebuild(&inline, &placed), Some(whole.clone()));

        // The last chunk one word beyond the end of the inline part.
        let last = o.reads.len() - 1;
        let mut bad = o.clone();
        let room: u32 = data[..last].iter().map(|(_, d)| d.len().next_multiple_of(4) as u32).sum();
        bad.reads[last].position = inline.len() as u32 + room + 4;
        let buf = encode_owned(3, 32, Proc::Msg, &bad, &inline);
        prop_assert_eq!(
            Header::decode_call(&buf, &limits).err(),
            Some(Error::Chunk(v1::ChunkError::PositionBeyondPayload))
        );
    }

    /// Random bytes never panic any decoder, whatever the limits.
    #[test]
    fn random_bytes_never_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..512),
        l in limits(),
    ) {
        decode_all(&bytes, &l);
        decode_all(&bytes, &Limits::UNLIMITED);
    }

    /// Random words (many small values, so the headers look plausible) never panic.
    #[test]
    fn random_words_never_panic(
        words in prop::collection::vec(prop_oneof![0u32..6, any::<u32>()], 0..96),
        l in limits(),
    ) {
        let mut bytes: Vec<u8> = vec![0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 16];
        bytes.extend(words.iter().flat_map(|w| w.to_be_bytes()));
        decode_all(&bytes, &l);
        decode_all(&bytes, &Limits::UNLIMITED);
    }

    /// Valid headers with mutated bytes, truncated or extended, never panic; if they still
    /// decode, re-encoding the decoded lists reproduces the decoded header bytes.
    #[test]
    fn mutated_headers_never_panic(
        o in owned(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let mut buf = encode_owned(9, 32, Proc::Msg, &o, &[0u8; 16]);
        for (i, b) in &flips {
            let i = i.index(buf.len());
            buf[i] ^= *b;
        }
        if truncate {
            buf.truncate(cut.index(buf.len() + 1));
        }
        decode_all(&buf, &Limits::UNLIMITED);
        decode_all(&buf, &Limits::svcrdma(8, 4096));
        if let Ok(d) = Header::decode(&buf, &Limits::UNLIMITED) {
            if let Body::Msg(c) | Body::NoMsg(c) = d.header.body {
                let back = Owned {
                    reads: c.reads.segments().collect(),
                    writes: c.writes.chunks().map(|w| w.segments().collect()).collect(),
                    reply: c.reply.map(|r| r.segments().collect()),
                };
                let again = encode_owned(
                    d.header.xid,
                    d.header.credits,
                    d.header.body.proc(),
                    &back,
                    &[],
                );
                prop_assert_eq!(&again[..], &buf[..d.payload_offset]);
            }
        }
    }

    /// Every rejection by the responder maps to a verdict, and ERR_VERS exactly for a bad
    /// version.
    #[test]
    fn responder_verdicts(bytes in prop::collection::vec(any::<u8>(), 16..128)) {
        if let Err(e) = Header::decode_call(&bytes, &Limits::svcrdma(260, 4096)) {
            let v = e.verdict(Role::Responder);
            prop_assert_eq!(v == Verdict::ErrVers, matches!(e, Error::BadVersion(_)));
        }
    }

    /// The responder's reply header, built from a decoded call, is accepted by a requester
    /// and reports exactly the payload lengths written.
    #[test]
    fn server_reply_round_trip(
        writes in prop::collection::vec(segment(), 1..6),
        reply in prop::option::of(prop::collection::vec(segment(), 1..6)),
        frac in 0u64..=100,
        use_reply in any::<bool>(),
    ) {
        let o = Owned { reads: vec![], writes: vec![writes], reply };
        let call = encode_owned(3, 64, Proc::Msg, &o, &[]);
        let d = Header::decode(&call, &Limits::UNLIMITED).unwrap();
        let chunks = *d.header.body.chunks().unwrap();
        let wlen = chunks.writes.chunks().next().unwrap().length();
        let payload = u32::try_from(wlen * frac / 100).unwrap_or(u32::MAX).min(u32::try_from(wlen).unwrap_or(u32::MAX));
        let reply_len = match chunks.reply {
            Some(r) if use_reply => Some(u32::try_from(r.length().max(1) - 1).unwrap_or(u32::MAX).max(1)),
            _ => None,
        };
        // The reply chunk must be long enough for the bytes written.
        let reply_len = reply_len.filter(|&n| u64::from(n) <= chunks.reply.map_or(0, |r| r.length()));
        let mut out = vec![0u8; 512];
        let mut e = Encoder::new(&mut out);
        let payloads = [if reply_len.is_some() { 0 } else { payload }];
        let len = v1::encode_reply(&mut e, 3, 64, &chunks, &payloads, reply_len).unwrap();
        prop_assert_eq!(len, v1::reply_header_len(&chunks, reply_len.is_some()));
        let r = Header::decode_reply(&out[..len], &Limits::UNLIMITED).unwrap();
        prop_assert_eq!(r.payload_offset, len);
        let rc = r.header.body.chunks().unwrap();
        prop_assert_eq!(rc.writes.total_length(), u64::from(payloads[0]));
        prop_assert_eq!(rc.reply.map(|c| c.length()), reply_len.map(u64::from));
        // Segment counts, handles and offsets are echoed unchanged.
        let sent: Vec<(u32, u64)> = chunks.writes.chunks().flat_map(|c| c.segments()).map(|s| (s.handle, s.offset)).collect();
        let got: Vec<(u32, u64)> = rc.writes.chunks().flat_map(|c| c.segments()).map(|s| (s.handle, s.offset)).collect();
        prop_assert_eq!(sent, got);
    }
}
