#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""A hostile RPC-over-RDMA responder, version 1 and version 2 (pyverbs, librdmacm): the mirror
of rpcrdma_hostile.py, for the client transport.

Usage: rpcrdma_hostile_server.py ADDR PORT NFSD_PORT CASE STATE_DIR

Listens on ADDR:PORT and serves every connection as a proxy to the NFS server at
127.0.0.1:NFSD_PORT (over TCP, from a reserved port): a Call's Read chunks are pulled with RDMA
Read and the RPC message forwarded; nfsd's reply is answered as a responder should, the
payload of an NFSv3 READ RDMA-Written into the Call's Write chunk, a reply into an offered
Reply chunk (RDMA_NOMSG), anything else inline (RDMA_MSG), one credit granted. CASE (a key of
CASES) replaces the answer to the first Call that offers a Write chunk (an O_DIRECT read) with
bad input, once; connection-level cases (private data) apply to every connection, and
accept_drop accepts and drops the first ACCEPT_DROPS connections at once. What was done
is logged to STATE_DIR/log; STATE_DIR/fired marks the case as spent.

The bc_* cases send bad backward Calls (RFC 8167: an RPC Call from the server inside an
RDMA_MSG with three empty chunk lists, CB_NULL-shaped: program 0x40000000, version 1,
procedure 0, AUTH_NONE) just before the correct answer to that first read: too large for the
connection's backchannel, more at once than the client has backchannel requests, with an RPC
XID that is not the transport XID, or cut short inside the RPC header.

Version 2 (rpcrdma-v2 draft): a Call whose rdma_vers is 2 is answered in version 2, the header
prefix (xid, 2, credit word: most outstanding in the high half, granted in the low half, both
1, rdma_htype, rdma_flags with F_RESPONSE) then, for RDMA2_MSG and RDMA2_NOMSG, rdma_inv_handle
(always 0: a plain Send, never Send With Invalidate, although the Call names a handle we may
invalidate, which is logged) and the three chunk lists exactly as in version 1. The client's own
RDMA2_CONNPROP and credit refreshes are logged and not answered. A good version 2 responder
sends its transport properties (RDMA2_CONNPROP: xid 0, no flag, u32 count then per property
id, length, data padded to 4) right after its first version 2 reply; here once per case, on
the first connection settled on version 2. The v2_* cases:
  v2_good                    nothing wrong; the properties a good responder advertises
                             (Receive Buffer Size 8192, Reverse Request Support INLINE, ...)
  v2_connprop_bad            the properties have Reverse Request Support 7 (not a value of
                             its type): the client must not honour them
  v2_connprop_tiny           Receive Buffer Size 512, below RFC 8166's minimum of 1024
  v2_connprop_small          Receive Buffer Size 1024: honoured, the client's send threshold
                             drops to 1024
  v2_connprop_segments       Maximum RDMA Segment Size 118784 (29 pages) and Count 11: room
                             for a 1 MiB payload in one chunk, so honoured; every later Call's
                             segments are checked against them (a Call over them is logged
                             "SEGMENTS OVER THE CAPS")
  v2_connprop_segments_tiny  Maximum RDMA Segment Size 4096 and Count 2: no room for a large
                             payload, so not honoured (the client keeps its own segments)
  v2_connprop_more           a continued RDMA2_CONNPROP (F_MORE, Receive Buffer Size 1024)
                             whose final message never comes
  v2_more                    the answer to the first read is continued (F_MORE): its first
                             message has empty chunk lists and half of the inline reply, the
                             final one the Write chunk and the rest (the client reassembles it)
  v2_interleaved             the same with two interleaved sequences: F_MORE messages for a
                             made-up XID and for the read's, then the final message of each
  v2_credits_0               the answer to the first read grants 0 credits (most outstanding 1)
  v2_credits_max_lt_granted  the answer to the first read grants 65535 credits with a most
                             outstanding of 1
  v2_refresh                 a credit refresh (RDMA2_NOMSG, xid 0, no flag, no chunk, no
                             payload; 5 granted, 8 most outstanding) just before the answer to
                             the first read
  v2_err_reply_resource      the first read is answered RDMA2_ERROR REPLY_RESOURCE (the reply's
                             length needed): the client must send it again with a Reply chunk
                             and no Write chunk, which is answered right
  v2_err_write_resource      the same with RDMA2_ERROR WRITE_RESOURCE (chunk 1 too short)
  v2_retry_deferred          as v2_err_reply_resource; client_hostile.sh makes the client's
                             first try at sending the read again find no Send buffer (debugfs
                             fail_retry_send), so its next attempt must be the retry
  (in every case, a Call answered REPLY_RESOURCE or WRITE_RESOURCE that comes again without a
  Reply chunk, or with a Write chunk, is logged "sent again WITHOUT A REPLY CHUNK")
  v2_no_write_chunks         every Call offering a Write chunk is answered RDMA2_ERROR
                             REPLY_RESOURCE, as a responder that takes no Write chunks must
                             (draft Section 6.4.3): each read is sent again with a Reply chunk,
                             on the same connection, until the client takes it (after two in a
                             row) that we take none
  v2_err_read_chunks         the first read is answered RDMA2_ERROR READ_CHUNKS 0: the read had
                             no Read chunk, so there is nothing to retry: it fails
  v2_silent                  the first read is answered right, then one credit refresh, then
                             nothing on that connection (its QP still acknowledges): a client
                             with keepalive=1 declares it dead and reconnects (the next
                             connection is served)
  v2_offer_lost              the first version 2 offer of the case (the first Call of the
                             first connection) is not answered: the connection is dropped
                             at once; the next connection is served as v2_good (a lost offer
                             is no refusal: the client must offer version 2 again)
  v2_err_vers                every version 2 offer (the first Call of a connection in version
                             2) is answered RDMA2_ERROR ERR_VERS 1..1: the client falls back to
                             version 1 on the same connection
  v2_err_vers_reversed       every version 2 offer is answered RDMA2_ERROR ERR_VERS with the
                             range low 2, high 1 (no version at all); read in version 1's
                             layout, an ERR_VERS with the range 1..2
  v2_err_vers_high           every version 2 offer is answered RDMA2_ERROR ERR_VERS 3..4 (no
                             version the client speaks)

