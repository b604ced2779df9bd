#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Benchmark workloads on an NFSv3-over-RDMA mount, for scripts/bench.sh. Prints one JSON object
# per workload on stdout, or {"error": "..."} and exits non-zero when the stack cannot run (so
# that the host prints "n/a (reason)" for it and goes on with the other pairings).
#
#   bench.sh STACK RUNTIME          one guest: client and server share an RDMA device (fallback)
#   bench.sh server STACK           two guests (scripts/vm-pair.sh, guest srv): nfsd over STACK
#   bench.sh client STACK RUNTIME   two guests (guest cli): mount over STACK, run the workloads
#
# STACK: c (the kernel's rpcrdma.ko) or rs (rpcrdma_rs.ko; the client side gets the insmod
# parameters in RPCRDMA_RS_CLIENT_PARAMS, default none, the server side
# those in RPCRDMA_RS_SERVER_PARAMS). In one guest the same module serves both ends.
# RPCRDMA_DEV: the soft RDMA device, rxe (default) or siw.
set -u
. "$(dirname "$0")/../../tools/testing/selftests/rpcrdma/lib.sh"
RPCRDMA_RS_CLIENT_PARAMS=${RPCRDMA_RS_CLIENT_PARAMS-}
RPCRDMA_RS_SERVER_PARAMS=${RPCRDMA_RS_SERVER_PARAMS-}
dev=${RPCRDMA_DEV:-rxe}

error() { # error MESSAGE: report why this stack has no numbers, and stop
	python3 -c 'import json, sys; print(json.dumps({"error": sys.argv[1]}))' "$*"
	exit 1
}
# The last line of a command's output, for an error message, without the shell's "FILE: line
# N: echo: write error: " in front of the errno text.
last() { tail -n 1 | sed -e 's/^.*: line [0-9]*: //' -e 's/^echo: write error: //' | tr -d '\n'; }

job() { # job NAME fio-args...
	local name=$1 out; shift
	# A hung transport must not hang the whole benchmark: fio gets its runtime and the layout
	# of the file (256 MiB at ~10 MiB/s under TCG) plus a margin.
	out=$(timeout -s KILL $((runtime + 180)) fio --name="$name" --filename=$MNT/bench.dat \
		--size=256M --direct=1 --runtime="$runtime" --time_based --invalidate=0 \
		--output-format=json --output=/tmp/$name.json "$@" 2>&1) ||
		error "fio $name: $(echo "$out" | last)"
	python3 - "$name" /tmp/$name.json <<'PY'
import json, sys
name, path = sys.argv[1], sys.argv[2]
text = open(path).read()
# fio writes its warnings (e.g. a failed cache invalidation on NFS) ahead of the JSON.
j = json.loads(text[text.index("{"):])["jobs"][0]
out = {"workload": name}
for d in ("read", "write"):
    if j[d]["io_bytes"]:
        out["iops"] = round(j[d]["iops"])
        out["MiB/s"] = round(j[d]["bw_bytes"] / 1048576, 1)
        out["lat_us"] = round(j[d]["clat_ns"]["mean"] / 1000, 1)
print(json.dumps(out))
PY
}

# The four workloads, on one 256 MiB file (laid out once, by the first job).
workloads() {
	job randread-4k-qd16 --rw=randread --bs=4k --iodepth=16 --ioengine=libaio
	job seqread-1m --rw=read --bs=1M --iodepth=4 --ioengine=libaio
	job seqwrite-1m --rw=write --bs=1M --iodepth=4 --ioengine=libaio
	job synclat-4k --rw=randwrite --bs=4k --iodepth=1 --ioengine=psync --sync=1
}

mount_v3() {
	local out
	out=$(timeout -s KILL 120 mount -t nfs -o vers=3,proto=rdma,port=20049,nolock \
		$SRV_ADDR:$EXPORT $MNT 2>&1) || error "mount: $(echo "$out" | last | sed 's/^mount.nfs: //')"
}

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
	wait_file $EXPORT/ctl/done 3600 || { echo "server: client never finished"; exit 1; }
	nfsd_stop
	;;
client)
	stack=$2 runtime=$3
	pair_rdma_link_up $CLI_ADDR "$dev" >/dev/null || error "client: no $dev link"
	out=$(rpcrdma_transport_load "$stack" "$RPCRDMA_RS_CLIENT_PARAMS" 2>&1) ||
		error "client: loading $stack failed: $(echo "$out" | last)"
	modprobe nfs
	modprobe nfsv3
	mkdir -p $MNT
	pair_ctl_mount || error "control mount over TCP failed"
	# Whatever happens below, let the server go.
	# umount -i: no UMNT call to a server that may already be gone (it would hang).
	trap 'touch $PAIR_CTL/ctl/done; umount -l $MNT 2>/dev/null; umount -i -l $PAIR_CTL' EXIT
	wait_file $PAIR_CTL/ctl/ready 300 || error "server never got ready"
	state=$(cat $PAIR_CTL/ctl/ready)
	[ "$state" = ok ] || error "$state"
	mount_v3
	workloads
	;;
c|rs)
	# One guest: the same module serves and mounts, over one rxe device.
	stack=$1 runtime=$2
	out=$(rpcrdma_transport_load "$stack" "$RPCRDMA_RS_CLIENT_PARAMS" 2>&1) ||
		error "loading $stack failed: $(echo "$out" | last)"
	modprobe nfs
	rdma_link_up "$dev" >/dev/null && rdma_wait_active ${dev}0 || error "no $dev device"
	out=$(nfsd_start rdma 2>&1) || error "rdma listener failed: $(echo "$out" | last)"
	mount_v3
	workloads
	umount $MNT
	nfsd_stop
	;;
*)
	echo "usage: $0 STACK RUNTIME | server STACK | client STACK RUNTIME" >&2
	exit 2
	;;
esac
