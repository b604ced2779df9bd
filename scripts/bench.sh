#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Benchmark (not a test): fio over NFSv3/RDMA, one row per workload, one column per pairing of
# client and server transports, with the ratio to the C pair. Same kernel, same run.
#
#   scripts/bench.sh [--kvm] [--runtime SECONDS] [--pairings "c/c rs/c c/rs rs/rs"] [--single]
#                    [--dev rxe|siw]
#
# A pairing is CLIENT/SERVER: c is the kernel's rpcrdma.ko, rs is rpcrdma_rs.ko (the client with
# RPCRDMA_RS_CLIENT_PARAMS, default none). By default each pairing runs in
# two guests (scripts/vm-pair.sh: the C and the Rust module cannot share a kernel), joined by a
# virtual link with rxe (or siw: --dev) on both ends. A pairing that cannot run prints "n/a (reason)" and the
# others go on. --single is the fallback when two guests are too slow: client and server in one
# guest sharing an rxe device, so only c/c and rs/rs exist there.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$RPCRDMA_TOP"
vm_opts=() runtime=15 pairings="c/c rs/c c/rs rs/rs" single=0 dev=rxe
while [ $# -gt 0 ]; do
	case "$1" in
	--kvm) vm_opts+=(--kvm) ;;
	--runtime) runtime=$2; shift ;;
	--pairings) pairings=$2; shift ;;
	--single) single=1 ;;
	--dev) dev=$2; shift ;;
	*) die "unknown option $1 (see the header of $0)" ;;
	esac
	shift
done
if [ $single = 1 ]; then
	# One kernel cannot hold both modules: mixed pairings do not exist in one guest.
	p=
	for x in $pairings; do [ "${x%/*}" = "${x#*/}" ] && p="$p $x"; done
	pairings=${p# }
fi
KDIR=$(scripts/build-kernel.sh | tail -n 1)
export KDIR
ksft_dir=$(readlink -f "$KDIR/source")/tools/testing/selftests
ko=$RPCRDMA_TOP/rpcrdma_rs.ko
workloads="randread-4k-qd16 seqread-1m seqwrite-1m synclat-4k"

# rpcrdma_rs.ko for the rs pairings: build it if missing; without it they are n/a.
ko_error=
case " $pairings " in
*rs*)
	[ -f "$ko" ] || scripts/build-module.sh >&2 || ko_error="rpcrdma_rs.ko does not build"
	;;
esac

declare -A result
# Store the results of pairing $1 from the guest output $2: one JSON object per workload, or
# {"error": ...}. Workloads with no result get "n/a (reason)": the guest's error, else $3.
parse() {
	local p=$1 out=$2 why=$3 line w err=
	while read -r line; do
		case "$line" in "{"*) ;; *) continue ;; esac
		w=$(python3 -c 'import json, sys; j = json.loads(sys.argv[1]); print(j.get("workload", ""))' "$line")
		if [ -z "$w" ]; then
			err=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["error"])' "$line")
			continue
		fi
		result[$p/$w]=$line
	done <<<"$out"
	[ -n "$err" ] && why=$err
	for w in $workloads; do
		[ -n "${result[$p/$w]:-}" ] || result[$p/$w]="n/a ($why)"
	done
}

for p in $pairings; do
	cs=${p%/*} ss=${p#*/}
	case "$cs $ss" in "c c"|"c rs"|"rs c"|"rs rs") ;; *) die "bad pairing $p (CLIENT/SERVER, each c or rs)" ;; esac
	if [[ $p == *rs* ]] && [ -n "$ko_error" ]; then
		parse "$p" "" "$ko_error"
		continue
	fi
	start=$SECONDS
	if [ $single = 1 ]; then
		log "pairing $p: one guest, fio ${runtime}s per workload"
		out=$(scripts/vm.sh "${vm_opts[@]}" --name "bench-$cs" --memory 3G \
			--timeout $((4 * runtime + 900)) -- env KSFT_DIR="$ksft_dir" RPCRDMA_KO="$ko" RPCRDMA_DEV="$dev" \
			bash scripts/guest/bench.sh "$cs" "$runtime" 2>&1) && rc=0 || rc=$?
		cli=$out
	else
		log "pairing $p: client $cs, server $ss, two guests, fio ${runtime}s per workload"
		env_cmd="env KSFT_DIR=$ksft_dir RPCRDMA_KO=$ko RPCRDMA_DEV=$dev bash $RPCRDMA_TOP/scripts/guest/bench.sh"
		out=$(scripts/vm-pair.sh "${vm_opts[@]}" --timeout $((4 * runtime + 900)) \
			"$env_cmd server $ss" "$env_cmd client $cs $runtime" 2>&1) && rc=0 || rc=$?
		cli=$(echo "$out" | sed -n 's/^cli| //p')
	fi
	# A guest that crashed or timed out says so in the runner's last words.
	why=$(echo "$out" | grep -E 'FAILED|server exit' | tail -n 1 | sed 's/^\[[0-9:]*\] //' || true)
	why="guest failed: ${why:-exit $rc}"
	[ $rc = 0 ] || echo "$out" | tail -n 40 | sed "s|^|[$p] |" >&2
	parse "$p" "$cli" "$why"
	log "pairing $p: done in $((SECONDS - start))s (exit $rc)"
done

# One cell: the workload's figure of merit, and its ratio to c/c (for latency, c/c's latency
# divided by this one's, so that above 1 is better everywhere).
cell() { # cell PAIRING WORKLOAD
	python3 - "${result[$1/$2]}" "${result[c/c/$2]:-}" "$1" <<'PY'
import json, sys
line, ref, pairing = sys.argv[1], sys.argv[2], sys.argv[3]
if not line.startswith("{"):
    # "n/a (reason)", cut to the column (the full reason is in the log above).
    print(line if len(line) <= 46 else line[:42] + "...)")
    sys.exit()
r = json.loads(line)
if "lat_us" in r and r["workload"].startswith("synclat"):
    text, v = "%.1f ms (%d IOPS)" % (r["lat_us"] / 1000, r["iops"]), 1 / max(r["lat_us"], 0.001)
    key = lambda j: 1 / max(j["lat_us"], 0.001)
elif r["workload"].startswith("randread"):
    text, v = "%d IOPS" % r["iops"], r["iops"]
    key = lambda j: j["iops"]
else:
    text, v = "%.1f MiB/s" % r["MiB/s"], r["MiB/s"]
    key = lambda j: j["MiB/s"]
if pairing != "c/c" and ref.startswith("{") and key(json.loads(ref)):
    text += " (x%.2f)" % (v / key(json.loads(ref)))
print(text)
PY
}

label() { # c/rs -> "C client, rs server"
	local c=C s=C
	[ "${1%/*}" = rs ] && c=rs
	[ "${1#*/}" = rs ] && s=rs
	echo "$c client, $s server"
}
width=46
printf '%-18s' workload
for p in $pairings; do printf ' | %-*s' $width "$(label "$p")"; done
echo
for w in $workloads; do
	printf '%-18s' "$w"
	for p in $pairings; do printf ' | %-*s' $width "$(cell "$p" "$w")"; done
	echo
done
if [ $single = 1 ]; then
	echo "(QEMU TCG, one guest, client and server sharing one $dev device, ${runtime}s per workload, $(date -u +%F))"
else
	echo "(QEMU TCG, two guests of 1 vCPU joined by a virtual link, $dev on both, ${runtime}s per workload, $(date -u +%F))"
fi
echo "(x: ratio to C client, C server; for latency its latency over this one's: above 1 is faster)"
