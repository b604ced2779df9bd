// SPDX-License-Identifier: GPL-2.0

//! Property tests for the version 2 header codec, continuation and negotiation.

use proptest::prelude::*;
use rpcrdma_proto::continuation::{
    self,
    Fragment,
    Reassembly, //
};
use rpcrdma_proto::negotiate;
use rpcrdma_proto::v2::{
    self,
    Body,
    Chunks,
    ErrorBody,
    Flags,
    Header,
    Limits,
    Outgoing,
    Prefix,
    Property,
    ReadSegment,
    ReverseSupport,
    Segment, //
};
use rpcrdma_proto::v2msg;

fn segment() -> impl Strategy<Value = Segment> {
    (any::<u32>(), any::<u32>(), any::<u64>()).prop_map(|(handle, length, offset)| Segment {
        handle,
        length,
        offset,
    })
}

fn read_segment() -> impl Strategy<Value = ReadSegment> {
    // Few distinct positions so that consecutive segments often share a Read chunk.
    ((0u32..4).prop_map(|p| p * 8), segment())
        .prop_map(|(position, target)| ReadSegment { position, target })
}

/// Owned chunk lists, from which a [`Chunks`] is borrowed.
#[derive(Clone, Debug)]
struct OwnedChunks {
    inv_pick: Option<usize>,
    reads: Vec<ReadSegment>,
    writes: Vec<Vec<Segment>>,
    reply: Option<Vec<Segment>>,
}

impl OwnedChunks {
    fn handles(&self) -> Vec<u32> {
        let mut h: Vec<u32> = self.reads.iter().map(|s| s.target.handle).collect();
        h.extend(self.writes.iter().flatten().map(|s| s.handle));
        h.extend(self.reply.iter().flatten().map(|s| s.handle));
        h
    }

    fn inv_handle(&self) -> u32 {
        let h = self.handles();
        match self.inv_pick {
            Some(i) if !h.is_empty() => h[i % h.len()],
            _ => 0,
        }
    }
}

fn owned_chunks() -> impl Strategy<Value = OwnedChunks> {
    (
        proptest::option::of(any::<usize>()),
        proptest::collection::vec(read_segment(), 0..6),
        proptest::collection::vec(proptest::collection::vec(segment(), 0..4), 0..4),
        proptest::option::of(proptest::collection::vec(segment(), 0..4)),
    )
        .prop_map(|(inv_pick, reads, writes, reply)| OwnedChunks {
            inv_pick,
            reads,
            writes,
            reply,
        })
}

fn error_body() -> impl Strategy<Value = ErrorBody> {
    prop_oneof![
        (any::<u32>(), any::<u32>()).prop_map(|(low, high)| ErrorBody::Vers { low, high }),
        Just(ErrorBody::BadXdr),
        Just(ErrorBody::InvalHtype),
        Just(ErrorBody::InvalFlag),
        any::<u32>().prop_map(|max_chunks| ErrorBody::ReadChunks { max_chunks }),
        any::<u32>().prop_map(|max_chunks| ErrorBody::WriteChunks { max_chunks }),
        any::<u32>().prop_map(|max_segments| ErrorBody::Segments { max_segments }),
        (any::<u32>(), any::<u32>()).prop_map(|(chunk_index, length_needed)| {
            ErrorBody::WriteResource {
                chunk_index,
                length_needed,
            }
        }),
        any::<u32>().prop_map(|length_needed| ErrorBody::ReplyResource { length_needed }),
        Just(ErrorBody::System),
        prop_oneof![Just(0u32), 11u32..].prop_map(ErrorBody::Other),
    ]
}

/// A property whose `HostAuth` data is an index into a byte vector owned by the test case.
#[derive(Clone, Debug)]
enum OwnedProp {
    U32(u32, Option<u32>),
    Brs(Option<u32>),
    HostAuth(Option<Vec<u8>>),
}

