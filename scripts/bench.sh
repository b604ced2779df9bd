#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Benchmark (not a test): fio over NFS/RDMA, one table per NFS version, one column per pairing of
# client and server transports, with the ratio to the C pair. Same kernel, same run.
#
#   scripts/bench.sh [--kvm] [--kernel perf|test] [--runtime SECONDS]
#                    [--pairings "c/c rs/c c/rs rs/rs"]
#                    [--versions "3 4.2"] [--single] [--dev rxe|siw] [--profile[=WORKLOAD]]
#                    [--profile-stacks "SIDE:STACK ..."] [--phases[=WORKLOAD]] [--repeat N]
#                    [--v2 [--inline BYTES]]
#   scripts/bench.sh --render RESULTS     print the tables of an earlier run again
#
# A pairing is CLIENT/SERVER: c is the kernel's rpcrdma.ko, rs is rpcrdma_rs.ko (the client with
# RPCRDMA_RS_CLIENT_PARAMS, default none). By default each pairing runs in
# two guests (scripts/vm-pair.sh: the C and the Rust module cannot share a kernel), joined by a
# virtual link with rxe (or siw: --dev) on both ends. A pairing that cannot run prints "n/a (reason)" and the
# others go on. --single is the fallback when two guests are too slow: client and server in one
# guest sharing an rxe device, so only c/c and rs/rs exist there.
#
# --kernel perf (the default) runs the guests on the benchmark's kernel: scripts/kernel/perf.config
# on top of the test kernel's fragment, built for speed as a distribution kernel is (-O2 and Rust
# opt-level=2, per-CPU slab caches, static keys; built once, on first use, by
# scripts/build-kernel.sh --perf), with rpcrdma_rs.ko built against it from a copy of this tree
# in the cache. --kernel test uses the tests' kernel (tinyconfig: -Os, opt-level=s, SLUB_TINY),
# which favours C: Rust's small methods and iterators lose more to size optimisation.
#
# Each pairing's guests mount every NFS version of --versions in turn (default "3 4.2") and run
# four workloads on each: 4k random read at QD16, 1 MiB sequential read and write, 4k sync write.
# For each workload the table gives the figure of merit, fio's completion latency p50 / p99, and
# the CPU cost: the busy time of each guest (/proc/stat, all but idle and iowait) over the
# workload, per RPC the client sent (/proc/net/rpc/nfs) and per MiB moved, client and server,
# and the context switches of each guest per RPC (the "ctxt" line of /proc/stat): under
# emulation a switch costs tens of microseconds, so how often a transport sleeps and wakes up
# shows in the CPU cost. Over rxe, also the packets each guest sent per RPC and the link's
# costly events, if any: RNR NAKs sent (a Send found no Receive posted), retransmissions,
# duplicate requests received (rxe's hw_counters).
# Ratios are to C client, C server in the same run, always oriented so that above 1 is better
# (for latency and CPU, C's figure over this one's).
#
# --profile[=WORKLOAD] (default randread-4k-qd16) runs that workload once more, after those of
# the first version, under `perf record -e cpu-clock -F 1000 -a -g` in every guest running
# rpcrdma_rs (client, server, or the one guest), and prints the share of each module, the top
# symbols, those of rpcrdma_rs (Rust names demangled by c++filt) and the heaviest call chains
# (the test kernel's unwinder is CONFIG_UNWINDER_GUESS: chains are indicative). Symbols come
# from /proc/kallsyms: the guests have no vmlinux. perf is the host's /usr/bin/perf (Debian
# package linux-perf; the guests boot on the host's root file system); Debian 12's perf 6.1
# records this 7.3 kernel's cpu-clock events (perf_event_open is a stable ABI). Recording starts
# once perf is up and covers the workload's I/O only, and the profiled run is extra, so the
# profiler's overhead never enters the table. Without perf on the host --profile fails at once;
# a perf that does not start in a guest gives "n/a (reason)" for that profile.
# --profile-stacks chooses the guests to profile as SIDE:STACK words, SIDE client, server or
# guest (--single), STACK c, rs, rs2 or rsi (default: every side running rs or rs2); for
# example "client:c client:rs" profiles both clients of c/c and rs/c, to set our client's
# symbols against the C client's in the same run.
#
# --phases[=WORKLOAD] (default synclat-4k) runs that workload once more, after those of the
# first version (and the profile), with the trace events of sunrpc and rpcrdma that mark an
# RPC's steps on in every guest, and prints, per pairing and guest, the median and 90th
# percentile of each step's time (scripts/guest/phases.py): on the client the transport's
# send_request, the wait for the reply, and the work after it; on the server the service and
# the transport's sendto; in one guest (--single) also the call's way from the client's post to
# the server's thread and the reply's back. Both transports emit these events under the same
# names, so the steps compare C with rpcrdma_rs where their latencies differ. The traced run
# is extra, so tracing never enters the table.
#
# --v2 compares RPC-over-RDMA version 2 with version 1, rpcrdma_rs on both ends: pairings rs/rs
# (version 1) and rs2/rs2 (both modules loaded with max_version=2), ratios to rs/rs, and the
# workloads random read and random write of 8, 16, 32 and 64 KiB at QD8 (O_DIRECT), where
# version 2's continued messages replace memory registration. With --inline BYTES, a third
# pairing, rsi/rsi: version 1 with the inline thresholds of both ends raised to BYTES through
# the sysctls (rdma_max_inline_read, rdma_max_inline_write, svc_rdma/max_req_size), so that
# every call and reply up to about BYTES travels in one Send: neither registration nor
# continuation. It tells what sending inline gains on this bench, apart from how version 2
# splits messages.
#
# --repeat N runs every pairing N times, in rounds (each round all the pairings in turn, so
# that a slow spell of the machine hits all of them): each figure is then the median over the
# rounds; the figure of merit's ratio is the median of the rounds' ratios, followed by their
# range ("x0.94; x0.88-1.02"), the other rows' are ratios of the medians. Under emulation one
# round's ratios move by 10-30%.
#
# The tables are Markdown; under each, the exact command that made it.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cmdline="scripts/bench.sh${*:+ $*}"
cd "$RPCRDMA_TOP"
vm_opts=() runtime=15 pairings="c/c rs/c c/rs rs/rs" single=0 dev=rxe versions="3 4.2" profile= render=
phases=
inline= profile_stacks= repeat=1 kernel=perf
workloads="randread-4k-qd16 seqread-1m seqwrite-1m synclat-4k" reference=c/c
while [ $# -gt 0 ]; do
	case "$1" in
	--kvm) vm_opts+=(--kvm) ;;
	--kernel)
		[[ $2 =~ ^(perf|test)$ ]] || die "--kernel: perf or test, not $2"
		kernel=$2; shift ;;
	--runtime) runtime=$2; shift ;;
	--pairings) pairings=$2; shift ;;
	--versions) versions=$2; shift ;;
	--single) single=1 ;;
	--dev) dev=$2; shift ;;
	--profile) profile=randread-4k-qd16 ;;
	--profile=*) profile=${1#--profile=} ;;
	--phases) phases=synclat-4k ;;
	--phases=*) phases=${1#--phases=} ;;
	--render) render=$2; shift ;;
	--repeat)
		[[ $2 =~ ^[1-9][0-9]*$ ]] || die "--repeat: a number of rounds, not $2"
		repeat=$2; shift ;;
	--profile-stacks)
		for w in $2; do
			[[ $w =~ ^(client|server|guest):(c|rs|rs2|rsi)$ ]] ||
				die "--profile-stacks: SIDE:STACK words (client, server or guest; c, rs, rs2 or rsi), not $w"
		done
		profile_stacks=$2; shift ;;
	--inline)
		# The range both ends' sysctls accept (svc_rdma/max_req_size starts at 4096).
		[[ $2 =~ ^[0-9]+$ ]] && [ "$2" -ge 4096 ] && [ "$2" -le 65536 ] ||
			die "--inline: a size in bytes from 4096 to 65536, not $2"
		inline=$2; shift ;;
	--v2)
		pairings="rs/rs rs2/rs2" reference=rs/rs
		workloads="randread-8k-qd8 randread-16k-qd8 randread-32k-qd8 randread-64k-qd8"
		workloads+=" randwrite-8k-qd8 randwrite-16k-qd8 randwrite-32k-qd8 randwrite-64k-qd8"
		;;
	--help|-h) sed -n '3,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown option $1 (see $0 --help)" ;;
	esac
	shift
