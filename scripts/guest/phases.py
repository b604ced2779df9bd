#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Where an RPC's time goes, from the sunrpc and rpcrdma trace events of one guest.

    phases.py SIDE VERSION WORKLOAD TRACE

TRACE is the text of /sys/kernel/tracing/trace over one workload, with the events
sunrpc:{xprt_reserve,rpc_xdr_sendto,xprt_transmit,rpc_stats_latency,svc_xdr_recvfrom,
svc_process,svc_xdr_sendto,svc_send} and rpcrdma:xprtrdma_reply on. Both transports, the C
modules and rpcrdma_rs, emit these under the same names and formats, and every one carries the
RPC's XID or, for rpc_xdr_sendto, its task (whose XID xprt_reserve gives). Prints one JSON
object: {"phases": SIDE, "vers", "workload", "rows": [[PROCEDURE, PHASE, COUNT, P50, P90], ...]},
in microseconds, for each procedure that makes at least a tenth of the RPCs. The phases of an
RPC, each from one event to the next of the same XID:

  client   encode-transmit   rpc_xdr_sendto -> xprt_transmit: the transport's send_request
                             (marshaling, registration, the post)
           transmit-reply    xprt_transmit -> xprtrdma_reply: the wire and the server
           reply-done        xprtrdma_reply -> rpc_stats_latency: the reply handler's work
                             after the header (invalidation, placement), the task's wake-up
                             and the result's decoding
  server   process           svc_process -> svc_xdr_sendto: the service (nfsd)
           sendto            svc_xdr_sendto -> svc_send: the transport's sendto
  one      transmit-recvfrom xprt_transmit -> svc_xdr_recvfrom: the call from the client's
  guest                      post to the server's thread (the wire, the server's Receive and
                             Read chunk, its thread's wake-up)
           send-reply        svc_send -> xprtrdma_reply: the reply on the wire and the
                             client's Receive

In two guests the clocks differ, so only each guest's own phases count; in one guest (SIDE
"guest") all of them do.
"""

import json
import math
import re
import sys

EVENT = re.compile(r"\s(\d+\.\d+): (\w+): (.*)$")
XID = re.compile(r"\bxid=(0x[0-9a-f]+)")
TASK = re.compile(r"\btask:([0-9a-f]+@[0-9a-f]+)")
PROC = re.compile(r"\bnfsv[0-9.]+ (\w+)|proc=(\w+)")

PHASES = {
    "client": [("encode-transmit", "rpc_xdr_sendto", "xprt_transmit"),
               ("transmit-reply", "xprt_transmit", "xprtrdma_reply"),
               ("reply-done", "xprtrdma_reply", "rpc_stats_latency")],
    "server": [("process", "svc_process", "svc_xdr_sendto"),
               ("sendto", "svc_xdr_sendto", "svc_send")],
}
PHASES["guest"] = PHASES["client"][:1] + [
    ("transmit-recvfrom", "xprt_transmit", "svc_xdr_recvfrom"),
    ("process", "svc_process", "svc_xdr_sendto"),
    ("sendto", "svc_xdr_sendto", "svc_send"),
    ("send-reply", "svc_send", "xprtrdma_reply"),
    PHASES["client"][2],
]


def percentile(sorted_values, q):
    """The q-quantile of a sorted list (nearest rank)."""
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


def summarize(side, lines):
    """Rows [procedure, phase, count, p50, p90] for SIDE from the trace's lines."""
    task_xid, times, procs = {}, {}, {}
    for line in lines:
        m = EVENT.search(line)
        if not m:
            continue
        t, name, rest = float(m.group(1)), m.group(2), m.group(3)
        x = XID.search(rest)
        if name == "xprt_reserve" and x:
            tk = TASK.search(rest)
            if tk:
                task_xid[tk.group(1)] = x.group(1)
            continue
        if name == "rpc_xdr_sendto":
            tk = TASK.search(rest)
            xid = task_xid.get(tk.group(1)) if tk else None
        else:
            xid = x.group(1) if x else None
        if xid is None:
            continue
        # The first of each event per XID: a retransmission keeps its first times.
        times.setdefault(xid, {}).setdefault(name, t)
        if name in ("rpc_stats_latency", "svc_process"):
            p = PROC.search(rest)
            if p:
                procs.setdefault(xid, p.group(1) or p.group(2))
    by_proc = {}
    for xid, proc in procs.items():
        by_proc.setdefault(proc, []).append(times[xid])
    total = sum(len(v) for v in by_proc.values())
    rows = []
    for proc in sorted(by_proc, key=lambda p: -len(by_proc[p])):
        rpcs = by_proc[proc]
        if len(rpcs) * 10 < total:
            continue
        for phase, a, b in PHASES[side]:
            d = sorted((e[b] - e[a]) * 1e6 for e in rpcs if a in e and b in e and e[b] >= e[a])
            if d:
                rows.append([proc, phase, len(d), round(percentile(d, 0.5)),
                             round(percentile(d, 0.9))])
    return rows


def main():
    side, vers, workload, path = sys.argv[1:5]
    if side not in PHASES:
        sys.exit(f"phases.py: no side {side} (client, server or guest)")
    with open(path, errors="replace") as f:
        rows = summarize(side, f)
    out = {"phases": side, "vers": vers, "workload": workload, "rows": rows}
    if not rows:
        out["error"] = "no RPC with its events in the trace"
    print(json.dumps(out))


if __name__ == "__main__":
    main()