fn owned_prop() -> impl Strategy<Value = OwnedProp> {
    prop_oneof![
        (1u32..=4, proptest::option::of(any::<u32>())).prop_map(|(id, v)| OwnedProp::U32(id, v)),
        proptest::option::of(0u32..3).prop_map(OwnedProp::Brs),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..40))
            .prop_map(OwnedProp::HostAuth),
    ]
}

fn borrow_prop(p: &OwnedProp) -> Property<'_> {
    match p {
        OwnedProp::U32(1, v) => Property::Sbsiz(*v),
        OwnedProp::U32(2, v) => Property::Rbsiz(*v),
        OwnedProp::U32(3, v) => Property::Rssiz(*v),
        OwnedProp::U32(_, v) => Property::Rcsiz(*v),
        OwnedProp::Brs(v) => Property::Brs(v.map(|v| ReverseSupport::try_from(v).unwrap())),
        OwnedProp::HostAuth(v) => Property::HostAuth(v.as_deref()),
    }
}

#[derive(Clone, Debug)]
enum OwnedBody {
    Msg(OwnedChunks),
    NoMsg(OwnedChunks),
    Error(ErrorBody),
    ConnProp(Vec<OwnedProp>),
}

fn owned_body() -> impl Strategy<Value = OwnedBody> {
    prop_oneof![
        owned_chunks().prop_map(OwnedBody::Msg),
        owned_chunks().prop_map(OwnedBody::NoMsg),
        error_body().prop_map(OwnedBody::Error),
        proptest::collection::vec(owned_prop(), 0..8).prop_map(OwnedBody::ConnProp),
    ]
}

/// Owned copy of decoded chunk lists: inv handle, reads, writes, reply.
type Collected = (
    u32,
    Vec<ReadSegment>,
    Vec<Vec<Segment>>,
    Option<Vec<Segment>>,
);

fn collect(l: &v2::ChunkLists<'_>) -> Collected {
    (
        l.inv_handle,
        l.reads.iter().collect(),
        l.writes.iter().map(|c| c.iter().collect()).collect(),
        l.reply.map(|c| c.iter().collect()),
    )
}

/// Walks every view of a decoded header, as a consumer would.
fn walk(h: &Header<'_>) -> usize {
    let mut n = 0;
    match h.body {
        Body::Msg(l) | Body::NoMsg(l) => {
            n += l.reads.iter().count();
            for c in l.reads.chunks() {
                n += c.iter().count();
                let _ = c.total_length();
            }
            for c in l.writes.iter() {
                n += c.iter().count();
                let _ = c.total_length();
            }
            if let Some(r) = l.reply {
                n += r.iter().count();
            }
            let _ = l.has_handle(0) || l.has_position_zero();
        }
        Body::ConnProp(s) => {
            n += s.raw().count() + s.iter().count();
            let _ = s.resolve();
        }
        Body::Error(e) => {
            let _ = e.code();
        }
        Body::ConnPropFragment => {}
    }
    n
}