done
if [ -n "$inline" ]; then
	[ "$reference" = rs/rs ] || die "--inline goes with --v2"
	pairings+=" rsi/rsi"
fi
# Print the tables (and profiles) of a results file: a first line "meta TAB {...}" (pairings,
# versions, single, command, conditions), then one line per result, PAIRING TAB JSON, where
# JSON is a guest's object or {"fail": REASON} when the pairing's guests failed.
render_results() {
	python3 - "$1" <<'PY'
import json, re, subprocess, sys
path = sys.argv[1]
lines = open(path).read().splitlines()
meta = json.loads(lines[0].partition("\t")[2])
pairings, versions, single = meta["pairings"].split(), meta["versions"].split(), meta["single"]
cmdline, cond = meta["command"], meta["conditions"]
WORKLOADS = meta.get("workloads", "randread-4k-qd16 seqread-1m seqwrite-1m synclat-4k").split()
REF = meta.get("reference", "c/c")
NAMES = {"c": "C", "rs": "rs", "rs2": "rs v2", "rsi": "rs inline"}
HZ = 100  # USER_HZ: the unit of /proc/stat

res, vers_err, fail, err, profiles, phases = {}, {}, {}, {}, [], []
rounds = {}  # (pairing, version, workload) -> {round: result}, with --repeat
for line in lines[1:]:
    p, _, j = line.partition("\t")
    j = json.loads(j)
    if "profile" in j:
        profiles.append((p, j))
    elif "phases" in j:
        phases.append((p, j))
    elif "fail" in j:
        fail[p] = j["fail"]
    elif "workload" in j and "error" in j:
        res[p, j["vers"], j["workload"]] = "n/a (%s)" % j["error"]
    elif "workload" in j:
        rounds.setdefault((p, j["vers"], j["workload"]), {})[j.get("round", 1)] = j
    elif "vers" in j:
        vers_err[p, j["vers"]] = j["error"]
    else:
        err[p] = j["error"]


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def merged(rs):
    """The median of every number of the rounds' results rs over the rounds that have it
    (nested dicts likewise); anything else from the first round that has it."""
    out = {}
    for r in rs:
        for k, v in r.items():
            out.setdefault(k, v)
    for k, v in out.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[k] = median([r[k] for r in rs if isinstance(r.get(k), (int, float))])
        elif isinstance(v, dict):
            out[k] = merged([r[k] for r in rs if isinstance(r.get(k), dict)])
    return out


for key, by_round in rounds.items():
    if key not in res:  # a round's error wins: the figure would hide it
        res[key] = merged(list(by_round.values()))


def short(s, n=44):
    return s if len(s) <= n else s[: n - 4] + "...)"


def label(p):
    c, s = p.split("/")
    return "%s client, %s server" % (NAMES.get(c, c), NAMES.get(s, s))


def ratio(v, ref, higher_better=True):
    if v is None or ref is None or not v or not ref:
        return ""
    return " (x%.2f)" % ((v / ref) if higher_better else (ref / v))


def round_ratios(p, v, w, key, higher_better=True):
    """With several rounds: the median of the rounds' ratios of `key` to the reference's in
    the same round, and their range, as " (xM; xLO-xHI)"; "" otherwise."""
    mine, theirs = rounds.get((p, v, w), {}), rounds.get((REF, v, w), {})
    rs = []
    for n, j in mine.items():
        a, b = j.get(key), theirs.get(n, {}).get(key)
        if a and b:
            rs.append(a / b if higher_better else b / a)
    if len(rs) < 2 or p == REF:
        return ""
    return " (x%.2f; x%.2f-%.2f)" % (median(rs), min(rs), max(rs))


def ms(us):
    return "%.2f" % (us / 1000) if us < 10000 else "%.1f" % (us / 1000)


def rows(p, v, w, ref):
    """The six cells of pairing p for workload w: figure, latency, CPU/RPC, CPU/MiB, context
    switches/RPC, rxe packets/RPC."""
    r = res.get((p, v, w))
    if not isinstance(r, dict):
        why = r or "n/a (%s)" % (vers_err.get((p, v)) or err.get(p) or fail.get(p, "no result"))
        return [short(why)] + [""] * 5
    ref = ref if isinstance(ref, dict) and ref is not r else None
    g = lambda j, k: j.get(k) if j else None
    if w.startswith("synclat"):
        fig = "%s ms mean (%d IOPS)%s" % (ms(r["lat_us"]), r["iops"],
                                          round_ratios(p, v, w, "lat_us", False)
                                          or ratio(r["lat_us"], g(ref, "lat_us"), False))
    elif w.startswith("rand"):
        fig = "%d IOPS%s" % (r["iops"], round_ratios(p, v, w, "iops")
                             or ratio(r["iops"], g(ref, "iops")))
    else:
        fig = "%.1f MiB/s%s" % (r["MiB/s"], round_ratios(p, v, w, "MiB/s")
                                or ratio(r["MiB/s"], g(ref, "MiB/s")))
    lat = "%s / %s ms%s" % (ms(r.get("p50_us", 0)), ms(r.get("p99_us", 0)),
                            ratio(r.get("p99_us"), g(ref, "p99_us"), False))

    def per_guest(mine, theirs, fmt, unit=""):
        # Each guest's figure (client + server), and the reference's over ours for each when
        # it has as many ("n/a" without figures).
        if not mine:
            return "n/a"
        text = " + ".join(fmt(x) for x in mine) + unit
        if theirs and len(theirs) == len(mine):
            text += " (%s)" % ", ".join("x%.2f" % (t / m) if m else "x-" for m, t in zip(mine, theirs))
        return text

    def cost(per, unit, scale):
        # Busy seconds of each guest over the count `per` of the result and of the reference.
        def val(j):
            n = j.get(per) if j else None
            if not n:
                return []
            # In one guest, client and server share the CPU: one figure.
            return [j[k] / HZ / n * scale for k in ("cli_ticks", "srv_ticks") if k in j]
        return per_guest(val(r), val(ref), lambda x: "%.0f" % x if x >= 10 else "%.1f" % x,
                         " " + unit)

    def switches():
        # Context switches of each guest per RPC the client sent (runs before they were
        # counted have none).
        def val(j):
            n = j.get("rpcs") if j else None
            if not n:
                return []
            return [j[k] / n for k in ("cli_ctxt", "srv_ctxt") if k in j]
        return per_guest(val(r), val(ref), lambda x: "%.1f" % x)

    def link():
        # rxe's packets sent by each guest per RPC, and the events that cost time on the link:
        # RNR NAKs sent (a Send found no Receive posted), retransmissions (completer retries)
        # and duplicate requests received. Runs before they were counted, and siw, have none.
        def val(j, name):
            n = j.get("rpcs") if j else None
            hws = [j.get(k) for k in ("cli_hw", "srv_hw") if k in j] if j else []
            if not n or not hws or not all(name in h for h in hws):
                return []
            return [h[name] / n for h in hws]
        text = per_guest(val(r, "sent_pkts"), val(ref, "sent_pkts"), lambda x: "%.1f" % x)
        if text == "n/a":
            return text
        events = []
        for name, what in (("send_rnr_err", "RNR NAKs"), ("completer_retry_err", "retries"),
                           ("duplicate_request", "duplicates")):
            counts = [r.get(k, {}).get(name, 0) for k in ("cli_hw", "srv_hw") if k in r]
            if any(counts):
                events.append("%s %s" % (what, " + ".join("%g" % c for c in counts)))
        return text + ("; " + ", ".join(events) if events else "")

    for j in (r, ref):
        if j:
            j["mib"] = j["bytes"] / 1048576
    return [fig, lat, cost("rpcs", "us", 1e6), cost("mib", "ms", 1e3), switches(), link()]


cpu_who = "guest" if single else "cli + srv"
names = ["%s", "  p50 / p99 clat", "  CPU per RPC, " + cpu_who, "  CPU per MiB, " + cpu_who,
         "  switches per RPC, " + cpu_who, "  rxe packets per RPC, " + cpu_who]
for v in versions:
    print("NFSv%s" % v)
    print()
    print("| workload | " + " | ".join(label(p) for p in pairings) + " |")
    print("| --- |" + " --- |" * len(pairings))
    for w in WORKLOADS:
        cells = [rows(p, v, w, res.get((REF, v, w))) for p in pairings]
        for i, n in enumerate(names):
            print("| " + (n % w if i == 0 else n) + " | " + " | ".join(c[i] for c in cells) + " |")
    print()
    print("(%s)" % cond)
    print("(x: ratio to %s, oriented so that above 1 is better: for latency and"
          " CPU, its figure over this one's; CPU: busy time of the %s from /proc/stat over the"
          " workload, per RPC sent by the client and per MiB moved; switches: context switches"
          " of each guest (/proc/stat ctxt) per RPC; rxe packets: sent by each guest per RPC"
          " (hw_counters), with the RNR NAKs it sent, its retransmissions and the duplicates it"
          " received, if any)" % (label(REF), "guest" if single else "client and the server guests"))
    print("(command: %s)" % cmdline)
    print()

def demangle(lines):
    """Rust symbols (v0 mangling) readable, through c++filt, without crate hashes; cut at 150."""
    lines = list(lines)
    syms = sorted({t for l in lines for t in re.split(r"[\s;]", l) if t.startswith("_R")})
    if syms:
        try:
            out = subprocess.run(["c++filt"], input="\n".join(syms), capture_output=True,
                                 text=True, check=True).stdout.splitlines()
            names = dict(zip(syms, (re.sub(r"\[[0-9a-f]{16}\]", "", o) for o in out)))
            lines = [re.sub(r"_R[0-9A-Za-z_$.]+", lambda m: names.get(m.group(0), m.group(0)), l)
                     for l in lines]
        except (OSError, subprocess.CalledProcessError):
            pass
    return [l if len(l) <= 150 else l[:147] + "..." for l in lines]


# Phases: one table per traced workload and version, a column per pairing and guest.
STEPS = ["encode-transmit", "transmit-recvfrom", "transmit-reply", "process", "sendto",
         "send-reply", "reply-done"]
SIDE_OF = {"encode-transmit": "client", "transmit-reply": "client", "reply-done": "client",
           "process": "server", "sendto": "server"}
for (w, v) in sorted({(j.get("workload", "?"), j.get("vers", "?")) for _, j in phases}):
    cols = [(p, j) for p, j in phases if (j.get("workload", "?"), j.get("vers", "?")) == (w, v)]
    print("Phases of %s over NFSv%s, per RPC: median / 90th percentile, us (scripts/guest/phases.py)" % (w, v))
    print()
    heads = ["%s, %s" % (label(p), j.get("phases") or "?") for p, j in cols]
    print("| procedure, step | " + " | ".join(heads) + " |")
    print("| --- |" + " --- |" * len(cols))
    cells = {}
    for i, (p, j) in enumerate(cols):
        for proc, step, n, p50, p90 in j.get("rows", []):
            cells[proc, step, i] = "%d / %d (n %d)" % (p50, p90, n)
    procs = []
    for _, j in cols:
        for r in j.get("rows", []):
            if r[0] not in procs:
                procs.append(r[0])
    for proc in procs:
        for step in STEPS:
            if any((proc, step, i) in cells for i in range(len(cols))):
                row = [cells.get((proc, step, i), "") for i in range(len(cols))]
                print("| %s, %s (%s) | %s |" % (proc, step, SIDE_OF.get(step, "one guest"), " | ".join(row)))
    for i, (p, j) in enumerate(cols):
        if "error" in j:
            print("(%s: n/a (%s))" % (heads[i], j["error"]))
    print()

for p, j in profiles:
    side = j.get("profile") or "?"
    what = "%s, %s, %s over NFSv%s" % (label(p), "one guest" if side == "guest" else side + "'s guest",
                                     j.get("workload", "?"), j.get("vers", "?"))
    if "error" in j:
        print("Profile (%s): n/a (%s)" % (what, j["error"]))
        continue
    print("Profile (%s): perf record -e cpu-clock -F 1000 -a -g, %s samples" % (what, j["samples"]))
    print("  by module:")
    for l in j.get("dso", []):
        print("    " + l)
    print("  top symbols:")
    for l in demangle(j.get("top", [])):
        print("    " + l)
    total = (", %.2f%% in all" % j["ours_pct"]) if j.get("ours_pct") else ""
    print("  top symbols of the transport module (rpcrdma_rs or rpcrdma%s):" % total)
    for l in demangle(j.get("ours", [])) or ["(none sampled)"]:
        print("    " + l)
    if "sunrpc" in j:
        total = (" (%.2f%% in all)" % j["sunrpc_pct"]) if "sunrpc_pct" in j else ""
        print("  top symbols of sunrpc%s:" % total)
        for l in j["sunrpc"] or ["(none sampled)"]:
            print("    " + l)
    print("  heaviest call chains of the busiest symbols but idle (callee first):")
    for l in demangle(j.get("chains", [])):
        print("    " + l)
    print()
PY
}
if [ -n "$render" ]; then
	render_results "$render"
	exit 0
