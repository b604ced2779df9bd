#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Benchmark workloads on an NFS-over-RDMA mount, inside one guest (server and client share an
# rxe device). Prints one JSON object per workload on stdout, for scripts/bench.sh.
#   bench.sh STACK RUNTIME      STACK: c (rpcrdma.ko both ends); more stacks come with ours.
set -eu
. "$(dirname "$0")/../../tools/testing/selftests/rpcrdma/lib.sh"
stack=$1 runtime=$2

case $stack in
c) modprobe rpcrdma ;;
*) echo "unknown stack $stack" >&2; exit 2 ;;
esac
modprobe nfs
rdma_link_up rxe >/dev/null && rdma_wait_active rxe0
nfsd_start rdma
nfs_mount_rdma 3

job() { # job NAME fio-args...
	local name=$1; shift
	fio --name="$name" --directory=$MNT --size=256M --direct=1 --runtime="$runtime" \
		--time_based --invalidate=0 --output-format=json --output=/tmp/$name.json "$@"
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

job randread-4k-qd16 --rw=randread --bs=4k --iodepth=16 --ioengine=libaio
job seqread-1m --rw=read --bs=1M --iodepth=4 --ioengine=libaio
job seqwrite-1m --rw=write --bs=1M --iodepth=4 --ioengine=libaio
job synclat-4k --rw=randwrite --bs=4k --iodepth=1 --ioengine=psync --sync=1
umount $MNT
nfsd_stop