proptest! {
    #[test]
    fn encode_decode_round_trip(
        xid in any::<u32>(),
        credit in any::<u32>(),
        response in any::<bool>(),
        more in any::<bool>(),
        body in owned_body(),
        payload in proptest::collection::vec(any::<u8>(), 0..16),
    ) {
        let props: Vec<Property<'_>> = match &body {
            OwnedBody::ConnProp(p) => p.iter().map(borrow_prop).collect(),
            _ => Vec::new(),
        };
        let (writes, chunks) = match &body {
            OwnedBody::Msg(c) | OwnedBody::NoMsg(c) => {
                let w: Vec<&[Segment]> = c.writes.iter().map(Vec::as_slice).collect();
                (w, Some(c))
            }
            _ => (Vec::new(), None),
        };
        let ch = chunks.map(|c| Chunks {
            inv_handle: c.inv_handle(),
            reads: &c.reads,
            writes: &writes,
            reply: c.reply.as_deref(),
        });
        let out = match &body {
            OwnedBody::Msg(_) => Outgoing::Msg(ch.unwrap()),
            OwnedBody::NoMsg(_) => Outgoing::NoMsg(ch.unwrap()),
            OwnedBody::Error(e) => Outgoing::Error(*e),
            OwnedBody::ConnProp(_) => Outgoing::ConnProp(&props),
        };
        // F_MORE only where the protocol allows it, so the header is valid.
        let more = more && matches!(out, Outgoing::Msg(c) if c.lists_empty() && c.inv_handle == 0);
        let prefix = Prefix { xid, credit, flags: Flags { response, more } };
        let mut buf = vec![0u8; 4096];
        let n = v2::encode(&mut buf, &prefix, &out).unwrap();
        buf.truncate(n);
        buf.extend_from_slice(&payload);
        let (h, off) = Header::decode(&buf, &Limits::UNLIMITED).unwrap();
        prop_assert_eq!(off, n);
        prop_assert_eq!(h.prefix, prefix);
        prop_assert_eq!(h.htype(), out.htype());
        match (&body, h.body) {
            (OwnedBody::Msg(c), Body::Msg(l)) | (OwnedBody::NoMsg(c), Body::NoMsg(l)) => {
                prop_assert_eq!(
                    collect(&l),
                    (c.inv_handle(), c.reads.clone(), c.writes.clone(), c.reply.clone())
                );
                prop_assert_eq!(l.reads.chunks().map(|c| c.len()).sum::<usize>(), c.reads.len());
            }
            (OwnedBody::Error(e), Body::Error(d)) => prop_assert_eq!(*e, d),
            (OwnedBody::ConnProp(_), Body::ConnProp(s)) => {
                prop_assert_eq!(s.iter().collect::<Vec<_>>(), props.clone());
            }
            (_, b) => prop_assert!(false, "wrong body {:?}", b),
        }
        // Every strict prefix of the header is refused, never a panic.
        for cut in 0..n {
            prop_assert!(Header::decode(&buf[..cut], &Limits::UNLIMITED).is_err());
        }
    }

    /// `rdma_inv_handle` is a Call's (draft Section 6.3.3): the codec takes any value in any
    /// header, and the Call rule accepts zero or a handle of the header's segments only.
    #[test]
    fn inv_handle_rule_is_the_calls(
        c in owned_chunks(),
        named in any::<bool>(),
        other in any::<u32>(),
        response in any::<bool>(),
        nomsg in any::<bool>(),
    ) {
        let inv = if named { c.inv_handle() } else { other };
        let writes: Vec<&[Segment]> = c.writes.iter().map(Vec::as_slice).collect();
        let ch = Chunks { inv_handle: inv, reads: &c.reads, writes: &writes, reply: c.reply.as_deref() };
        let out = if nomsg { Outgoing::NoMsg(ch) } else { Outgoing::Msg(ch) };
        let prefix = Prefix { xid: 5, credit: 1, flags: Flags { response, more: false } };
        let mut buf = vec![0u8; 4096];
        let n = v2::encode(&mut buf, &prefix, &out).unwrap();
        let (h, _) = Header::decode(&buf[..n], &Limits::UNLIMITED).unwrap();
        let (Body::Msg(l) | Body::NoMsg(l)) = h.body else {
            panic!("wrong body {:?}", h.body)
        };
        prop_assert_eq!(l.inv_handle, inv);
        prop_assert_eq!(
            l.check_call_inv_handle().is_ok(),
            inv == 0 || c.handles().contains(&inv)
        );
    }

    /// Version 2 Calls whose Write chunks may be empty (no segment, draft Section 4.4.6) are
    /// accepted with each chunk's length; a responder's reply echoing them with payloads that
    /// fit is accepted by a requester. The same lists in version 1 are refused exactly when a
    /// chunk is empty.
    #[test]
    fn empty_write_chunks_in_version_2(
        writes in proptest::collection::vec(
            proptest::collection::vec((1u32..100, 0u32..5000), 0..4), 1..5),
        seed in any::<u32>(),
    ) {
        use rpcrdma_proto::v1;
        use rpcrdma_proto::xdr::Encoder;
        let segs: Vec<Vec<Segment>> = writes
            .iter()
            .map(|c| c.iter().map(|&(handle, length)| Segment { handle, length, offset: 0 }).collect())
            .collect();
        let ws: Vec<&[Segment]> = segs.iter().map(Vec::as_slice).collect();
        let lists = v1::Lists { writes: &ws, ..v1::Lists::default() };
        let lim = v1::Limits::svcrdma(260, 4096);
        let mut buf = vec![0u8; 1024];
        let n = v2msg::encode_call(&mut Encoder::new(&mut buf), (3, 1), v1::Proc::Msg, &lists, 0)
            .unwrap();
        buf.truncate(n);
        buf.extend_from_slice(&[0; 8]);
        let Ok(v2msg::Inbound::Call(c)) = v2msg::decode_call(&buf, &lim) else {
            panic!("refused: {:?}", v2msg::decode_call(&buf, &lim));
        };
        prop_assert_eq!(c.write_count(), segs.len());
        for (i, chunk) in segs.iter().enumerate() {
            let len: u64 = chunk.iter().map(|s| u64::from(s.length)).sum();
            prop_assert_eq!(c.write_len(i), Some(len));
        }
        let chunks = c.chunks(&buf);
        let payloads: Vec<u32> = (0..segs.len())
            .map(|i| (c.write_len(i).unwrap() as u32).min(seed.rotate_left(i as u32 * 7) % 6000))
            .collect();
        let mut out = vec![0u8; v2msg::reply_header_len(&chunks, false)];
        let m = v2msg::encode_reply(&mut Encoder::new(&mut out), 3, 1, &chunks, &payloads, None)
            .unwrap();
        let l = v1::Limits { max_write_chunks: segs.len() as u32, ..v1::Limits::UNLIMITED };
        let Ok(v2msg::Reply::Rpc(d)) = v2msg::decode_reply(&out[..m], &l) else {
            panic!("reply refused: {:?}", v2msg::decode_reply(&out[..m], &l));
        };
        let echo: Vec<(u32, u64)> = d.header.body.chunks().unwrap().writes.chunks()
            .map(|w| (w.segment_count(), w.length()))
            .collect();
        let want: Vec<(u32, u64)> = segs.iter().zip(&payloads)
            .map(|(c, &p)| (c.len() as u32, u64::from(p)))
            .collect();
        prop_assert_eq!(echo, want);
        let mut v1b = vec![0u8; 1024];
        let k = v1::encode(&mut Encoder::new(&mut v1b), 3, 1, v1::Proc::Msg, &lists).unwrap();
        let empty = segs.iter().any(Vec::is_empty);
        prop_assert_eq!(
            v1::Call::decode(&v1b[..k], &lim).err(),
            empty.then_some(v1::Error::Chunk(v1::ChunkError::EmptyChunk))
        );
    }

    /// A responder's refusal of a message is the same whether it takes it as a fragment of a
    /// continued Call or not, and an `RDMA2_ERROR` is never answered either way (so one that
    /// breaks a sequence leaves the answer to the sequence's XID to the responder).
    #[test]
    fn call_fragment_refuses_as_decode_call(
        mut words in proptest::collection::vec(
            prop_oneof![0u32..12, Just(v2::F_MORE), Just(v2::F_RESPONSE), any::<u32>()], 0..24),
        patch in any::<bool>(),
        htype in prop_oneof![Just(v2::MSG), Just(v2::NOMSG), Just(v2::ERROR), Just(v2::CONNPROP)],
    ) {
        use rpcrdma_proto::v1;
        if patch && words.len() >= 4 {
            words[1] = v2::VERSION;
            words[3] = htype;
        }
        let msg: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes()).collect();
        let lim = v1::Limits::svcrdma(260, 4096);
        if let Err(r) = v2msg::call_fragment(&msg, &lim) {
            prop_assert_eq!(Err(r), v2msg::decode_call(&msg, &lim));
        }
        if words.len() >= 4 && words[3] == v2::ERROR {
            prop_assert_eq!(v2msg::call_fragment(&msg, &lim).err(), Some(v2msg::Refusal::Drop));
        }
    }

    #[test]
    fn random_bytes_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..256),
        r in 0u32..4, w in 0u32..4, s in 0u32..8,
    ) {
        let limits = Limits { max_read_chunks: r, max_write_chunks: w, max_segments: s };
        for l in [limits, Limits::UNLIMITED] {
            if let Ok((h, off)) = Header::decode(&bytes, &l) {
                prop_assert!(off <= bytes.len());
                walk(&h);
            }
            if let Ok((h, off)) = Header::decode_continued(&bytes, &l) {
                prop_assert!(off <= bytes.len());
                walk(&h);
            }
        }
        let _ = v2::PropSet::decode(&bytes).map(|(s, _)| s.resolve());
        let _ = negotiate::classify(&bytes);
    }

    #[test]
    fn mutated_headers_never_panic_and_reencode(
        body in owned_body(),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
        cut in any::<usize>(),
    ) {
        let props: Vec<Property<'_>> = match &body {
            OwnedBody::ConnProp(p) => p.iter().map(borrow_prop).collect(),
            _ => Vec::new(),
        };
        let c = match &body {
            OwnedBody::Msg(c) | OwnedBody::NoMsg(c) => c.clone(),
            _ => OwnedChunks { inv_pick: None, reads: vec![], writes: vec![], reply: None },
        };
        let writes: Vec<&[Segment]> = c.writes.iter().map(Vec::as_slice).collect();
        let ch = Chunks { inv_handle: c.inv_handle(), reads: &c.reads, writes: &writes, reply: c.reply.as_deref() };
        let out = match &body {
            OwnedBody::Msg(_) => Outgoing::Msg(ch),
            OwnedBody::NoMsg(_) => Outgoing::NoMsg(ch),
            OwnedBody::Error(e) => Outgoing::Error(*e),
            OwnedBody::ConnProp(_) => Outgoing::ConnProp(&props),
        };
        let mut buf = vec![0u8; 4096];
        let n = v2::encode(&mut buf, &Prefix::default(), &out).unwrap();
        buf.truncate(n);
        for (at, v) in flips {
            let i = at % n;
            buf[i] = v;
        }
        buf.truncate(cut % (n + 1));
        let limits = Limits { max_read_chunks: 2, max_write_chunks: 2, max_segments: 3 };
        if let Ok((h, off)) = Header::decode(&buf, &limits) {
            walk(&h);
            // What decodes re-encodes to the same bytes (the encoding is canonical).
            let reads: Vec<ReadSegment>;
            let wv: Vec<Vec<Segment>>;
            let ws: Vec<&[Segment]>;
            let rv: Option<Vec<Segment>>;
            let re = match h.body {
                Body::Msg(l) | Body::NoMsg(l) => {
                    let (inv, r, w, rp) = collect(&l);
                    reads = r;
                    wv = w;
                    ws = wv.iter().map(Vec::as_slice).collect();
                    rv = rp;
                    let ch = Chunks { inv_handle: inv, reads: &reads, writes: &ws, reply: rv.as_deref() };
                    Some(if matches!(h.body, Body::Msg(_)) { Outgoing::Msg(ch) } else { Outgoing::NoMsg(ch) })
                }
                Body::Error(e) => Some(Outgoing::Error(e)),
                _ => None,
            };
            if let Some(re) = re {
                let mut again = vec![0u8; 4096];
                let m = v2::encode(&mut again, &h.prefix, &re).unwrap();
                prop_assert_eq!(&again[..m], &buf[..off]);
            }
        }
    }

    #[test]
    fn continuation_obeys_bounds(
        max_fragments in 0u32..6,
        max_len in 0usize..200,
        frags in proptest::collection::vec(
            (0u32..2, prop_oneof![Just(0u32), Just(1), Just(4), Just(5), Just(9)], 0u32..5, 0usize..80),
            0..40,
        ),
    ) {
        let mut r = Reassembly::new(continuation::Limits { max_fragments, max_len });
        // Model: the sequence in progress as (xid, htype, response, count, len).
        let mut model: Option<(u32, u32, bool, u32, usize)> = None;
        for (xid, htype, flags, len) in frags {
            let f = Fragment { xid, htype, flags, len };
            let more = flags & v2::F_MORE != 0;
            let response = flags & v2::F_RESPONSE != 0;
            let res = r.feed(f);
            match res {
                Ok(p) => {
                    let (count, offset) = match model {
                        Some((mx, mh, mr, c, l)) => {
                            prop_assert!(mx == xid && mh == htype && mr == response);
                            (c + 1, l)
                        }
                        None => (1, 0),
                    };
                    prop_assert_eq!(p.offset, offset);
                    prop_assert_eq!(p.len, len);
                    prop_assert_eq!(p.index, count - 1);
                    prop_assert!(count <= max_fragments);
                    prop_assert!(p.end() <= max_len);
                    prop_assert_eq!(p.complete, !more);
                    prop_assert!(flags & !v2::F_KNOWN == 0);
                    prop_assert!(!more || htype == v2::MSG || htype == v2::CONNPROP);
                    model = if more { Some((xid, htype, response, count, p.end())) } else { None };
                }
                Err(e) => {
                    prop_assert!(e.code() == v2::ERR_INVAL_FLAG || e.code() == v2::ERR_SYSTEM);
                    if let continuation::Error::Mismatch { xid: mx, htype: mh, .. } = e {
                        let (ox, oh, _, _, _) = model.unwrap();
                        prop_assert_eq!((mx, mh), (ox, oh));
                    }
                    model = None;
                }
            }
            prop_assert_eq!(r.in_progress(), model.is_some());
            prop_assert_eq!(r.received(), model.map_or(0, |m| m.4));
        }
    }

    /// Whatever a version 1 responder answers our version 2 offer with (RFC 8166 layout,
    /// `ERR_VERS` 1..1 or `ERR_CHUNK`, `rdma_vers` copied or its own, any bytes after it), the
    /// requester goes on in version 1; what a version 2 responder answers is read in the
    /// version 2 layout.
    #[test]
    fn offer_answers_read_in_their_layout(
        copied in any::<bool>(),
        chunk in any::<bool>(),
        tail in proptest::collection::vec(any::<u32>(), 0..4),
        body in error_body(),
        response in any::<bool>(),
    ) {
        let mut w = vec![7, if copied { 2 } else { 1 }, 32, 4];
        w.extend_from_slice(if chunk { &[2][..] } else { &[1, 1, 1][..] });
        w.extend_from_slice(&tail);
        let answer: Vec<u8> = w.iter().flat_map(|v| v.to_be_bytes()).collect();
        let mut r = negotiate::Requester::new(negotiate::PeerMemory::new());
        r.on_call_sent();
        let reply = negotiate::classify(&answer).unwrap();
        prop_assert_eq!(r.on_reply(reply), Ok(negotiate::Action::Resend { vers: 1 }));
        prop_assert!(r.peer().lacks_v2());

        let prefix = Prefix { xid: 7, credit: 32, flags: Flags { response, more: false } };
        let mut buf = vec![0u8; 64];
        let n = v2::encode(&mut buf, &prefix, &Outgoing::Error(body)).unwrap();
        let want = match body {
            ErrorBody::Vers { low, high } if low <= high => {
                negotiate::Reply::ErrVers { low, high }
            }
            // An empty range is nobody's: read in the version 1 layout.
            ErrorBody::Vers { .. } => return Ok(()),
            _ => negotiate::Reply::OtherError { vers: 2 },
        };
        prop_assert_eq!(negotiate::classify(&buf[..n]), Ok(want));
    }

    #[test]
    fn negotiation_never_loops(
        replies in proptest::collection::vec(
            prop_oneof![
                (0u32..4).prop_map(|vers| negotiate::Reply::Normal { vers }),
                (0u32..4).prop_map(|vers| negotiate::Reply::OtherError { vers }),
                (0u32..4, 0u32..4).prop_map(|(low, high)| negotiate::Reply::ErrVers { low, high }),
            ],
            1..8,
        ),
    ) {
        let mut r = negotiate::Requester::new(negotiate::PeerMemory::new());
        r.on_call_sent();
        let mut resends = 0;
        for reply in replies {
            match r.on_reply(reply) {
                Ok(negotiate::Action::Resend { vers }) => {
                    resends += 1;
                    prop_assert_eq!(vers, 1);
                    prop_assert!(r.peer().lacks_v2());
                }
                Ok(negotiate::Action::Proceed) => prop_assert!(r.settled()),
                Err(_) => break,
            }
        }
        prop_assert!(resends <= 1);
    }

    #[test]
    fn connprops_round_trip_and_threshold(
        sbsiz in any::<u32>(),
        rbsiz in any::<u32>(),
        rssiz in any::<u32>(),
        rcsiz in any::<u32>(),
        brs in 0u32..3,
        credit in any::<u32>(),
        ours in any::<u32>(),
    ) {
        let props = v2msg::ConnProps {
            sbsiz,
            rbsiz,
            rssiz,
            rcsiz,
            brs: ReverseSupport::try_from(brs).unwrap(),
        };
        let mut buf = [0u8; v2msg::ConnProps::ENCODED_LEN];
        prop_assert_eq!(props.encode(&mut buf, credit), Ok(buf.len()));
        let lim = rpcrdma_proto::v1::Limits::UNLIMITED;
        prop_assert_eq!(v2msg::decode_call(&buf, &lim), Ok(v2msg::Inbound::ConnProp(props)));
        prop_assert_eq!(v2msg::decode_reply(&buf, &lim), Ok(v2msg::Reply::ConnProp(props)));
        // Never above what we had nor above the peer's buffers; refused below the minimum.
        match props.send_threshold(ours) {
            Ok(t) => prop_assert!(t <= ours && t <= rbsiz && rbsiz >= v2msg::MIN_RBSIZ),
            Err(v2msg::Unusable::ReceiveBuffer(r)) => {
                prop_assert!(r == rbsiz && rbsiz < v2msg::MIN_RBSIZ)
            }
            Err(e) => prop_assert!(false, "send_threshold: {:?}", e),
        }
        // Segments: never deeper nor more than before, nor than the peer takes, and still
        // room for the largest payload in one chunk; refused when not even one page or two
        // segments fit, or when that payload would not.
        let (depth, segs) = (ours % 600, ours % 20);
        let payload = u64::from(rpcrdma_proto::marshal::max_data_segs(4096));
        // Segments a chunk covering a whole buffer needs at depth `d`: the payload's, a head
        // and a tail.
        let need = |d: u32| match d {
            0 => u64::MAX,
            d => payload.div_ceil(u64::from(d)) + 2,
        };
        match props.segment_caps(depth, segs, 4096) {
            Ok((d, s, total)) => {
                prop_assert!(d <= depth && u64::from(d) * 4096 <= u64::from(rssiz));
                prop_assert!(s <= segs && s <= rcsiz && total == rcsiz);
                prop_assert!(d == depth || d == rssiz / 4096);
                prop_assert!(s == segs || s == rcsiz);
                prop_assert!(u64::from(s) >= need(d));
            }
            Err(v2msg::Unusable::SegmentSize(r)) => prop_assert!(r == rssiz && rssiz < 4096),
            Err(v2msg::Unusable::SegmentCount(c)) => {
                prop_assert!(c == rcsiz && rcsiz < 2 && rssiz >= 4096)
            }
            Err(v2msg::Unusable::Payload { depth: d, segs: s }) => {
                prop_assert!(rssiz >= 4096 && rcsiz >= 2);
                prop_assert!(d == depth.min(rssiz / 4096) && s == segs.min(rcsiz));
                prop_assert!(u64::from(s) < need(d));
            }
            Err(e) => prop_assert!(false, "segment_caps: {:?}", e),
        }
        // Cut short anywhere, it is never accepted.
        for n in 0..buf.len() {
            prop_assert!(!matches!(
                v2msg::decode_call(&buf[..n], &lim),
                Ok(v2msg::Inbound::ConnProp(_))
            ));
        }
    }
}
