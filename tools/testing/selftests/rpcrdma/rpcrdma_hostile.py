#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""A hostile RPC-over-RDMA requester, version 1 and version 2 (pyverbs, librdmacm).

Usage: rpcrdma_hostile.py ADDR CASE

Connects to ADDR:20049 with RFC 8797 private data, sends the message of CASE and prints one
line saying what came back:

  ERR_VERS <low> <high>  an RDMA_ERROR/ERR_VERS echoing our xid
  ERR_CHUNK              an RDMA_ERROR/ERR_CHUNK echoing our xid
  REPLY <accept_stat>    an RDMA_MSG carrying an RPC reply to our xid
  NOMSG_REPLY <accept_stat>  an RDMA_NOMSG whose RPC reply to our xid was written into our
                         Reply chunk
  (nothing; killed by SIGALRM after TIMEOUT seconds: the message was dropped)
  DISCONNECT             the connection ended (a Receive completed in error)
  OTHER <hex>            anything else
  CLOSED                 sq_stall: the server's Send Queue filled up and the server
                         closed the connection, counting it in server_sq_timeouts

and for the v2_* cases (a server loaded with max_version=2):

  ERR2 <code>            an RDMA2_ERROR echoing our xid, with F_RESPONSE
  REPLY2 <accept_stat> CONNPROP <rbsiz> <rcsiz>
                         an RDMA2_MSG carrying an RPC reply to our xid, then the server's
                         RDMA2_CONNPROP (xid 0, no flag) with its Receive Buffer Size and
                         Maximum RDMA Segment Count
  REPLY2 ... SILENT      v2_silent (a server loaded with a keepalive interval): the answer
                         to a NULL call as above; then we sent one credit refresh (we keep
                         alive too) and stayed silent for SILENT seconds, with Receives
                         posted for the server's refreshes; the caller checks the server's
                         counters for the connection it closed

