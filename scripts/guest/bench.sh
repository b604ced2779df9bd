#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Benchmark workloads on NFS-over-RDMA mounts, for scripts/bench.sh. Prints one JSON object per
# NFS version and workload on stdout; {"vers": V, "error": "..."} when one version cannot run
# (the others go on); {"error": "..."} and exits non-zero when the stack cannot run at all (so
# that the host prints "n/a (reason)" for it and goes on with the other pairings).
#
#   bench.sh STACK RUNTIME          one guest: client and server share an RDMA device (fallback)
#   bench.sh server STACK           two guests (scripts/vm-pair.sh, guest srv): nfsd over STACK
#   bench.sh client STACK RUNTIME   two guests (guest cli): mount over STACK, run the workloads
#
# STACK: c (the kernel's rpcrdma.ko), rs (rpcrdma_rs.ko; the client side gets the insmod
# parameters in RPCRDMA_RS_CLIENT_PARAMS, default none, the server side
# those in RPCRDMA_RS_SERVER_PARAMS), or rs2 (rpcrdma_rs.ko with max_version=2 as well: RPC-over-
# RDMA version 2 between two rs2 ends), or rsi (rpcrdma_rs.ko with the inline thresholds of both
# ends raised to RPCRDMA_INLINE bytes). In one guest the same module serves both ends.
# BENCH_WORKLOADS: the workloads (default "randread-4k-qd16 seqread-1m seqwrite-1m synclat-4k");
#   besides those four, any randread-SIZEk-qdDEPTH or randwrite-SIZEk-qdDEPTH (O_DIRECT, libaio).
# RPCRDMA_DEV: the soft RDMA device, rxe (default) or siw.
# BENCH_VERSIONS: the NFS versions to mount, one after the other ("3 4.2").
# BENCH_PROFILE: a workload to run once more, after those of the first version, under
#   `perf record -e cpu-clock -a -g` in each guest whose stack is in BENCH_PROFILE_STACKS (the
#   client's and the server's as "client:STACK server:STACK", default those of rs and rs2;
#   in one guest, "guest:STACK"); the top symbols come out as {"profile": ...} objects.
# BENCH_PHASES: a workload to run once more, after those of the first version (and the
#   profile), with the sunrpc and rpcrdma trace events of scripts/guest/phases.py on in every
#   guest; each guest's phases come out as a {"phases": ...} object.
#
# CPU cost: the busy time of the whole guest (user, nice, system, irq, softirq, steal from the
# "cpu" line of /proc/stat: everything but idle and iowait) is sampled just before and after
# each workload, on the client locally and on the server through the control mount (the server
# answers requests in $EXPORT/ctl with fork-free shell builtins, so that waiting for them costs
# it nothing measurable); the RPC count is the client's "rpc" calls line of /proc/net/rpc/nfs,
# sampled in the same places, when nothing else uses NFS (the control mount is idle then). fio
# takes the client's samples itself (exec_prerun, exec_postrun): its start-up stays out.
set -u
# The soft RDMA device's counters that tell how the link went (rxe's hw_counters; siw has
# none): one word, NAME=VALUE pairs joined by commas, summed over devices, or "-". Builtins
# only (the server answers with it). Sets hw.
HW_COUNTERS="sent_pkts rcvd_pkts send_rnr_err rcvd_rnr_err completer_retry_err duplicate_request"
hw_counters() {
	local n f v sum
	hw=
	for n in $HW_COUNTERS; do
		sum=
		for f in /sys/class/infiniband/*/ports/1/hw_counters/$n; do
			[ -r "$f" ] && read -r v <"$f" && sum=$((${sum:-0} + v))
		done
		[ -n "$sum" ] && hw+=${hw:+,}$n=$sum
	done
	hw=${hw:--}
}
# "bench.sh --hw-counters" (in fio's exec_prerun and exec_postrun on the client): prints
# "hw WORD" and nothing else.
if [ "${1:-}" = --hw-counters ]; then
	hw_counters
	echo "hw $hw"
	exit 0
fi
BENCH_SELF=$(readlink -f "$0")
. "$(dirname "$0")/../../tools/testing/selftests/rpcrdma/lib.sh"
RPCRDMA_RS_CLIENT_PARAMS=${RPCRDMA_RS_CLIENT_PARAMS-}
RPCRDMA_RS_SERVER_PARAMS=${RPCRDMA_RS_SERVER_PARAMS-}
BENCH_VERSIONS=${BENCH_VERSIONS:-3 4.2}
BENCH_WORKLOADS=${BENCH_WORKLOADS:-randread-4k-qd16 seqread-1m seqwrite-1m synclat-4k}
BENCH_PROFILE=${BENCH_PROFILE-}
BENCH_PHASES=${BENCH_PHASES-}
BENCH_PROFILE_STACKS=${BENCH_PROFILE_STACKS:-client:rs server:rs guest:rs client:rs2 server:rs2 guest:rs2}
dev=${RPCRDMA_DEV:-rxe}
json() { # json PYTHON-DICT-EXPRESSION ARGS...: print it as JSON; sys.argv[1:] are the ARGS
	python3 -c "import json, sys; a = sys.argv; print(json.dumps($1))" "${@:2}"
}

error() { # error MESSAGE: report why this stack has no numbers, and stop
	json '{"error": a[1]}' "$*"
	exit 1
}
# The last line of a command's output, for an error message, without the shell's "FILE: line
# N: echo: write error: " in front of the errno text.
last() { tail -n 1 | sed -e 's/^.*: line [0-9]*: //' -e 's/^echo: write error: //' | tr -d '\n'; }

# A sleep without a fork (a fork costs milliseconds of CPU under emulation): a read that times
# out on a FIFO nobody writes.
nap_fifo=/tmp/bench-nap
[ -p $nap_fifo ] || mkfifo $nap_fifo
exec 7<>$nap_fifo
nap() { read -r -t "$1" -u 7 || true; }

# Busy time of the guest so far, in USER_HZ ticks: the "cpu" line of /proc/stat less idle and
# iowait; and its context switches so far (the "ctxt" line). Builtins only (the server answers
# with them). Sets busy and ctxt.
cpu_busy() {
	local cpu user nice system idle iowait irq softirq steal rest k v
	{
		read -r cpu user nice system idle iowait irq softirq steal rest
		while read -r k v rest; do
			[ "$k" = ctxt ] && { ctxt=$v; break; }
		done
	} </proc/stat
	busy=$((user + nice + system + irq + softirq + steal))
}
# perf in this guest: prof_start TAG launches it with its events disabled and waits until it
# answers on its control FIFO (its start-up takes long under emulation), prof_enable and
# prof_disable switch recording on and off, prof_stop SIDE VERSION WORKLOAD prints one
# {"profile": ...} object. So the profile covers the workload and not perf's own start.
perf_pid=
prof_start() {
	local tag=$1 ack
	rm -f /tmp/perf-$tag.data /tmp/perf-$tag.ctl /tmp/perf-$tag.ack
	mkfifo /tmp/perf-$tag.ctl /tmp/perf-$tag.ack
	perf record -e cpu-clock -F 1000 -a -g -D -1 -o /tmp/perf-$tag.data \
		--control fifo:/tmp/perf-$tag.ctl,/tmp/perf-$tag.ack >/tmp/perf-$tag.log 2>&1 &
	perf_pid=$!
	exec 8<>/tmp/perf-$tag.ctl 9<>/tmp/perf-$tag.ack
	echo ping >&8
	read -r -t 300 -u 9 ack && [ "$ack" = ack ] && kill -0 $perf_pid 2>/dev/null && return 0
	kill -KILL $perf_pid 2>/dev/null
	perf_pid=
	return 1
}
perf_on=0
prof_enable() {
	[ -n "$perf_pid" ] || return 0
	echo enable >&8
	read -r -t 60 -u 9 _ || true
	perf_on=1
}
prof_disable() {
	[ -n "$perf_pid" ] && [ $perf_on = 1 ] || return 0
	echo disable >&8
	read -r -t 60 -u 9 _ || true
	perf_on=0
}
prof_stop() { # prof_stop SIDE VERSION WORKLOAD
	local f=/tmp/perf-$1.data
	if [ -z "$perf_pid" ]; then
		json '{"profile": a[1], "vers": a[2], "workload": a[3], "error": a[4]}' "$1" "$2" "$3" \
			"perf record did not start: $(last </tmp/perf-$1.log)"
		return
	fi
	prof_disable
	kill -INT $perf_pid
	wait $perf_pid
	exec 8>&- 9>&-
	perf_pid=
	# Symbols from /proc/kallsyms (module symbols included); no vmlinux in the guest.
	local r=(perf report -i $f --kallsyms=/proc/kallsyms --stdio --no-children)
	# Low limits: our module's share is small and spread over many symbols (1-4% of the samples
	# under emulation, none above 0.1%), so higher ones showed none of it.
	"${r[@]}" -g none --sort dso,sym --percent-limit 0.01 >/tmp/perf-$1.sym 2>/tmp/perf-$1.err
	"${r[@]}" -g none --sort dso --percent-limit 0.1 >/tmp/perf-$1.dso 2>>/tmp/perf-$1.err
	# Where the busiest symbols are called from (callee first; the kernel's unwinder is a guess).
	"${r[@]}" -g folded,0,callee,function,percent --sort sym --percent-limit 3 \
		>/tmp/perf-$1.chains 2>>/tmp/perf-$1.err
	# The sampled addresses themselves, for the modules' shares (below).
	perf script -i $f -G -F ip >/tmp/perf-$1.ips 2>>/tmp/perf-$1.err
	# A summary that fails still gives its profile a line ("n/a (reason)").
	python3 "$(dirname "$BENCH_SELF")/perf_summary.py" "$1" "$2" "$3" /tmp/perf-$1 \
		2>/tmp/perf-$1.summary-err ||
		json '{"profile": a[1], "vers": a[2], "workload": a[3], "error": a[4]}' "$1" "$2" "$3" \
			"perf_summary.py: $(last </tmp/perf-$1.summary-err)"
}

# Trace events for phases.py: trace_start switches them on over an empty buffer, trace_stop
# SIDE VERSION WORKLOAD switches them off and prints the {"phases": ...} object.
TRACEFS=/sys/kernel/tracing
PHASE_EVENTS="sunrpc/xprt_reserve sunrpc/rpc_xdr_sendto sunrpc/xprt_transmit
	sunrpc/rpc_stats_latency sunrpc/svc_xdr_recvfrom sunrpc/svc_process sunrpc/svc_xdr_sendto
	sunrpc/svc_send rpcrdma/xprtrdma_reply"
trace_events() { # trace_events 0|1
	local e
	for e in $PHASE_EVENTS; do
		[ -e $TRACEFS/events/$e/enable ] && echo "$1" >$TRACEFS/events/$e/enable
	done
}
trace_start() {
	mountpoint -q $TRACEFS || mount -t tracefs tracefs $TRACEFS || return 1
	echo 0 >$TRACEFS/tracing_on
	echo 16384 >$TRACEFS/buffer_size_kb
	echo >$TRACEFS/trace
	trace_events 1
	echo 1 >$TRACEFS/tracing_on
}
trace_stop() { # trace_stop SIDE VERSION WORKLOAD
	echo 0 >$TRACEFS/tracing_on
	trace_events 0
	cat $TRACEFS/trace >/tmp/trace-$1.txt
	echo >$TRACEFS/trace
	python3 "$(dirname "$BENCH_SELF")/phases.py" "$1" "$2" "$3" /tmp/trace-$1.txt \
		2>/tmp/phases-$1.err ||
		json '{"phases": a[1], "vers": a[2], "workload": a[3], "error": a[4]}' "$1" "$2" "$3" \
			"phases.py: $(last </tmp/phases-$1.err)"
}

# Fio's results for one workload, with the CPU and RPC figures sampled around it: busy ticks
# (the "cpu" line of /proc/stat less idle and iowait), all ticks, context switches (its "ctxt"
# line), the "rpc" calls of /proc/net/rpc/nfs, the seconds between the samples (/proc/uptime).
report() { # report VERSION NAME FIO-JSON CLIENT-BEFORE CLIENT-AFTER SERVER-BEFORE SERVER-AFTER
	python3 - "$@" <<'PY'
import json, sys
vers, name, path, pre, post, s0, s1 = sys.argv[1:]
out = {"vers": vers, "workload": name, "bytes": 0}


def hw(word):
    """The device counters of a hw_counters word: {name: value}, empty for "-"."""
    return {k: int(v) for k, _, v in (p.partition("=") for p in word.split(",")) if v}


def delta(a, b):
    return {k: b[k] - a[k] for k in b if k in a} if a and b else {}


def snap(f):
    up, busy, all_, rpcs, ctxt, dev = None, None, None, None, None, {}
    for line in open(f):
        w = line.split()
        if len(w) == 2 and w[0] == "hw":
            dev = hw(w[1])
        elif len(w) == 2 and up is None and w[0].replace(".", "").isdigit():
            up = float(w[0])
        elif w and w[0] == "cpu":
            v = [int(x) for x in w[1:9]]
            busy, all_ = sum(v) - v[3] - v[4], sum(v)
        elif w and w[0] == "rpc":
            rpcs = int(w[1])
        elif w and w[0] == "ctxt":
            ctxt = int(w[1])
    return up, busy, all_, rpcs, ctxt, dev


try:
    a, b = snap(pre), snap(post)
    out["seconds"] = round(b[0] - a[0], 2)
    out["cli_ticks"], out["cli_all_ticks"], out["rpcs"] = b[1] - a[1], b[2] - a[2], b[3] - a[3]
    out["cli_ctxt"] = b[4] - a[4]
    out["cli_hw"] = delta(a[5], b[5])
    if s0 and s1:
        # The server's answers: "BUSY CTXT HW".
        (t0, c0, h0), (t1, c1, h1) = s0.split(), s1.split()
        out["srv_ticks"], out["srv_ctxt"] = int(t1) - int(t0), int(c1) - int(c0)
        out["srv_hw"] = delta(hw(h0), hw(h1))
except (OSError, TypeError, ValueError, IndexError) as e:
    print(json.dumps({"vers": vers, "workload": name, "error": "no CPU sample (%s)" % e}))
    sys.exit()
text = open(path).read()
# fio writes its warnings (e.g. a failed cache invalidation on NFS) ahead of the JSON.
j = json.loads(text[text.index("{"):])["jobs"][0]
for d in ("read", "write"):
    if j[d]["io_bytes"]:
        out["iops"] = round(j[d]["iops"])
        out["MiB/s"] = round(j[d]["bw_bytes"] / 1048576, 1)
        c = j[d]["clat_ns"]
        out["lat_us"] = round(c["mean"] / 1000, 1)
        p = c.get("percentile", {})
        for q, k in (("50.000000", "p50_us"), ("99.000000", "p99_us")):
            if q in p:
                out[k] = round(p[q] / 1000, 1)
    out["bytes"] += j[d]["io_bytes"]
print(json.dumps(out))
PY
}

fio_run() { # fio_run NAME fio-args...: fio on the benchmark file, its JSON in /tmp/NAME.json
	local name=$1 out; shift
	# A hung transport must not hang the whole benchmark: fio gets its runtime plus a margin.
	out=$(timeout -s KILL $((runtime + 180)) fio --name="$name" --filename=$MNT/bench.dat \
		--size=256M --direct=1 --runtime="$runtime" --time_based --invalidate=0 \
		--output-format=json --output=/tmp/$name.json "$@" 2>&1) ||
		{ echo "fio $name: $(echo "$out" | last)"; return 1; }
}

srv_seq=0
# Ask the server guest for something ($*: stat, prof-start or prof-stop V W); sets answer.
# In one guest (no control mount) the guest is its own server: stat answers "".
srv_ask() {
	local i lines
	answer=
	[ "$role" = client ] || return 0
	srv_seq=$((srv_seq + 1))
	echo "$*" >$PAIR_CTL/ctl/req.tmp && mv $PAIR_CTL/ctl/req.tmp $PAIR_CTL/ctl/req.$srv_seq ||
		return 1
	# Ten minutes at most: perf starts and reports slowly under emulation.
	for i in $(seq 1 12000); do
		if [ -e $PAIR_CTL/ctl/ans.$srv_seq ]; then
			mapfile -t lines <$PAIR_CTL/ctl/ans.$srv_seq
			if [ ${#lines[@]} -gt 0 ] && [ "${lines[-1]}" = end ]; then
				answer=${lines[*]:0:${#lines[@]}-1}
				return 0
			fi
		fi
		nap 0.05
	done
	return 1
}

# The server side of srv_ask: answer requests until the client is done (an hour at most: the
# guest's own timeout is the real limit).
serve() {
	local seq=1 cmd ans
	while [ ! -e $EXPORT/ctl/done ] && [ $SECONDS -lt 3600 ]; do
		if [ -e $EXPORT/ctl/req.$seq ]; then
			read -r cmd <$EXPORT/ctl/req.$seq
			case $cmd in
			stat) cpu_busy; hw_counters; ans="$busy $ctxt $hw" ;;
			prof-start) prof_start server || true; ans= ;;
			prof-enable) prof_enable; ans= ;;
			prof-disable) prof_disable; ans= ;;
			trace-start) trace_start || true; ans= ;;
			trace-stop*)
				# shellcheck disable=SC2086 # "trace-stop VERSION WORKLOAD"
				set -- $cmd
				# Into this guest's output, which the host reads.
				trace_stop server "$2" "$3"
				ans=
				;;
			prof-stop*)
				# shellcheck disable=SC2086 # "prof-stop VERSION WORKLOAD"
				set -- $cmd
				# The profile goes to this guest's output, which the host reads.
				prof_stop server "$2" "$3"
				ans=
				;;
			*) ans= ;;
			esac
			printf '%s\nend\n' "$ans" >$EXPORT/ctl/ans.$seq
			seq=$((seq + 1))
		else
			nap 0.05
		fi
	done
}

# One workload, with the counters sampled around it; prints its JSON object. fio samples the
# client's (or the one guest's) itself, as its exec_prerun and exec_postrun (into
# NAME.prerun.txt and NAME.postrun.txt), right before the job's first I/O and after its last,
# so that fio's own start (loading its libraries, setting up the file) stays out; the server's
# are sampled before fio starts and after it ends (it is idle meanwhile).
job() { # job VERSION NAME fio-args...
	local vers=$1 name=$2 out s0 s1
	# One group: fio appends "> NAME.prerun.txt 2>&1" to the command.
	local snap="{ cat /proc/uptime /proc/stat /proc/net/rpc/nfs; bash $BENCH_SELF --hw-counters; }"
	shift 2
	srv_ask stat || { json '{"vers": a[1], "workload": a[2], "error": a[3]}' "$vers" "$name" \
		"no answer from the server guest"; return 1; }
	s0=$answer
	rm -f /tmp/$name.prerun.txt /tmp/$name.postrun.txt
	out=$(fio_run "$name" "$@" --exec_prerun="$snap" --exec_postrun="$snap") || {
		json '{"vers": a[1], "workload": a[2], "error": a[3]}' "$vers" "$name" "$out"
		return 1
	}
	srv_ask stat || { json '{"vers": a[1], "workload": a[2], "error": a[3]}' "$vers" "$name" \
		"no answer from the server guest"; return 1; }
	s1=$answer
	report "$vers" "$name" /tmp/$name.json /tmp/$name.prerun.txt /tmp/$name.postrun.txt \
		"$s0" "$s1"
}

# The workloads, on one 256 MiB file (laid out by layout(), outside the measurements).
workload_args() { # workload_args NAME: its fio arguments
	case $1 in
	seqread-1m) echo --rw=read --bs=1M --iodepth=4 --ioengine=libaio ;;
	seqwrite-1m) echo --rw=write --bs=1M --iodepth=4 --ioengine=libaio ;;
	synclat-4k) echo --rw=randwrite --bs=4k --iodepth=1 --ioengine=psync --sync=1 ;;
	rand*-*k-qd*)
		local rw=${1%%-*} rest=${1#*-}
		local size=${rest%%-*} depth=${rest#*-qd}
		case "$rw $size $depth" in
		randread\ [0-9]*k\ [0-9]* | randwrite\ [0-9]*k\ [0-9]*)
			echo --rw=$rw --bs=$size --iodepth=$depth --ioengine=libaio ;;
		esac
		;;
	esac
}
WORKLOADS=$BENCH_WORKLOADS

# The whole file written once, so that no workload lays it out (or reads holes).
layout() {
	local out
	out=$(timeout -s KILL 600 fio --name=layout --filename=$MNT/bench.dat --size=256M \
		--rw=write --bs=1M --iodepth=4 --ioengine=libaio --direct=1 2>&1) ||
		{ echo "fio layout: $(echo "$out" | last)"; return 1; }
}

mount_rdma() { # mount_rdma VERSION
	local out opts=vers=$1,proto=rdma,port=20049 path=$EXPORT
	# NFSv4: the export is the pseudo-root (fsid=0).
	[ "$1" = 3 ] && opts=$opts,nolock || path=/
	out=$(timeout -s KILL 120 mount -t nfs -o $opts $SRV_ADDR:$path $MNT 2>&1) ||
		{ echo "mount: $(echo "$out" | last | sed 's/^mount.nfs: //')"; return 1; }
}

# Every version and workload, then the profiled workload. $1: the guest's side for profiles
# (client, or guest in one guest); $2: its stack; $3: the server's stack in two guests.
all_versions() {
	local side=$1 stack=$2 sstack=${3:-} v w out first=1 args
	for v in $BENCH_VERSIONS; do
		out=$(mount_rdma "$v") || { json '{"vers": a[1], "error": a[2]}' "$v" "$out"; continue; }
		if [ $first = 1 ]; then
			out=$(layout) || { json '{"error": a[1]}' "$out"; umount -l $MNT; return 1; }
		fi
		# Unmeasured warm-up: the first workload of a guest ran up to 40% slower than the
		# same workload later (QEMU translates the code paths it meets for the first time).
		runtime=5 fio_run warmup --rw=randrw --bs=8k --iodepth=8 --ioengine=libaio >/dev/null ||
			true
		for w in $WORKLOADS; do
			# shellcheck disable=SC2046 # the arguments of the workload
			job "$v" "$w" $(workload_args "$w")
		done
		if [ $first = 1 ] && [ -n "$BENCH_PROFILE" ]; then
			args=$(workload_args "$BENCH_PROFILE")
			[ -n "$args" ] || json '{"profile": "", "error": "no workload " + a[1]}' "$BENCH_PROFILE"
			local me=0 srv=0
			[[ " $BENCH_PROFILE_STACKS " == *" $side:$stack "* ]] && me=1
			[ -n "$sstack" ] && [[ " $BENCH_PROFILE_STACKS " == *" server:$sstack "* ]] && srv=1
			if [ -n "$args" ] && [ $((me + srv)) -gt 0 ]; then
				# Both record the workload and not perf's start: the server from just before
				# fio starts, this guest (through fio's exec_prerun and exec_postrun) from
				# the workload's first I/O to its last, without fio's own start.
				local pargs=()
				[ $srv = 1 ] && { srv_ask prof-start || true; }
				if [ $me = 1 ] && prof_start "$side"; then
					# (fio sends the command's output to a file of its own: sh -c.)
					pargs=(--exec_prerun="sh -c 'echo enable >/tmp/perf-$side.ctl'"
						--exec_postrun="sh -c 'echo disable >/tmp/perf-$side.ctl'")
					perf_on=1
				fi
				[ $srv = 1 ] && { srv_ask prof-enable || true; }
				# shellcheck disable=SC2086 # the arguments of the workload
				out=$(fio_run "profile-$BENCH_PROFILE" $args "${pargs[@]}") ||
					json '{"profile": "", "error": a[1]}' "$out"
				[ $me = 1 ] && prof_disable
				[ $srv = 1 ] && { srv_ask prof-disable || true; }
				[ $me = 1 ] && prof_stop "$side" "$v" "$BENCH_PROFILE"
				[ $srv = 1 ] && { srv_ask prof-stop "$v" "$BENCH_PROFILE" || true; }
			fi
		fi
		if [ $first = 1 ] && [ -n "$BENCH_PHASES" ]; then
			args=$(workload_args "$BENCH_PHASES")
			if [ -z "$args" ]; then
				json '{"phases": "", "error": "no workload " + a[1]}' "$BENCH_PHASES"
			else
				[ -n "$sstack" ] && { srv_ask trace-start || true; }
				trace_start || json '{"phases": a[1], "error": "no tracefs"}' "$side"
				# shellcheck disable=SC2086 # the arguments of the workload
				out=$(fio_run "phases-$BENCH_PHASES" $args) ||
					json '{"phases": "", "error": a[1]}' "$out"
				trace_stop "$side" "$v" "$BENCH_PHASES"
				[ -n "$sstack" ] && { srv_ask trace-stop "$v" "$BENCH_PHASES" || true; }
			fi
		fi
		first=0
		umount $MNT || umount -l $MNT
	done
}

# fio writes the output of exec_prerun and exec_postrun into its working directory: somewhere
# writable (the guest's root file system is the host's, read-only).
cd /tmp
role=$1
case $role in
server)
	stack=$2
	pair_rdma_link_up $SRV_ADDR "$dev" >/dev/null || { echo "server: no $dev link"; exit 1; }
	out=$(rpcrdma_transport_load "$stack" "$RPCRDMA_RS_SERVER_PARAMS" 2>&1) ||
		echo "server: loading $stack failed: $out"
	# Serve over TCP even if the RDMA listener fails: the client checks in and reports.
	state=ok
	out=$(nfsd_start rdma 2>&1) || state=$(echo "$out" | last)
	grep -q '^rdma 20049' /proc/fs/nfsd/portlist || state="no rdma listener: $state"
	mkdir -p $EXPORT/ctl
	echo "$state" > $EXPORT/ctl/ready
	echo "server: rdma listener $state"
	serve
	nfsd_stop
	;;
client)
	stack=$2 runtime=$3
	pair_rdma_link_up $CLI_ADDR "$dev" >/dev/null || error "client: no $dev link"
	out=$(rpcrdma_transport_load "$stack" "$RPCRDMA_RS_CLIENT_PARAMS" 2>&1) ||
		error "client: loading $stack failed: $(echo "$out" | last)"
	modprobe nfs
	modprobe nfsv3
	modprobe nfsv4
	mkdir -p $MNT
	pair_ctl_mount || error "control mount over TCP failed"
	# Whatever happens below, let the server go.
	# umount -i: no UMNT call to a server that may already be gone (it would hang).
	trap 'touch $PAIR_CTL/ctl/done; umount -l $MNT 2>/dev/null; umount -i -l $PAIR_CTL' EXIT
	wait_file $PAIR_CTL/ctl/ready 300 || error "server never got ready"
	state=$(cat $PAIR_CTL/ctl/ready)
	[ "$state" = ok ] || error "$state"
	# The server's stack, for its profile: the host passes it as $4.
	all_versions client "$stack" "${4:-}"
	;;
c|rs|rs2|rsi)
	# One guest: the same module serves and mounts, over one rxe device.
	stack=$1 runtime=$2
	out=$(rpcrdma_transport_load "$stack" "$RPCRDMA_RS_CLIENT_PARAMS" 2>&1) ||
		error "loading $stack failed: $(echo "$out" | last)"
	modprobe nfs
	modprobe nfsv3
	modprobe nfsv4
	rdma_link_up "$dev" >/dev/null && rdma_wait_active ${dev}0 || error "no $dev device"
	out=$(nfsd_start rdma 2>&1) || error "rdma listener failed: $(echo "$out" | last)"
	all_versions guest "$stack"
	nfsd_stop
	;;
*)
	echo "usage: $0 STACK RUNTIME | server STACK | client STACK RUNTIME [SERVER-STACK]" >&2
	exit 2
	;;
esac