fi
[ -z "$profile" ] || case " $workloads " in
*" $profile "*) ;;
*) die "--profile: no workload $profile ($workloads)" ;;
esac
[ -z "$phases" ] || case " $workloads " in
*" $phases "*) ;;
*) die "--phases: no workload $phases ($workloads)" ;;
esac
for v in $versions; do
	case $v in 3|4.0|4.1|4.2) ;; *) die "--versions: no NFS version $v (3 4.0 4.1 4.2)" ;; esac
done
if [ -n "$profile" ]; then
	command -v perf >/dev/null || die "--profile: no perf on this machine (apt-get install linux-perf)"
fi
if [ $single = 1 ]; then
	# One kernel cannot hold both modules: mixed pairings do not exist in one guest.
	p=
	for x in $pairings; do [ "${x%/*}" = "${x#*/}" ] && p="$p $x"; done
	pairings=${p# }
fi
# The kernel: perf (scripts/kernel/perf.config: built for speed, as a distribution kernel is;
# built on first use), or the tests' (tinyconfig's size optimisations). The guests boot it
# (RPCRDMA_KERNEL) and rpcrdma_rs.ko is built against it: for perf in a copy of this tree kept
# in the cache, so that the tree's own objects stay those of the test kernel.
if [ $kernel = perf ]; then
	export RPCRDMA_KERNEL=perf
	KDIR=$(scripts/build-kernel.sh --perf | tail -n 1)
	bench_src=$RPCRDMA_CACHE/bench-src/$(basename "$KDIR")
	mkdir -p "$bench_src"
	# By content (-c), without the tree's mtimes (no -t): a file that changed gets the time of
	# the copy, newer than the objects (and bindings) the copy keeps from its last build, so
	# make rebuilds what it must. With the tree's mtimes, a source older than objects built
	# from another tree (another worktree, another commit) would be taken as built.
	rsync -rlpc --delete --exclude=.git --exclude=target --exclude='*.o' --exclude='*.ko' \
		--exclude='.*.cmd' --exclude='*.mod*' --exclude=bindings_generated.rs \
		--exclude=modules.order --exclude=Module.symvers \
		"$RPCRDMA_TOP/" "$bench_src/"
	ko=$bench_src/rpcrdma_rs.ko build_ko=$bench_src/scripts/build-module.sh
	kernel_cond="kernel built for speed (scripts/kernel/perf.config)"
else
	KDIR=$(scripts/build-kernel.sh | tail -n 1)
	ko=$RPCRDMA_TOP/rpcrdma_rs.ko build_ko=scripts/build-module.sh
	kernel_cond="the test kernel (tinyconfig: built for size)"
fi
export KDIR
ksft_dir=$(readlink -f "$KDIR/source")/tools/testing/selftests
nvers=$(echo $versions | wc -w)
# Per guest: boot, layout of the file, per version a mount and four workloads, the profile.
nwork=$(echo $workloads | wc -w)
guest_timeout=$((nvers * nwork * (runtime + 40) + (${profile:+1} + 0) * (runtime + 300) +
	(${phases:+1} + 0) * (runtime + 120) + 900))

# rpcrdma_rs.ko for the rs pairings: build it if missing; without it they are n/a.
ko_error=
case " $pairings " in
*rs*)
	# The test kernel's module is the tree's own, used as built; the copy is always made current.
	{ [ $kernel = test ] && [ -f "$ko" ]; } || "$build_ko" >&2 ||
		ko_error="rpcrdma_rs.ko does not build"
	;;
