#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Demo, inside one guest: rpcrdma_rs.ko registers its transports (which refuse work cleanly until
# they are implemented), then the C rpcrdma.ko serves and mounts NFSv4.2 over rxe and a file
# goes through it with its checksum shown. Run by scripts/demo.sh.
set -eu
. "$(dirname "$0")/../../tools/testing/selftests/rpcrdma/lib.sh"

step() { printf '\n=== %s\n' "$*"; }

step "rpcrdma_rs.ko: load and register"
modprobe sunrpc; modprobe nfsv4
rpcrdma_rs_load
dmesg | grep 'rpcrdma_rs' | tail -n 2
rdma_link_up rxe >/dev/null && rdma_wait_active rxe0
rdma link show

step "rpcrdma_rs.ko: mount -o proto=rdma reaches our (not yet implemented) client transport"
mkdir -p $MNT
mount -t nfs -o vers=4.2,proto=rdma,port=20049 $SRV_ADDR:/ $MNT || true
dmesg | grep 'rpcrdma_rs: client' | tail -n 1
rmmod rpcrdma_rs && echo "rpcrdma_rs unloaded"

step "C rpcrdma.ko: NFSv4.2 over rxe, server and client in this guest"
modprobe rpcrdma
nfsd_start rdma
grep rdma /proc/fs/nfsd/portlist
nfs_mount_rdma 4.2
grep " $MNT " /proc/mounts
head -c $((16 * 1048576)) /dev/urandom > /tmp/demo.bin
cp /tmp/demo.bin $MNT/demo.bin; sync; echo 3 > /proc/sys/vm/drop_caches
echo "source : $(md5sum < /tmp/demo.bin)"
echo "mount  : $(md5sum < $MNT/demo.bin)"
echo "server : $(md5sum < $EXPORT/demo.bin)"
cmp /tmp/demo.bin $MNT/demo.bin && echo "checksums match"
grep 'xprt:' /proc/self/mountstats
umount $MNT
nfsd_stop