One connection is served at a time. A dead connection cannot be seen without the cm event
channel, which the synchronous pyverbs API does not expose: while it waits for a Call, the
server looks for a new connection request every half second, and one means the client gave
up the old connection.
"""

import os
import signal
import socket
import struct
import sys
import time

from pyverbs.cmid import AddrInfo, CMID, ConnParam
import pyverbs.cm_enums as ce
import pyverbs.enums as e
from pyverbs.qp import QPCap, QPInitAttr

RECV_SIZE = 8192
NRECV = 16
MAGIC = 0xF6AB0E18

RDMA_MSG, RDMA_NOMSG, RDMA_MSGP, RDMA_DONE, RDMA_ERROR = range(5)

# Version 2 (rpcrdma-v2 draft): header types (RDMA2_MSG and RDMA2_NOMSG have version 1's
# values), flags, error codes, property ids.
RDMA2_MSG, RDMA2_NOMSG, RDMA2_ERROR, RDMA2_CONNPROP = 0, 1, 4, 5
F_RESPONSE, F_MORE = 1, 2
RDMA2_ERR_VERS = 1
PROPID_SBSIZ, PROPID_RBSIZ, PROPID_RSSIZ, PROPID_RCSIZ, PROPID_BRS = 1, 2, 3, 4, 5
RDMA_RVREQSUP_INLINE = 1
# The credit word of our version 2 messages: at most 1 outstanding, 1 granted.
CREDIT2 = 1 << 16 | 1

# The backward Calls of the bc_* cases (RFC 8167).
RPC_CALL = 0
CB_PROG, CB_VERS, CB_NULL = 0x40000000, 1, 0
# The client's Receive size: its rdma_max_inline_read, 4096 by default.
CLIENT_RECV = 4096
# The receive size bc_too_large advertises in its private data: the client's inline send
# threshold becomes 1 KiB, and with it the largest backward RPC message it takes
# (xprt_rdma_bc_maxpayload: the smaller inline threshold less the 28-byte transport header).
BC_TOO_LARGE_RECV = 1024
BC_MAXPAYLOAD = BC_TOO_LARGE_RECV - 28
# Backward Calls bc_flood sends at once: more than the client's 16 backchannel requests.
BC_FLOOD = 40


def u32(*vals):
    return b"".join(struct.pack(">I", v & 0xFFFFFFFF) for v in vals)


def seg(handle, length, offset):
    return u32(handle, length) + struct.pack(">Q", offset)


def private_data(version=1, send=4096, recv=4096):
    """RFC 8797 private data: magic, version, flags, (size / 1024) - 1 each way."""
    def code(n):
        return n if n < 0 else max(0, min(255, n // 1024 - 1))
    return u32(MAGIC) + bytes([version, 0, code(send) & 0xFF, code(recv) & 0xFF])


# Each case: what replaces the answer to the first Call with a Write chunk (see Responder.answer),
# or a connection-level change. The test (client_hostile.sh) knows what each must produce.
CASES = [
    "unknown_xid",       # a reply with an xid no call has; the real one never comes
    "duplicate_xid",     # the correct reply, twice, back to back
    "accept_drop",       # the first ACCEPT_DROPS connections accepted and dropped at once
    "never_sent",        # first a reply to a call that was never sent, then the correct one
    "err_vers",          # RDMA_ERROR ERR_VERS 1..1
    "err_chunk",         # RDMA_ERROR ERR_CHUNK
    "write_too_long",    # Write chunk echo one byte longer than the offered segment
    "write_fffffffd",    # Write chunk echo of 0xFFFFFFFD bytes
    "write_ffffffff",    # Write chunk echo of 0xFFFFFFFF bytes
    "write_extra_seg",   # one more segment echoed than offered
    "write_wrong_handle",  # the first echoed segment's handle differs
    "write_two_chunks",  # two Write chunks echoed for the one offered
    "nomsg_no_reply_chunk",  # RDMA_NOMSG although the call offered no Reply chunk
    "credits_0",         # the correct reply, granting 0 credits
    "credits_65535",     # the correct reply, granting 65535 credits
    "truncated",         # 12 bytes: not even the fixed header
    "truncated_lists",   # the header ends inside the Write list
    "msgp",              # RDMA_MSGP
    "done",              # RDMA_DONE
    "version_2",         # the correct reply with version 2 in its header
    "send_too_large",    # a Send larger than the client's receive buffers
    "disconnect",        # the connection ends instead of the reply
    "pd_bad_version",    # private data of version 2 (connection level)
    "pd_absurd_sizes",   # private data: send 256 KiB, receive 1 KiB (connection level)
    "bc_too_large",      # backward Calls of bc_maxpayload bytes and over (1 KiB receive size)
    "bc_flood",          # 40 backward Calls at once
    "bc_bad_xid",        # backward Calls whose RPC XID is not their transport XID
    "bc_truncated",      # backward Calls cut short inside their RPC header
    "good",              # no misbehaviour: the reference
    # Version 2 (the client loaded with max_version=2); see the module's docstring.
    "v2_good",           # everything right, and a good RDMA2_CONNPROP
    "v2_connprop_bad",   # RDMA2_CONNPROP with Reverse Request Support 7
    "v2_connprop_tiny",  # RDMA2_CONNPROP with Receive Buffer Size 512
    "v2_connprop_small",  # RDMA2_CONNPROP with Receive Buffer Size 1024 (honoured)
    "v2_connprop_segments",  # RDMA2_CONNPROP with segments of 116 KiB, 11 a Call (honoured)
    "v2_connprop_segments_tiny",  # RDMA2_CONNPROP with segments of 4 KiB, 2 a Call (not honoured)
    "v2_connprop_more",  # RDMA2_CONNPROP continued (F_MORE), never finished
    "v2_more",           # the answer to the first read continued with F_MORE
    "v2_interleaved",    # two F_MORE sequences, different XIDs, interleaved
    "v2_credits_0",      # credit word: 1 most outstanding, 0 granted
    "v2_credits_max_lt_granted",  # credit word: 1 most outstanding, 65535 granted
    "v2_refresh",        # a credit refresh before the answer to the first read
    "v2_err_reply_resource",  # the first read: RDMA2_ERROR REPLY_RESOURCE (a retry is due)
    "v2_err_write_resource",  # the first read: RDMA2_ERROR WRITE_RESOURCE (a retry is due)
    "v2_no_write_chunks",  # every Call with a Write chunk: RDMA2_ERROR REPLY_RESOURCE
    "v2_err_read_chunks",  # the first read: RDMA2_ERROR READ_CHUNKS 0 (no retry: it fails)
    "v2_retry_deferred",  # as v2_err_reply_resource (the client's first retry fails early)
    "v2_silent",         # the first read answered, a credit refresh, then silence (keep-alive)
    "v2_offer_lost",     # the first version 2 offer: the connection dropped, unanswered
    "v2_err_vers",       # every version 2 offer refused: RDMA2_ERROR ERR_VERS 1..1
    "v2_err_vers_reversed",  # every version 2 offer refused: RDMA2_ERROR ERR_VERS 2..1
    "v2_err_vers_high",  # every version 2 offer refused: RDMA2_ERROR ERR_VERS 3..4
]

# The RDMA2_CONNPROP each v2_* case sends after its first version 2 reply: (id, data) pairs.
GOOD_PROPS = [(PROPID_SBSIZ, u32(4096)), (PROPID_RBSIZ, u32(RECV_SIZE)),
              (PROPID_RSSIZ, u32(1 << 20)), (PROPID_RCSIZ, u32(16)),
              (PROPID_BRS, u32(RDMA_RVREQSUP_INLINE))]
CONNPROPS = {
    "v2_connprop_bad": [(PROPID_BRS, u32(7))],
    "v2_connprop_tiny": [(PROPID_RBSIZ, u32(512))],
    "v2_connprop_small": [(PROPID_RBSIZ, u32(1024))],
    "v2_connprop_segments": [(PROPID_RSSIZ, u32(118784)), (PROPID_RCSIZ, u32(11))],
    "v2_connprop_segments_tiny": [(PROPID_RSSIZ, u32(4096)), (PROPID_RCSIZ, u32(2))],
    "v2_connprop_more": [(PROPID_RBSIZ, u32(1024))],
}
# The segment caps (Maximum RDMA Segment Size, Count) a case advertises and checks every Call
# sent after its RDMA2_CONNPROP against.
SEGMENT_CAPS = {"v2_connprop_segments": (118784, 11)}
# The RDMA2_CONNPROP flags of each case (F_MORE: a first message whose sequence never ends).
CONNPROP_FLAGS = {"v2_connprop_more": F_MORE}
# The range each offer-refusing case answers a version 2 offer with.
OFFER_REFUSED = {"v2_err_vers": (1, 1), "v2_err_vers_reversed": (2, 1), "v2_err_vers_high": (3, 4)}
# The cases that drop the connection of their first version 2 offer, once, unanswered.
OFFER_LOST = {"v2_offer_lost"}
# The RDMA2_ERROR code answering the first read, for the error cases.
ERR2_CASES = {"v2_err_reply_resource": 9, "v2_err_write_resource": 8, "v2_err_read_chunks": 5,
              "v2_retry_deferred": 9}
# The credit word of the answer to the first read, for the credit cases.
CREDIT_CASES = {"v2_credits_0": 1 << 16 | 0, "v2_credits_max_lt_granted": 1 << 16 | 0xFFFF}


def connprop(props, flags=0):
    """An RDMA2_CONNPROP (xid 0, no flag unless given) with the (id, bytes) properties."""
    body = u32(len(props))
    for which, data in props:
        body += u32(which, len(data)) + data + b"\0" * (-len(data) % 4)
    return u32(0, 2, CREDIT2, RDMA2_CONNPROP, flags) + body


def decode_props(buf):
    """{id: data} of an RDMA2_CONNPROP body (after the 20-byte prefix); {} if malformed."""
    try:
        props, at = {}, 24
        for _ in range(struct.unpack(">I", buf[20:24])[0]):
            which, n = struct.unpack(">II", buf[at:at + 8])
            props[which] = buf[at + 8:at + 8 + n]
            at += 8 + n + (-n % 4)
        return props
    except struct.error:
        return {}


def log(state, msg):
    with open(os.path.join(state, "log"), "a") as f:
        f.write("%d %s\n" % (os.getpid(), msg))


class Header:
    """A decoded call header: version 1, or version 2 (RDMA2_MSG or RDMA2_NOMSG, whose chunk
    lists follow the prefix and rdma_inv_handle and are version 1's byte for byte)."""

    def __init__(self, buf):
        self.xid, self.vers, self.credits, self.proc = struct.unpack(">IIII", buf[:16])
        self.flags = self.inv_handle = 0
        p = 16
        if self.vers == 2:
            self.flags, self.inv_handle = struct.unpack(">II", buf[16:24])
            p = 24
        self.reads = []  # (position, handle, length, offset)
        while struct.unpack(">I", buf[p:p + 4])[0]:
            pos, h, ln = struct.unpack(">III", buf[p + 4:p + 16])
            off = struct.unpack(">Q", buf[p + 16:p + 24])[0]
            self.reads.append((pos, h, ln, off))
            p += 24
        p += 4
        self.writes = []  # chunks, each a list of (handle, length, offset)
        while struct.unpack(">I", buf[p:p + 4])[0]:
            n = struct.unpack(">I", buf[p + 4:p + 8])[0]
            p += 8
            chunk = []
            for _ in range(n):
                h, ln = struct.unpack(">II", buf[p:p + 8])
                chunk.append((h, ln, struct.unpack(">Q", buf[p + 8:p + 16])[0]))
                p += 16
            self.writes.append(chunk)
        p += 4
        self.reply = None
        if struct.unpack(">I", buf[p:p + 4])[0]:
            n = struct.unpack(">I", buf[p + 4:p + 8])[0]
            p += 8
            self.reply = []
            for _ in range(n):
                h, ln = struct.unpack(">II", buf[p:p + 8])
                self.reply.append((h, ln, struct.unpack(">Q", buf[p + 8:p + 16])[0]))
                p += 16
        else:
            p += 4
        self.hdrlen = p

    def handles(self):
        """Every handle the lists offer."""
        return ([hd for _, hd, _, _ in self.reads] +
                [hd for c in self.writes for hd, _, _ in c] +
                [hd for hd, _, _ in self.reply or []])


def encode_chunk(segs):
    return u32(len(segs)) + b"".join(seg(*s) for s in segs)


def backward_call(xid, rpc_xid=None, rpc_len=None):
    """A backward Call: the transport header (RDMA_MSG, no chunks), then a CB_NULL Call
    (AUTH_NONE credential and verifier) under rpc_xid (default: xid), zero-padded or cut to
    rpc_len bytes of RPC message."""
    rpc = u32(xid if rpc_xid is None else rpc_xid, RPC_CALL, 2, CB_PROG, CB_VERS, CB_NULL,
              0, 0, 0, 0)
    if rpc_len is not None:
        rpc = (rpc + b"\0" * rpc_len)[:rpc_len]
    return u32(xid, 1, 1, RDMA_MSG, 0, 0, 0) + rpc


def backward_calls(case):
    """What a bc_* case sends: (description, message) pairs. client_hostile.sh knows which
    backchannel counter each must move."""
    if case == "bc_too_large":
        # Each within the client's Receives and our advertised send size (4 KiB).
        return [("rpc message of bc_maxpayload (%d) bytes" % BC_MAXPAYLOAD,
                 backward_call(0xBC000001, rpc_len=BC_MAXPAYLOAD)),
                ("rpc message of %d bytes" % (BC_MAXPAYLOAD + 4),
                 backward_call(0xBC000002, rpc_len=BC_MAXPAYLOAD + 4)),
                ("a Send of the client's Receive size (%d bytes)" % CLIENT_RECV,
                 backward_call(0xBC000003, rpc_len=CLIENT_RECV - 28))]
    if case == "bc_flood":
        return [("call %d of %d" % (i + 1, BC_FLOOD), backward_call(0xBC100000 + i))
                for i in range(BC_FLOOD)]
    if case == "bc_bad_xid":
        return [("rpc xid differs in one bit", backward_call(0xBC200001, rpc_xid=0xBC200000)),
                ("rpc xid 0", backward_call(0xBC200002, rpc_xid=0))]
    if case == "bc_truncated":
        return [("rpc xid and msg_type only", backward_call(0xBC300001, rpc_len=8)),
                ("cut after the program", backward_call(0xBC300002, rpc_len=16)),
                ("cut before the credential", backward_call(0xBC300003, rpc_len=24)),
                ("rpc xid only (too short to be a call)", backward_call(0xBC300004, rpc_len=4))]
    return []


class Responder:
    def __init__(self, cmid, case, state, nfsd_port):
        self.cmid, self.case, self.state = cmid, case, state
        self.nfsd_port = nfsd_port
        self.sock = None
        self.posted = []
        # Version 2 on this connection: a Call seen (the first is the offer), a reply sent.
        self.v2_seen = self.v2_replied = False
        # v2_silent: after the first read's answer this connection answers nothing more.
        self.silent = False
        # Replies held back by an RDMA2_ERROR, by xid: the call sent again gets them (nfsd
        # would not answer the same xid twice on our one TCP connection).
        self.held = {}
        # XIDs answered RDMA2_ERROR REPLY_RESOURCE or WRITE_RESOURCE: the draft's retry is due,
        # with a Reply chunk and no Write chunk (draft Section 6.4.3).
        self.reply_chunk_due = set()

    # --- RDMA helpers ---------------------------------------------------------------------
    def post_recv(self):
        mr = self.cmid.reg_msgs(RECV_SIZE)
        self.cmid.post_recv(mr)
        self.posted.append(mr)

    def send(self, data):
        self.send_many([data])

    def send_many(self, datas):
        """Posts a Send for each of datas before waiting for any: they reach the peer back
        to back."""
        mrs = []
        for data in datas:
            mr = self.cmid.reg_msgs(max(len(data), 1))
            mr.write(data, len(data))
            mrs.append(mr)
        for mr, data in zip(mrs, datas):
            self.cmid.post_send(mr, length=len(data))
        for _ in datas:
            self.cmid.get_send_comp()

    def rdma_read(self, handle, length, offset):
        mr = self.cmid.reg_msgs(max(length, 1))
        self.cmid.post_read(mr, length, offset, handle)
        wc = self.cmid.get_send_comp()
        if wc.status != e.IBV_WC_SUCCESS:
            raise IOError("RDMA Read failed: %d" % wc.status)
        return mr.read(length, 0)

    def rdma_write(self, data, segs):
        """Writes data into segs in order; returns the echo (handle, written, offset)."""
        echo, at = [], 0
        for h, ln, off in segs:
            n = min(ln, len(data) - at)
            if n > 0:
                mr = self.cmid.reg_msgs(n)
                mr.write(data[at:at + n], n)
                self.cmid.post_write(mr, n, off, h)
                wc = self.cmid.get_send_comp()
                if wc.status != e.IBV_WC_SUCCESS:
                    raise IOError("RDMA Write failed: %d" % wc.status)
            echo.append((h, max(n, 0), off))
            at += max(n, 0)
        if at < len(data):
            raise IOError("chunk too small: %d of %d bytes" % (at, len(data)))
        return echo

    # --- nfsd over TCP ------------------------------------------------------------------------
    def rpc(self, msg):
        if self.sock is None:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            for port in range(1023, 600, -1):
                try:
                    s.bind(("127.0.0.1", port))
                    break
                except OSError:
                    continue
            s.connect(("127.0.0.1", self.nfsd_port))
            self.sock = s
        self.sock.sendall(u32(0x80000000 | len(msg)) + msg)
        out = b""
        while True:
            mark = self.recv_exact(4)
            (m,) = struct.unpack(">I", mark)
            out += self.recv_exact(m & 0x7FFFFFFF)
            if m & 0x80000000:
                return out

    def recv_exact(self, n):
        b = b""
        while len(b) < n:
            c = self.sock.recv(n - len(b))
            if not c:
                raise IOError("nfsd closed the connection")
            b += c
        return b

    # --- the proxy ---------------------------------------------------------------------------
    def rebuild(self, h, buf):
        """The RPC call message: the inline part with each Read chunk pulled in."""
        inline = buf[h.hdrlen:]
        if not h.reads:
            return inline
        chunks = {}
        for pos, hd, ln, off in h.reads:
            chunks.setdefault(pos, []).append((hd, ln, off))
        out, at = b"", 0
        for pos in sorted(chunks):
            data = b"".join(self.rdma_read(hd, ln, off) for hd, ln, off in chunks[pos])
            if pos == 0 and h.proc == RDMA_NOMSG:
                return data
            out += inline[at:pos] + data + b"\0" * (-len(data) % 4)
            at = pos
        return out + inline[at:]

    @staticmethod
    def read3_payload(reply):
        """(start, length) of the data of an NFSv3 READ reply, or None."""
        try:
            p = 12
            (vlen,) = struct.unpack(">I", reply[p + 4:p + 8])
            p += 8 + vlen + (-vlen % 4)
            (astat,) = struct.unpack(">I", reply[p:p + 4])
            p += 4
            if astat != 0:
                return None
            (status,) = struct.unpack(">I", reply[p:p + 4])
            p += 4
            if status != 0:
                return None
            (follows,) = struct.unpack(">I", reply[p:p + 4])
            p += 4 + (84 if follows else 0)
            p += 8  # count, eof
            (dlen,) = struct.unpack(">I", reply[p:p + 4])
            p += 4
            return (p, dlen) if p + dlen <= len(reply) else None
        except struct.error:
            return None

    def serve_one(self, buf):
        if self.silent:
            log(self.state, "silent: a message of %d bytes ignored" % len(buf))
            return
        if len(buf) >= 20 and struct.unpack(">I", buf[4:8])[0] == 2:
            # Version 2 transport messages that carry no Call: logged, never answered.
            xid, _, credit, htype, flags = struct.unpack(">IIIII", buf[:20])
            if htype == RDMA2_CONNPROP:
                props = decode_props(buf)
                log(self.state, "the client's RDMA2_CONNPROP (xid %#x, credit %#x, flags %#x): %s" %
                    (xid, credit, flags, ", ".join("%d=%s" % (k, v.hex()) for k, v in sorted(props.items()))))
                return
            if htype not in (RDMA2_MSG, RDMA2_NOMSG):
                log(self.state, "version 2 message of type %d (xid %#x) ignored" % (htype, xid))
                return
        h = Header(buf)
        if h.vers == 2:
            if h.proc == RDMA2_NOMSG and not (h.reads or h.writes or h.reply is not None):
                log(self.state, "a credit refresh from the client (credit %#x)" % h.credits)
                return
            first = not self.v2_seen
            self.v2_seen = True
            # rdma_inv_handle must be zero or a handle the Call offers (client_hostile.sh looks
            # for "NOT OFFERED"); logged for the offer, the first read, and any Call that
            # breaks it.
            inv = h.inv_handle
            offered = not inv or inv in h.handles()
            first_read = h.writes and not os.path.exists(os.path.join(self.state, "fired"))
            if first or first_read or not offered:
                log(self.state, "version 2 call xid %#x: credit %#x, flags %#x, inv_handle %#x (%s)" %
                    (h.xid, h.credits, h.flags, inv,
                     "none" if not inv else "offered" if offered else "NOT OFFERED"))
            caps = SEGMENT_CAPS.get(self.case)
            lens = ([ln for _, _, ln, _ in h.reads] + [ln for c in h.writes for _, ln, _ in c] +
                    [ln for _, ln, _ in h.reply or []])
            if caps and lens and os.path.exists(os.path.join(self.state, "connprop")):
                size, count = caps
                within = len(lens) <= count and max(lens) <= size
                log(self.state, "call xid %#x: %d segments, the longest %d bytes: %s" %
                    (h.xid, len(lens), max(lens),
                     "within the caps" if within else "SEGMENTS OVER THE CAPS"))
            if first and self.case in OFFER_REFUSED:
                low, high = OFFER_REFUSED[self.case]
                log(self.state, "case %s fires on xid %#x (version 2 offer): RDMA2_ERROR ERR_VERS %d..%d" %
                    (self.case, h.xid, low, high))
                return self.send(u32(h.xid, 2, CREDIT2, RDMA2_ERROR, F_RESPONSE, RDMA2_ERR_VERS, low, high))
            marker = os.path.join(self.state, "offer_lost")
            if first and self.case in OFFER_LOST and not os.path.exists(marker):
                open(marker, "w").close()
                log(self.state, "case %s fires on xid %#x (version 2 offer): connection dropped unanswered" %
                    (self.case, h.xid))
                self.cmid.disconnect()
                raise EOFError("disconnected on purpose")
        if h.xid in self.reply_chunk_due:
            # client_hostile.sh fails a case whose log has "WITHOUT A REPLY CHUNK".
            self.reply_chunk_due.discard(h.xid)
            log(self.state, "call xid %#x sent again %s" % (
                h.xid, "with a Reply chunk, no Write chunk" if h.reply is not None and not h.writes
                else "WITHOUT A REPLY CHUNK (or with a Write chunk)"))
        call = self.rebuild(h, buf)
        reply = self.held.pop(h.xid, None) or self.rpc(call)
        if self.case == "v2_no_write_chunks" and h.vers == 2 and h.writes:
            marker = os.path.join(self.state, "fired")
            if not os.path.exists(marker):
                open(marker, "w").close()
                log(self.state, "case %s fires on xid %#x (write chunk %s)" %
                    (self.case, h.xid, h.writes[0]))
            log(self.state, "RDMA2_ERROR 9 sent for xid %#x: no Write chunks taken" % h.xid)
            self.held[h.xid] = reply
            self.reply_chunk_due.add(h.xid)
            return self.send(u32(h.xid, 2, CREDIT2, RDMA2_ERROR, F_RESPONSE, 9, len(reply)))
        case = None
        if h.writes and not os.path.exists(os.path.join(self.state, "fired")):
            case = self.case
            open(os.path.join(self.state, "fired"), "w").close()
            if case in CONNPROPS or case in OFFER_REFUSED or case in OFFER_LOST:
                log(self.state, "the first read, xid %#x, answered correctly" % h.xid)
            else:
                log(self.state, "case %s fires on xid %#x (write chunk %s)" %
                    (case, h.xid, h.writes[0]))
            # The bc_* cases: their backward Calls first, then the correct answer.
            for what, msg in backward_calls(case):
                self.send(msg)
                log(self.state, "backward call %#x sent (%d bytes): %s" %
                    (struct.unpack(">I", msg[:4])[0], len(msg), what))
        self.answer(h, reply, case)
        if h.vers == 2 and not self.v2_replied:
            self.v2_replied = True
            self.send_props()
        if case == "v2_silent" and h.vers == 2:
            # One credit refresh (we keep alive too), then silence on this connection, while
            # its QP still acknowledges: the client's keep-alive must give up on us.
            self.send(u32(0, 2, CREDIT2, RDMA2_NOMSG, 0) + u32(0) + u32(0, 0, 0))
            log(self.state, "credit refresh sent; silent from now on")
            self.silent = True

    def send_props(self):
        """Our RDMA2_CONNPROP, after the first version 2 reply, once per case."""
        marker = os.path.join(self.state, "connprop")
        if os.path.exists(marker):
            return
        open(marker, "w").close()
        props = CONNPROPS.get(self.case, GOOD_PROPS)
        flags = CONNPROP_FLAGS.get(self.case, 0)
        self.send(connprop(props, flags))
        what = ", ".join("%d=%s" % (k, v.hex()) for k, v in props) + \
            (" (flags %#x)" % flags if flags else "")
        if self.case in CONNPROPS:
            log(self.state, "case %s fires on the first version 2 reply: RDMA2_CONNPROP %s" %
                (self.case, what))
        else:
            log(self.state, "RDMA2_CONNPROP sent after the first version 2 reply: %s" % what)

    def answer(self, h, reply, case):
        credits = {"credits_0": 0, "credits_65535": 65535}.get(case, 1)
        credit2 = CREDIT_CASES.get(case, CREDIT2)
        vers = 2 if case == "version_2" else 1
        xid = h.xid ^ 0xFFFFFFFF if case == "unknown_xid" else h.xid

        def head(proc, xid=xid, flags=F_RESPONSE):
            """The header up to its chunk lists: version 1's fixed words, or version 2's
            prefix and rdma_inv_handle, in the version of the Call."""
            if h.vers == 2:
                return u32(xid, 2, credit2, proc, flags, 0)
            return u32(xid, vers, credits, proc)

        if case in ERR2_CASES and h.vers == 2:
            code = ERR2_CASES[case]
            body = {9: u32(9, len(reply)), 8: u32(8, 1, len(reply)), 5: u32(5, 0)}[code]
            log(self.state, "RDMA2_ERROR %d sent for xid %#x (reply of %d bytes held back)" %
                (code, h.xid, len(reply)))
            self.held[h.xid] = reply
            if code in (8, 9):
                self.reply_chunk_due.add(h.xid)
            return self.send(u32(h.xid, 2, CREDIT2, RDMA2_ERROR, F_RESPONSE) + body)
        if case in ("err_vers", "err_chunk"):
            body = u32(RDMA_ERROR, 1, 1, 1) if case == "err_vers" else u32(RDMA_ERROR, 2)
            return self.send(u32(h.xid, 1, 1) + body)
        if case == "truncated":
            return self.send(u32(h.xid, 1, 1))
        if case == "truncated_lists":
            return self.send(u32(h.xid, 1, 1, RDMA_MSG, 0, 1, 3))
        if case in ("msgp", "done"):
            # The header alone (a READ reply inline would not fit the client's Receives).
            proc = RDMA_MSGP if case == "msgp" else RDMA_DONE
            return self.send(u32(h.xid, 1, 1, proc, 0, 0, 0))
        if case == "disconnect":
            self.cmid.disconnect()
            raise EOFError("disconnected on purpose")
        if case == "send_too_large":
            return self.send(head(RDMA_MSG) + u32(0, 0, 0) + reply + b"\0" * (2 * RECV_SIZE))
        if case == "nomsg_no_reply_chunk":
            return self.send(head(RDMA_NOMSG) + u32(0, 0, 1) + encode_chunk([(0x1234, len(reply), 0)]) + u32(0))

        # The answer: head(proc) + lists + inline.
        if h.reply is not None:
            echo = self.rdma_write(reply, h.reply)
            proc, lists, inline = RDMA_NOMSG, u32(0, 0, 1) + encode_chunk(echo), b""
        elif h.writes and self.read3_payload(reply):
            start, dlen = self.read3_payload(reply)
            echo = self.rdma_write(reply[start:start + dlen], h.writes[0])
            if case == "write_too_long":
                echo[0] = (echo[0][0], h.writes[0][0][1] + 1, echo[0][2])
            elif case == "write_fffffffd":
                echo[0] = (echo[0][0], 0xFFFFFFFD, echo[0][2])
            elif case == "write_ffffffff":
                echo[0] = (echo[0][0], 0xFFFFFFFF, echo[0][2])
            elif case == "write_extra_seg":
                echo.append((echo[-1][0] + 1, 4, 0))
            elif case == "write_wrong_handle":
                echo[0] = (echo[0][0] ^ 0x1, echo[0][1], echo[0][2])
            chunks = u32(1) + encode_chunk(echo)
            if case == "write_two_chunks":
                chunks += u32(1) + encode_chunk(echo)
            inline = reply[:start] + reply[start + dlen + (-dlen % 4):]
            proc, lists = RDMA_MSG, u32(0) + chunks + u32(0, 0)
        else:
            proc, lists, inline = RDMA_MSG, u32(0, 0, 0), reply
        msg = head(proc) + lists + inline
        if case in ("v2_more", "v2_interleaved") and h.vers == 2:
            # Message continuation: the first message of a sequence has F_MORE, empty chunk
            # lists and the first half of the inline part; the final one the lists and the rest.
            half = len(inline) // 2 & ~3
            def first(x):
                return head(proc, xid=x, flags=F_RESPONSE | F_MORE) + u32(0, 0, 0) + inline[:half]
            final = head(proc) + lists + inline[half:]
            if case == "v2_more":
                seq = [("first, F_MORE", first(xid)), ("final", final)]
            else:
                other = 0x0BAD0BAD
                seq = [("made-up xid %#x, F_MORE" % other, first(other)),
                       ("first, F_MORE", first(xid)),
                       ("made-up xid %#x, final" % other, head(proc, xid=other) + u32(0, 0, 0) + inline[half:]),
                       ("final", final)]
            for what, m in seq:
                self.send(m)
                log(self.state, "continued answer to xid %#x: %s (%d bytes)" % (xid, what, len(m)))
            return
        if case == "v2_refresh" and h.vers == 2:
            # Section 6.4.2: RDMA2_NOMSG with three empty lists, xid 0, a credit grant.
            self.send(u32(0, 2, 8 << 16 | 5, RDMA2_NOMSG, 0) + u32(0) + u32(0, 0, 0))
            log(self.state, "credit refresh sent: 5 granted, 8 most")
        if case == "never_sent":
            # The same answer under an xid no call ever had.
            self.send(u32(0x0BAD0BAD) + msg[4:])
        # The duplicate right behind the reply, while the client may still be invalidating
        # the call's memory regions for the first.
        self.send_many([msg, msg] if case == "duplicate_xid" else [msg])


class Tick(Exception):
    """The periodic alarm interrupted a blocking verbs or rdma_cm call."""


def on_alarm(_signum, _frame):
    raise Tick()


def interruptible(call, seconds):
    """call(), interrupted after `seconds` (pyverbs holds the GIL while it blocks in
    librdmacm; a signal makes the blocked read() fail with EINTR, and the handler raises)."""
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return call()
    except Tick:
        return None
    except Exception:
        # librdmacm's error for the interrupted read(): our handler may have run first.
        if signal.getitimer(signal.ITIMER_REAL)[0] == 0:
            return None
        raise
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


# Connections the accept_drop case accepts and drops before it serves one: more than the
# client logs per minute and transport (5).
ACCEPT_DROPS = 12


def main():
    addr, port, nfsd_port, case, state = sys.argv[1:6]
    if case not in CASES:
        raise SystemExit("unknown case %s" % case)
    signal.signal(signal.SIGALRM, on_alarm)
    cap = QPCap(max_send_wr=16, max_recv_wr=NRECV, max_send_sge=1, max_recv_sge=1)
    init = QPInitAttr(qp_type=e.IBV_QPT_RC, cap=cap, sq_sig_all=1)
    ai = AddrInfo(src=addr, src_service=port, port_space=ce.RDMA_PS_TCP, flags=ce.RAI_PASSIVE)
    listen = CMID(creator=ai, qp_init_attr=init)
    listen.listen()
    log(state, "listening on %s:%s" % (addr, port))
    pd = {"pd_bad_version": private_data(version=2),
          "pd_absurd_sizes": private_data(send=256 * 1024, recv=0),
          "bc_too_large": private_data(recv=BC_TOO_LARGE_RECV)}.get(case, private_data())
    pending = None
    dropped = 0
    while True:
        cmid = pending or listen.get_request()
        pending = None
        r = Responder(cmid, case, state, int(nfsd_port))
        for _ in range(NRECV):
            r.post_recv()
        param = ConnParam(resources=0, depth=4, retry=7, rnr_retry=0, data_len=len(pd))
        param.set_private_data(pd)
        cmid.accept(param)
        log(state, "accepted a connection")
        if case == "accept_drop" and dropped < ACCEPT_DROPS:
            # A server that accepts and drops connections in a loop: the client reconnects
            # at once each time, and must not log each one.
            dropped += 1
            open(os.path.join(state, "fired"), "w").close()
            log(state, "case accept_drop fires on connection %d: dropped" % dropped)
            time.sleep(0.05)
            for step in (cmid.disconnect, cmid.close):
                try:
                    step()
                except Exception:  # pylint: disable=broad-except
                    pass
            continue
        # Serve until the Receive fails (the connection ended) or a new connection request
        # arrives (the client only has one connection: the old one is dead).
        try:
            while True:
                wc = interruptible(cmid.get_recv_comp, 0.5)
                if wc is None:
                    pending = interruptible(listen.get_request, 0.2)
                    if pending is not None:
                        log(state, "a new connection request: the old connection is dead")
                        break
                    continue
                mr = r.posted.pop(0)
                if wc.status != e.IBV_WC_SUCCESS:
                    raise EOFError("receive completed with status %d" % wc.status)
                buf = mr.read(wc.byte_len, 0)
                r.post_recv()
                r.serve_one(buf)
        except Exception as ex:  # pylint: disable=broad-except
            log(state, "connection ended: %r" % ex)
        try:
            cmid.close()
        except Exception:  # pylint: disable=broad-except
            pass
        if r.sock is not None:
            r.sock.close()


if __name__ == "__main__":
    main()