esac

# The results file of this run (render_results): kept, so that --render prints it again.
if [ $single = 1 ]; then
	cond="QEMU TCG, one guest of 2 vCPUs, client and server sharing one $dev device"
else
	cond="QEMU TCG, two guests of 1 vCPU joined by a virtual link, $dev on both"
fi
[ ${#vm_opts[@]} = 0 ] || cond=${cond/QEMU TCG/QEMU KVM}
cond+=", $kernel_cond"
results=$(mktemp /tmp/rpcrdma-bench.XXXXXX)
python3 -c 'import json, sys; a = sys.argv; print("meta\t" + json.dumps({"pairings": a[1],
	"versions": a[2], "single": a[3] == "1", "command": a[4], "conditions": a[5],
	"workloads": a[6], "reference": a[7], "repeat": int(a[8])}))' \
	"$pairings" "$versions" "$single" "$cmdline" \
	"$cond, ${runtime}s per workload$([ "$repeat" = 1 ] || echo ", $repeat rounds"), $(date -u +%F)" \
	"$workloads" "$reference" "$repeat" >"$results"
guest_env=(env KSFT_DIR="$ksft_dir" RPCRDMA_KO="$ko" RPCRDMA_DEV="$dev"
	BENCH_VERSIONS="$versions" BENCH_PROFILE="$profile" BENCH_PHASES="$phases"
	BENCH_WORKLOADS="$workloads"
	RPCRDMA_INLINE="${inline:-36864}")
