#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Demo, in two guests (scripts/demo.sh): "demo.sh server" serves NFS over rxe with the C
# rpcrdma.ko; "demo.sh client" loads rpcrdma_rs.ko, mounts NFSv4.2 over RDMA through it, writes
# and reads back a file, and shows the checksums (client, mount, server) and the mountstats line.
set -eu
. "$(dirname "$0")/../../tools/testing/selftests/rpcrdma/lib.sh"

step() { printf '\n=== %s\n' "$*"; }

if [ "${1:?usage: $0 server|client}" = server ]; then
	pair_link_up $SRV_ADDR
	modprobe rpcrdma
	nfsd_start rdma
	echo "C server: $(grep rdma /proc/fs/nfsd/portlist) over $(rdma link show | cut -d' ' -f2 | tr '\n' ' ')"
	pair_wait_client_done
	echo "server : $(md5sum < $EXPORT/demo.bin)"
	exit 0
fi

step "rpcrdma_rs.ko: load and register"
pair_link_up $CLI_ADDR
modprobe sunrpc; modprobe nfsv4
rpcrdma_rs_load
dmesg | grep 'rpcrdma_rs: registered'
rdma link show

step "mount -o proto=rdma: NFSv4.2 over rpcrdma_rs to the C server at $SRV_ADDR"
for i in $(seq 1 120); do
	showmount -e $SRV_ADDR 2>/dev/null | grep -q "^$EXPORT " && break
	sleep 2
done
mkdir -p $MNT
for i in 1 2 3 4 5; do nfs_mount_rdma 4.2 && break; sleep 5; done
grep " $MNT " /proc/mounts
dmesg | grep 'rpcrdma_rs: connected' | tail -n 1
d=$MNT; [ -d $MNT$EXPORT ] && d=$MNT$EXPORT
head -c $((16 * 1048576)) /dev/urandom > /tmp/demo.bin
cp /tmp/demo.bin $d/demo.bin; sync; echo 3 > /proc/sys/vm/drop_caches
echo "source : $(md5sum < /tmp/demo.bin)"
echo "mount  : $(md5sum < $d/demo.bin)"
cmp /tmp/demo.bin $d/demo.bin && echo "checksums match"
grep 'xprt:' /proc/self/mountstats
umount $MNT
rmmod rpcrdma_rs && dmesg | grep 'rpcrdma_rs: unregistering'

# Let the server finish: check in over NFS/TCP.
mount -t nfs -o vers=3,proto=tcp,nolock,$PAIR_CTL_OPTS $SRV_ADDR:$EXPORT $MNT && touch $MNT/done && umount $MNT
