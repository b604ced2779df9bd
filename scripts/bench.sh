#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Benchmark (not a test): fio over NFSv3/RDMA, one row per workload, one column per stack, same
# kernel, same run. Today only the C stack (rpcrdma.ko client and server) can run; the columns
# for rpcrdma_rs come with the client and server transports.
#   scripts/bench.sh [--kvm] [--runtime SECONDS]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$RPCRDMA_TOP"
vm_opts=() runtime=15
while [ $# -gt 0 ]; do
	case "$1" in
	--kvm) vm_opts+=(--kvm) ;;
	--runtime) runtime=$2; shift ;;
	*) die "unknown option $1" ;;
	esac
	shift
done
KDIR=$(scripts/build-kernel.sh | tail -n 1)
export KDIR
ksft_dir=$(readlink -f "$KDIR/source")/tools/testing/selftests

declare -A result
stacks=(c)
for s in "${stacks[@]}"; do
	log "stack $s: fio, ${runtime}s per workload"
	out=$(scripts/vm.sh "${vm_opts[@]}" --name "bench-$s" --memory 3G -- \
		env KSFT_DIR="$ksft_dir" bash scripts/guest/bench.sh "$s" "$runtime") ||
		{ echo "$out"; die "stack $s failed"; }
	while read -r line; do
		case "$line" in "{"*) ;; *) continue ;; esac
		w=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["workload"])' "$line")
		result[$s/$w]=$(python3 -c '
import json, sys
r = json.loads(sys.argv[1])
print("%s IOPS %s MiB/s %s us" % (r.get("iops", 0), r.get("MiB/s", 0), r.get("lat_us", 0)))
' "$line")
	done <<<"$out"
done

printf '%-18s | %-34s | %-34s | %s\n' workload "C client -> C server" "rpcrdma_rs client -> C server" ratio
for w in randread-4k-qd16 seqread-1m seqwrite-1m synclat-4k; do
	printf '%-18s | %-34s | %-34s | %s\n' "$w" "${result[c/$w]:-failed}" "n/a (no send path yet)" "-"
done
echo "(QEMU TCG guest, one rxe device shared by client and server, ${runtime}s per workload, $(date -u +%F))"