[ -z "$profile_stacks" ] || guest_env+=(BENCH_PROFILE_STACKS="$profile_stacks")

for round in $(seq 1 "$repeat"); do
for p in $pairings; do
	cs=${p%/*} ss=${p#*/}
	case "$cs $ss" in "c c"|"c rs"|"rs c"|"rs rs"|"rs2 rs2"|"rsi rsi") ;; *) die "bad pairing $p (CLIENT/SERVER, each c or rs, or rs2/rs2, or rsi/rsi)" ;; esac
	if [[ $p == *rs* ]] && [ -n "$ko_error" ]; then
		python3 -c 'import json, sys; print(sys.argv[1] + "\t" + json.dumps({"fail": sys.argv[2]}))' \
			"$p" "$ko_error" >>"$results"
		continue
	fi
	start=$SECONDS
	if [ $single = 1 ]; then
		log "pairing $p: one guest, NFS $versions, fio ${runtime}s per workload"
		out=$(scripts/vm.sh "${vm_opts[@]}" --name "bench-$cs" --memory 3G --timeout $guest_timeout \
			-- "${guest_env[@]}" bash scripts/guest/bench.sh "$cs" "$runtime" 2>&1) && rc=0 || rc=$?
		lines=$out
	else
		log "pairing $p: client $cs, server $ss, two guests, NFS $versions, fio ${runtime}s per workload"
		env_cmd="${guest_env[*]@Q} bash $RPCRDMA_TOP/scripts/guest/bench.sh"
		out=$(scripts/vm-pair.sh "${vm_opts[@]}" --timeout $guest_timeout \
			"$env_cmd server $ss" "$env_cmd client $cs $runtime $ss" 2>&1) && rc=0 || rc=$?
		# The client's objects, and the server's profile and phases.
		lines=$(echo "$out" | sed -n -e 's/^cli| //p' -e 's/^srv| \({"p\(rofile\|hases\)"\)/\1/p')
	fi
	echo "$lines" | grep '^{' | sed -e "s|^{|{\"round\": $round, |" -e "s|^|$p\t|" >>"$results" || true
	# A guest that crashed or timed out says so in the runner's last words.
	why=$(echo "$out" | grep -E 'FAILED|server exit' | tail -n 1 | sed 's/^\[[0-9:]*\] //' || true)
	if [ $rc != 0 ]; then
		python3 -c 'import json, sys; print(sys.argv[1] + "\t" + json.dumps({"fail": sys.argv[2]}))' \
			"$p" "guest failed: ${why:-exit $rc}" >>"$results"
		echo "$out" | tail -n 40 | sed "s|^|[$p] |" >&2
	fi
	log "pairing $p, round $round of $repeat: done in $((SECONDS - start))s (exit $rc)"
done
done

render_results "$results"
log "results kept in $results (scripts/bench.sh --render $results prints them again)"