CASE is one of the keys of CASES below. Exit status 0 unless the program itself failed.
"""

import os
import signal
import struct
import sys
import time

from pyverbs.cmid import AddrInfo, CMID, ConnParam
import pyverbs.cm_enums as ce
import pyverbs.enums as e
from pyverbs.qp import QPCap, QPInitAttr

XID = 0x1234abcd
PORT = "20049"
# Seconds to wait for an answer, times RPCRDMA_SLOW (lib.sh: 5 on the debug kernel).
TIMEOUT = 8 * int(os.environ.get("RPCRDMA_SLOW", "1"))
# v2_silent: how long we stay silent (the server's keepalive is 1 s: it must give up on us
# after 3 of our intervals, which it learns from our one refresh).
SILENT = 12 * int(os.environ.get("RPCRDMA_SLOW", "1"))

# The Linux client's private data: magic, version 1, remote invalidation, 4 KiB both ways.
PRIVATE_DATA = bytes([0xF6, 0xAB, 0x0E, 0x18, 0x01, 0x01, 0x03, 0x03])


class TrueZero(int):
    """A length of 0 that is true: CMID.post_send (rdma-core 44) sends the MR's whole length
    for a length that is false, and a zero-length Send needs 0 itself."""

    def __new__(cls):
        return super().__new__(cls, 0)

    def __bool__(self):
        return True


def u32(*vals):
    return b"".join(struct.pack(">I", v & 0xFFFFFFFF) for v in vals)


def fixed(vers=1, proc=0, xid=XID, credits=32):
    return u32(xid, vers, credits, proc)


def null_call(xid=XID):
    """RPC NULL call to NFS version 3, AUTH_NONE."""
    return u32(xid, 0, 2, 100003, 3, 0, 0, 0, 0, 0)


def read_seg(pos, handle, length, offset):
    return u32(1, pos, handle, length) + struct.pack(">Q", offset)


EMPTY_LISTS = u32(0, 0, 0)

# Version 2 (rpcrdma-v2 draft): header types, flags, property ids.
RDMA2_MSG, RDMA2_NOMSG, RDMA2_ERROR, RDMA2_CONNPROP = 0, 1, 4, 5
F_RESPONSE, F_MORE = 1, 2
PROPID_RBSIZ, PROPID_RCSIZ, PROPID_BRS = 2, 4, 5


def prefix2(htype, xid=XID, flags=0, credits=32):
    """A version 2 transport header prefix: xid, version 2, the credit word, type, flags."""
    return u32(xid, 2, credits << 16 | credits, htype, flags)


def connprop(props, xid=0, flags=0):
    """An RDMA2_CONNPROP with the (id, bytes) properties."""
    body = u32(len(props))
    for which, data in props:
        body += u32(which, len(data)) + data + b"\0" * (-len(data) % 4)
    return prefix2(RDMA2_CONNPROP, xid=xid, flags=flags) + body


def v2_null(flags=0, credits=32, inv=0, lists=EMPTY_LISTS):
    """An RDMA2_MSG carrying an RPC NULL call: prefix, no inv handle, no chunks."""
    return prefix2(RDMA2_MSG, flags=flags, credits=credits) + u32(inv) + lists + null_call()


def read_segs(n):
    """A Read list of `n` Read chunks of one segment each, at positions 4, 8, ..."""
    return b"".join(read_seg(4 * (i + 1), 0x4000 + i, 4, 0x1000) for i in range(n)) + u32(0)

# The XID of the backward-direction Replies we make up.
BC_XID = 0x0BAD0BAD


def bc_reply(xid, length):
    """An RPC Reply of `length` bytes: xid, REPLY, MSG_ACCEPTED, AUTH_NONE, SUCCESS, padding."""
    rpc = u32(xid, 1, 0, 0, 0, 0)
    return rpc + b"\0" * (length - len(rpc))

CASES = {
    # A well-formed RDMA_MSG carrying an RPC NULL call: the server must answer it.
    "null": fixed() + EMPTY_LISTS + null_call(),
    # Fewer than the four fixed words, but our xid and version: ERR_CHUNK (RFC 8166, section
    # 5.5.2), as svcrdma answers it.
    "short": u32(XID, 1, 32),
    # A zero-length Send (BEFORE), then a NULL call: with no xid to echo the empty message is
    # dropped (and counted: server_short_dropped), and the connection still answers the call.
    "zero_len": fixed() + EMPTY_LISTS + null_call(),
    # Wrong version: ERR_VERS.
    "badvers": fixed(vers=2) + EMPTY_LISTS + null_call(),
    # Our xid, then all-ones garbage: version 0xffffffff, ERR_VERS.
    "garbage": u32(XID) + b"\xff" * 60,
    # Undefined procedure: ERR_CHUNK.
    "badproc": fixed(proc=7) + EMPTY_LISTS,
    # RDMA_MSGP (reserved): ERR_CHUNK.
    "msgp": fixed(proc=2) + EMPTY_LISTS,
    # An RDMA_ERROR sent to the server: dropped.
    "rdma_error": fixed(proc=4) + u32(2),
    # The header ends inside the chunk lists: ERR_CHUNK.
    "truncated_lists": fixed() + u32(1, 0, 0x1111),
    # A list discriminator that is neither 0 nor 1: ERR_CHUNK.
    "bad_discriminant": fixed() + u32(5, 0, 0) + null_call(),
    # A Write chunk claiming 2^32-1 segments: ERR_CHUNK.
    "bogus_count": fixed() + u32(0, 1, 0xFFFFFFFF) + u32(0x2222, 64) + struct.pack(">Q", 0)
    + u32(0, 0) + null_call(),
    # Two Read chunks overlapping in the rebuilt message: ERR_CHUNK.
    "overlap": fixed() + read_seg(8, 0x3333, 100, 0x1000) + read_seg(12, 0x3334, 100, 0x2000)
    + u32(0, 0, 0) + null_call(),
    # A Read chunk positioned beyond the inline payload: ERR_CHUNK.
    "pos_beyond": fixed() + read_seg(4000, 0x3333, 16, 0x1000) + u32(0, 0, 0) + null_call(),
    # A Read chunk longer than any Call may be: ERR_CHUNK.
    "too_long": fixed() + read_seg(40, 0x3333, 0x7FFFFFF0, 0x1000) + u32(0, 0, 0) + null_call(),
    # An unaligned Read chunk position: ERR_CHUNK.
    "unaligned": fixed() + read_seg(6, 0x3333, 16, 0x1000) + u32(0, 0, 0) + null_call(),
    # RDMA_NOMSG without a Position-Zero Read chunk: ERR_CHUNK.
    "nomsg_no_pz": fixed(proc=1) + EMPTY_LISTS,
    # A Read chunk naming memory we never registered: the RDMA Read fails, the server closes
    # the connection.
    "out_of_range": fixed() + read_seg(40, 0xDEAD, 4096, 0xDEAD0000) + u32(0, 0, 0)
    + null_call(),
    # A backward-direction Reply (RFC 8167) to a Call the server never sent, then a NULL call:
    # the Reply is dropped (and counted: srv_drop_reply), never taken for a Call, and the
    # connection still answers the NULL call.
    "bc_reply_unknown": fixed() + EMPTY_LISTS + null_call(),
    # A backward-direction Reply larger than the server's inline threshold (its 4 KiB Receive
    # buffers): the Receive fails, the server closes the connection.
    "bc_reply_big": fixed(xid=BC_XID) + EMPTY_LISTS + bc_reply(BC_XID, 8192),
    # No Receive posted, and infinite RNR retries asked for (rnr_retry 7): none of the
    # server's replies completes. NULL calls (in sq_stall) until its Send Queue is full and its
    # threads wait for entries; the server must close the connection once its Send Queue made
    # no progress for 30 s.
    "sq_stall": None,
    # Version 2 (the server loaded with max_version=2). A NULL call: answered in version 2,
    # then the server's properties follow.
    "v2_null": v2_null(),
    # Our properties with a Reverse Request Support value no RDMA_RVREQSUP_* has: the property
    # does not conform to its typedef, RDMA2_ERR_BAD_XDR (Section 5.1).
    "v2_connprop_bad": connprop([(PROPID_BRS, u32(7))], xid=XID),
    # A continued RDMA2_CONNPROP: continuation is not supported, RDMA2_ERR_INVAL_FLAG.
    "v2_connprop_more": connprop([(PROPID_RBSIZ, u32(4096))], xid=XID, flags=F_MORE),
    # Properties ahead of a NULL call (BEFORE): a Receive Buffer Size too small to honour is
    # ignored (counted), an unknown property is skipped; the call is answered either way.
    "v2_connprop_tiny": v2_null(),
    "v2_connprop_unknown": v2_null(),
    # A call continued with F_MORE (empty lists, allowed on RDMA2_MSG) whose final message
    # never comes: kept, not answered.
    "v2_msg_more": v2_null(flags=F_MORE),
    # Continued calls (messages in MULTI): a NULL call in two messages, answered; two
    # sequences interleaved, RDMA2_ERR_INVAL_FLAG (to ours first: it broke the other); one
    # that exceeds the server's 64 messages, RDMA2_ERR_SYSTEM; one broken by an RDMA2_ERROR
    # of ours (which is dropped, never answered): the sequence is, RDMA2_ERR_INVAL_FLAG.
    "v2_more_call": None,
    "v2_more_interleaved": None,
    "v2_more_endless": None,
    "v2_more_broken": None,
    # A NULL call, then (in main) a credit refresh and silence: the server's keep-alive must
    # close the connection.
    "v2_silent": v2_null(),
    # A header type the draft does not define: RDMA2_ERR_INVAL_HTYPE.
    "v2_bad_htype": prefix2(7) + u32(0) + EMPTY_LISTS,
    # A reserved rdma_flags bit: RDMA2_ERR_INVAL_FLAG.
    "v2_reserved_flag": v2_null(flags=0x10),
    # An rdma_inv_handle naming no handle of the header: RDMA2_ERR_BAD_XDR.
    "v2_inv_handle_unknown": v2_null(inv=0x1234),
    # 17 Read chunks, one more than the server takes: RDMA2_ERR_READ_CHUNKS.
    "v2_read_chunks": prefix2(RDMA2_MSG) + u32(0) + read_segs(17) + u32(0, 0) + null_call(),
    # An RDMA2_ERROR from a requester: never answered (dropped).
    "v2_error_from_client": prefix2(RDMA2_ERROR) + u32(2),
    # No credit asked for (credit word 0): the server answers anyway.
    "v2_credits_zero": v2_null(credits=0),
}

# The messages of the cases sent as several, in order.
MULTI = {
    "v2_more_call": [prefix2(RDMA2_MSG, flags=F_MORE) + u32(0) + EMPTY_LISTS + null_call()[:16],
                     prefix2(RDMA2_MSG) + u32(0) + EMPTY_LISTS + null_call()[16:]],
    "v2_more_interleaved": [
        prefix2(RDMA2_MSG, xid=XID + 1, flags=F_MORE) + u32(0) + EMPTY_LISTS + null_call()[:8],
        prefix2(RDMA2_MSG, flags=F_MORE) + u32(0) + EMPTY_LISTS + null_call()[:8]],
    "v2_more_endless": [prefix2(RDMA2_MSG, flags=F_MORE) + u32(0) + EMPTY_LISTS + u32(0)] * 70,
    "v2_more_broken": [prefix2(RDMA2_MSG, flags=F_MORE) + u32(0) + EMPTY_LISTS + null_call()[:16],
                       prefix2(RDMA2_ERROR, xid=XID + 1) + u32(2)],
}

# Messages sent ahead of a case's own, on the same connection.
BEFORE = {
    "zero_len": b"",
    "bc_reply_unknown": fixed(xid=BC_XID) + EMPTY_LISTS + bc_reply(BC_XID, 24),
    "v2_connprop_tiny": connprop([(PROPID_RBSIZ, u32(512))]),
    "v2_connprop_unknown": connprop([(99, b"\1\2\3"), (PROPID_RBSIZ, u32(8192)),
                                     (PROPID_RCSIZ, b"")]),
}


# Cases whose message needs memory registered on the connection: built in main().
#  - reply_chunk_null: a NULL call offering a Reply chunk; the answer must be a Long Message
#    (RDMA_NOMSG, the reply in the Reply chunk: RFC 8166, section 3.5.4).
#  - pz_plus_read: RDMA_NOMSG with a Position-Zero Read chunk holding a NULL call and a second
#    Read chunk of 4 zero bytes at its end: svcrdma reads both (svc_rdma_read_call_chunk).
#  - write_4m, read_4m: NFSv4.0 COMPOUNDs (PUTROOTFH, LOOKUP "f4m", then WRITE or READ of
#    4 MiB with the anonymous stateid) whose payload travels in one 4 MiB Read chunk or Write
#    chunk: a server whose chunk limit is below nfsd's 4 MiB maximum payload refuses them.
DYNAMIC = ("reply_chunk_null", "pz_plus_read", "write_4m", "read_4m")

# The payload of write_4m and read_4m, and the file they write and read (in the export's root).
BIG = 4 * 1024 * 1024
PATTERN = bytes(range(256)) * (BIG // 256)
BIG_NAME = b"f4m"


def xdr_opaque(b):
    return u32(len(b)) + b + b"\0" * (-len(b) % 4)


def compound_call(ops):
    """An NFSv4.0 COMPOUND call (AUTH_SYS, uid 0) of the encoded operations `ops`."""
    cred = u32(0) + xdr_opaque(b"hostile") + u32(0, 0, 0)
    return (u32(XID, 0, 2, 100003, 4, 1, 1, len(cred)) + cred + u32(0, 0)
            + xdr_opaque(b"") + u32(0, len(ops)) + b"".join(ops))


def big_ops():
    return [u32(24), u32(15) + xdr_opaque(BIG_NAME)]


ANON_STATEID = b"\0" * 16

# v2_more_reply: a READ of MORE_LEN bytes of the file MORE_NAME (the export's root; the script
# writes PATTERN's first 16 KiB into it) offering no chunk: the reply does not fit one 4 KiB
# message, and the server sends it continued (F_MORE, draft Section 6.3.2).
MORE_NAME = b"f16k"
MORE_LEN = 12000
CASES["v2_more_reply"] = (prefix2(RDMA2_MSG) + u32(0) + EMPTY_LISTS + compound_call([
    u32(24), u32(15) + xdr_opaque(MORE_NAME),
    u32(25) + ANON_STATEID + struct.pack(">Q", 0) + u32(MORE_LEN)]))

# v2_write_short: the same READ offering one Write chunk of 4 KiB (a handle the server must not
# use): the result does not fit, and the draft's answer is RDMA2_ERR_WRITE_RESOURCE naming the
# first chunk and the bytes needed (Section 6.4.3), not a reply.
CASES["v2_write_short"] = (prefix2(RDMA2_MSG) + u32(0) + u32(0, 1, 1, 0x1badcafe, 4096)
                           + struct.pack(">Q", 0) + u32(0, 0) + compound_call([
                               u32(24), u32(15) + xdr_opaque(MORE_NAME),
                               u32(25) + ANON_STATEID + struct.pack(">Q", 0) + u32(MORE_LEN)]))


class Unexpected(Exception):
    """An answer that is not a successful COMPOUND reply to our call: "OTHER" (not an accepted
    RPC reply to XID) or "ACCEPT <accept_stat>"."""


def compound_results(w, i):
    """The COMPOUND reply in the RPC reply at word i of w: its status and an iterator over its
    results, (op, status, index of the word after them) each. Every result before the one the
    caller stops at must be a status alone (PUTFH, LOOKUP), as in the calls we send. Raises
    Unexpected for an RPC reply that is not ours or not accepted."""
    # RPC reply: xid, REPLY, MSG_ACCEPTED, verifier, accept_stat
    if w[i] != XID or w[i + 1] != 1 or w[i + 2] != 0:
        raise Unexpected("OTHER")
    i += 4 + (w[i + 4] + 3) // 4 + 1
    if w[i] != 0:
        raise Unexpected("ACCEPT %d" % w[i])
    status, i = w[i + 1], i + 2
    i += 1 + (w[i] + 3) // 4                    # tag
    nres, i = w[i], i + 1

    def results(i):
        for _ in range(nres):
            yield w[i], w[i + 1], i + 2
            i += 2
    return status, results(i)


def classify_more(msgs):
    """The continued answer to v2_more_reply: "MORE <messages> NFS <status> READ <length>
    match" if every message but the last is RDMA2_MSG with F_RESPONSE and F_MORE, the last
    with F_RESPONSE alone, all with our XID, rdma_inv_handle zero and empty chunk lists (the
    draft requires them empty with F_MORE), and their payloads make a COMPOUND reply whose
    READ returns the file's bytes."""
    payload = b""
    for k, m in enumerate(msgs):
        last = k == len(msgs) - 1
        if m is None or len(m) < 36:
            return "BROKEN at message %d" % k
        xid, vers, _credits, htype, flags = struct.unpack(">IIIII", m[:20])
        want = F_RESPONSE if last else F_RESPONSE | F_MORE
        if (xid, vers, htype, flags) != (XID, 2, RDMA2_MSG, want) or m[20:36] != u32(0, 0, 0, 0):
            return "BAD message %d: %s" % (k, m[:36].hex())
        payload += m[36:]
    try:
        w = struct.unpack(">%dI" % (len(payload) // 4), payload[:len(payload) // 4 * 4])
        status, results = compound_results(w, 0)
        for op, st, i in results:
            if st != 0:
                return "MORE %d NFS %d op %d" % (len(msgs), st, op)
            if op == 25:                        # READ: eof, data
                n = w[i + 1]
                data = payload[4 * (i + 2):4 * (i + 2) + n]
                ok = n == MORE_LEN and data == PATTERN[:MORE_LEN]
                return "MORE %d NFS %d READ %d %s" % (len(msgs), status, n,
                                                    "match" if ok else "MISMATCH")
        return "MORE %d NFS %d" % (len(msgs), status)
    except Unexpected as e:
        return e.args[0] + (" " + payload[:64].hex() if e.args[0] == "OTHER" else "")
    except (struct.error, IndexError):
        return "OTHER " + payload[:64].hex()


def dynamic_case(cmid, case):
    """The message of a DYNAMIC case, and the MRs it refers to (kept registered)."""
    if case == "reply_chunk_null":
        rc = cmid.reg_write(4096)
        return (fixed() + u32(0, 0, 1, 1) + u32(rc.rkey, 4096) + struct.pack(">Q", rc.buf)
                + null_call()), [rc]
    if case == "write_4m":
        # The WRITE's data item (after its length word) is the Read chunk, at its XDR position.
        call = compound_call(big_ops() + [u32(38) + ANON_STATEID + struct.pack(">Q", 0)
                                          + u32(2, BIG)])
        data = cmid.reg_read(BIG)
        data.write(PATTERN, BIG)
        return fixed() + read_seg(len(call), data.rkey, BIG, data.buf) + u32(0, 0, 0) + call, [data]
    if case == "read_4m":
        call = compound_call(big_ops() + [u32(25) + ANON_STATEID + struct.pack(">Q", 0)
                                          + u32(BIG)])
        data = cmid.reg_write(BIG)
        return (fixed() + u32(0, 1, 1) + u32(data.rkey, BIG) + struct.pack(">Q", data.buf)
                + u32(0, 0) + call), [data]
    call = null_call()
    pz = cmid.reg_read(len(call))
    pz.write(call, len(call))
    extra = cmid.reg_read(4)
    extra.write(b"\0" * 4, 4)
    msg = (fixed(proc=1) + read_seg(0, pz.rkey, len(call), pz.buf)
           + read_seg(len(call), extra.rkey, 4, extra.buf) + u32(0, 0, 0))
    return msg, [pz, extra]


def classify_nomsg(data, mrs):
    """An RDMA_NOMSG answer whose Reply chunk is our first MR."""
    try:
        words = struct.unpack(">%dI" % (len(data) // 4), data[:len(data) // 4 * 4])
        # xid vers credits proc, read list 0, write list 0, reply chunk present, count, segment
        if words[3] != 1 or words[4:8] != (0, 0, 1, 1) or words[8] != mrs[0].rkey:
            return "OTHER " + data[:64].hex()
        rpc = mrs[0].read(words[9], 0)
        rxid, mtype, rstat, _vf, _vl, astat = struct.unpack(">IIIIII", rpc[:24])
        if rxid == XID and mtype == 1 and rstat == 0:
            return "NOMSG_REPLY %d" % astat
    except (struct.error, IndexError):
        pass
    return "OTHER " + data[:64].hex()


def classify_big(case, data, mrs):
    """The answer to write_4m or read_4m: "NFS <status>" and, if the COMPOUND succeeded, the
    WRITE's count or the READ's length and whether the Write chunk holds the pattern."""
    try:
        w = struct.unpack(">%dI" % (len(data) // 4), data[:len(data) // 4 * 4])
        if w[0] != XID or w[1] != 1 or w[3] != 0 or w[4] != 0:
            return "OTHER " + data[:64].hex()
        i, echoed = 5, []
        while w[i] == 1:                        # Write list: the READ's data, echoed
            n = w[i + 1]
            echoed += [w[i + 2 + 4 * k + 1] for k in range(n)]
            i += 2 + 4 * n
        if w[i + 1] != 0:                       # Reply chunk: none offered
            return "OTHER " + data[:64].hex()
        status, results = compound_results(w, i + 2)
        for op, st, i in results:
            if st != 0:
                return "NFS %d op %d" % (st, op)
            if op == 38:
                return "NFS %d WRITE %d" % (status, w[i])
            if op == 25:
                got = sum(echoed)
                ok = got == BIG and w[i + 1] == BIG and mrs[0].read(BIG, 0) == PATTERN
                return "NFS %d READ %d %s" % (status, got, "match" if ok else "MISMATCH")
        return "NFS %d" % status
    except Unexpected as e:
        return e.args[0] + (" " + data[:64].hex() if e.args[0] == "OTHER" else "")
    except (struct.error, IndexError):
        return "OTHER " + data[:64].hex()


# sq_stall: the server's counters, in this guest: Send Queue reservations that had to wait, and
# connections it closed with its Send Queue full.
SQ_STARVE = "/proc/sys/sunrpc/svc_rdma/rdma_stat_sq_starve"
VERSIONS = "/sys/kernel/debug/rpcrdma_rs/versions"
# More NULL calls than the Send Queue of a connection granting 16 credits holds.
SQ_STALL_CALLS = 5000


def sq_starve():
    with open(SQ_STARVE) as f:
        return int(f.read())


def sq_timeouts():
    with open(VERSIONS) as f:
        for line in f:
            if line.startswith("server_sq_timeouts "):
                return int(line.split()[1])
    return 0


def sq_stall(cmid):
    """The sq_stall case: NULL calls, one at a time, until a reservation of the server's Send
    Queue waits (its Receives are not used up yet: no RNR for our Sends, which may not retry);
    then nothing until the server closes the connection and counts it ("CLOSED"). Our QP does
    not notice the close: a Send after it may wait forever (rxe)."""
    m = fixed() + EMPTY_LISTS + null_call()
    mr = cmid.reg_msgs(len(m))
    mr.write(m, len(m))

    def call():
        cmid.post_send(mr)
        try:
            return cmid.get_send_comp().status == e.IBV_WC_SUCCESS
        except Exception:  # An error completion may surface as an exception.
            return False

    starve = sq_starve()
    for n in range(SQ_STALL_CALLS):
        if sq_starve() != starve:
            break
        if not call():
            return "DISCONNECT after %d calls" % n
    else:
        return "SENT %d" % SQ_STALL_CALLS
    while sq_timeouts() == 0:
        time.sleep(1)
    return "CLOSED"


def classify(data):
    if len(data) < 16:
        return "OTHER " + data.hex()
    xid, vers, _credits, proc = struct.unpack(">IIII", data[:16])
    if xid != XID:
        return "OTHER xid %#x" % xid
    if proc == 4 and len(data) >= 20:
        err = struct.unpack(">I", data[16:20])[0]
        if err == 1 and len(data) >= 28:
            low, high = struct.unpack(">II", data[20:28])
            return "ERR_VERS %d %d" % (low, high)
        if err == 2:
            return "ERR_CHUNK"
    if proc == 0 and vers == 1 and len(data) >= 28 + 24:
        rpc = data[28:]
        rxid, mtype, rstat, _vf, _vl, astat = struct.unpack(">IIIIII", rpc[:24])
        if rxid == XID and mtype == 1 and rstat == 0:
            return "REPLY %d" % astat
    return "OTHER " + data[:64].hex()


def classify_v2(data):
    """What a version 2 message says, or None if it is not one."""
    if len(data) < 20 or struct.unpack(">I", data[4:8])[0] != 2:
        return None
    xid, _vers, _credits, htype, flags = struct.unpack(">IIIII", data[:20])
    if htype == RDMA2_ERROR and xid == XID and flags == F_RESPONSE and len(data) >= 24:
        err = struct.unpack(">I", data[20:24])[0]
        if err == 8 and len(data) >= 32:
            # RDMA2_ERR_WRITE_RESOURCE: the chunk's index and the bytes needed.
            return "ERR2 8 %d %d" % struct.unpack(">II", data[24:32])
        return "ERR2 %d" % err
    if htype == RDMA2_MSG and xid == XID and len(data) >= 36 + 24 and \
            data[20:36] == u32(0, 0, 0, 0):
        rxid, mtype, rstat, _vf, _vl, astat = struct.unpack(">IIIIII", data[36:60])
        if rxid == XID and mtype == 1 and rstat == 0:
            return "REPLY2 %d" % astat
    if htype == RDMA2_CONNPROP and xid == 0 and flags == 0 and len(data) >= 24:
        props, at = {}, 24
        for _ in range(struct.unpack(">I", data[20:24])[0]):
            which, n = struct.unpack(">II", data[at:at + 8])
            props[which] = data[at + 8:at + 8 + n]
            at += 8 + n + (-n % 4)
        word = lambda k: struct.unpack(">I", props[k])[0] if len(props.get(k, b"")) == 4 else 0
        return "CONNPROP %d %d" % (word(PROPID_RBSIZ), word(PROPID_RCSIZ))
    return "OTHER " + data[:64].hex()


def is_refresh(data):
    """A version 2 credit refresh: RDMA2_NOMSG, xid 0, empty chunk lists. The server's
    keep-alive sends them on an idle connection (after 30 s by default: a case waiting that
    long, on the debug kernel, sees one); it is not an answer."""
    return len(data) == 36 and data[:8] == u32(0, 2) and \
        struct.unpack(">I", data[12:16])[0] == RDMA2_NOMSG and data[24:36] == u32(0, 0, 0)


def main():
    addr, case = sys.argv[1], sys.argv[2]
    msg = CASES.get(case)
    ai = AddrInfo(dst=addr, dst_service=PORT, port_space=ce.RDMA_PS_TCP)
    # Receives: two posted at once, 16 more for v2_silent.
    cap = QPCap(max_send_wr=4, max_recv_wr=20, max_send_sge=1, max_recv_sge=1)
    cmid = CMID(creator=ai, qp_init_attr=QPInitAttr(qp_type=e.IBV_QPT_RC, cap=cap,
                                                   sq_sig_all=1))
    recv_mr = cmid.reg_msgs(4096)
    # Receives complete in the order they were posted: a second buffer for what follows a
    # version 2 reply (the server's RDMA2_CONNPROP).
    recv2_mr = cmid.reg_msgs(4096)
    if case != "sq_stall":
        cmid.post_recv(recv_mr)
        cmid.post_recv(recv2_mr)
    # v2_more_reply: room for its continued answer and the properties after it.
    more_mrs = [cmid.reg_msgs(4096) for _ in range(8 if case == "v2_more_reply" else 0)]
    for mr in more_mrs:
        cmid.post_recv(mr)
    # Our memory registered for the DYNAMIC cases cannot be invalidated remotely: offer no
    # Send With Invalidate there (flags 0).
    pd = PRIVATE_DATA[:5] + b"\0" + PRIVATE_DATA[6:] if case in DYNAMIC else PRIVATE_DATA
    param = ConnParam(resources=1, depth=1, retry=7, rnr_retry=7, data_len=len(pd))
    param.set_private_data(pd)
    cmid.connect(param)
    mrs = []
    if case in DYNAMIC:
        msg, mrs = dynamic_case(cmid, case)
    if case == "sq_stall":
        # Some 550 calls, then the server's 30 s.
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.alarm(60 + TIMEOUT * 6)
        print(sq_stall(cmid), flush=True)
        return

    if case in MULTI:
        msgs = MULTI[case]
    elif case in BEFORE:
        msgs = (BEFORE[case], msg)
    else:
        msgs = (msg,)
    for m in msgs:
        send_mr = cmid.reg_msgs(max(len(m), 4))
        if m:
            send_mr.write(m, len(m))
        # A true zero: pyverbs reads a length that is false as the MR's whole length.
        cmid.post_send(send_mr, length=len(m) if m else TrueZero())
        try:
            wc = cmid.get_send_comp()
            sent = wc.status == e.IBV_WC_SUCCESS
        except Exception:  # An error completion may surface as an exception.
            sent = False
        if not sent:
            # The server refused the message (e.g. longer than its Receive buffer) and the
            # connection is gone.
            print("DISCONNECT", flush=True)
            return
    # pyverbs blocks in rdma_get_recv_comp() without releasing the GIL: no thread can time
    # it out. SIGALRM's default action ends the process instead, which the caller reads as
    # "no reply".
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(TIMEOUT * 4 if case in ("write_4m", "read_4m") else TIMEOUT)
    # Receives complete in the order they were posted; a credit refresh is skipped and its
    # buffer posted again.
    posted = [recv_mr, recv2_mr] + more_mrs

    def next_msg():
        while True:
            wc = cmid.get_recv_comp()
            mr = posted.pop(0)
            if wc.status != e.IBV_WC_SUCCESS:
                return None
            data = mr.read(wc.byte_len, 0)
            if not is_refresh(data):
                return data
            cmid.post_recv(mr)
            posted.append(mr)

    try:
        data = next_msg()
        ok = data is not None
        data = data or b""
        if not ok:
            print("DISCONNECT", flush=True)
        elif case in ("write_4m", "read_4m") and len(data) >= 16 and data[12:16] == u32(0):
            print(classify_big(case, data, mrs), flush=True)
        elif case == "reply_chunk_null" and len(data) >= 16 and data[12:16] == u32(1):
            print(classify_nomsg(data, mrs), flush=True)
        elif case == "v2_more_reply":
            msgs = [data]
            while len(msgs) < 16 and msgs[-1] is not None and len(msgs[-1]) >= 20 and \
                    struct.unpack(">I", msgs[-1][16:20])[0] & F_MORE:
                msgs.append(next_msg())
            got = classify_more(msgs)
            if got.startswith("MORE"):
                props = next_msg()
                got += " " + (classify_v2(props) if props is not None else "DISCONNECT")
            print(got, flush=True)
        elif case.startswith("v2_"):
            got = classify_v2(data) or classify(data)
            if got.startswith("REPLY2"):
                # The server's properties follow its first version 2 reply.
                props = next_msg()
                got += " " + (classify_v2(props) if props is not None else "DISCONNECT")
            if case == "v2_silent" and got.startswith("REPLY2"):
                signal.alarm(0)
                # Room for the server's refreshes (else they wait on RNR retries, and its
                # Sends, not its keep-alive, end the connection), then one refresh of ours:
                # an RDMA2_NOMSG with xid 0 and empty lists.
                spare = [cmid.reg_msgs(4096) for _ in range(16)]
                for mr in spare:
                    cmid.post_recv(mr)
                refresh = prefix2(RDMA2_NOMSG, xid=0) + u32(0) + EMPTY_LISTS
                send_mr = cmid.reg_msgs(len(refresh))
                send_mr.write(refresh, len(refresh))
                cmid.post_send(send_mr)
                cmid.get_send_comp()
                time.sleep(SILENT)
                got += " SILENT"
            print(got, flush=True)
        else:
            print(classify(data), flush=True)
    except Exception:  # A flushed Receive surfaces as an exception in pyverbs.
        print("DISCONNECT", flush=True)


if __name__ == "__main__":
    main()
