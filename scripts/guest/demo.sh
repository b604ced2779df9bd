#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Demo, inside one guest (scripts/demo.sh): rpcrdma_rs.ko registers its transports, nfsd listens
# on "rdma 20049" through our server transport, NFSv4.2 is mounted over our client transport
# (looped back through rxe), a file goes through it with its checksums shown (source, mount,
# server), and the mountstats line and the RDMA object counters are printed.
set -eu
. "$(dirname "$0")/../../tools/testing/selftests/rpcrdma/lib.sh"

step() { printf '\n=== %s\n' "$*"; }

step "rpcrdma_rs.ko: load and register"
modprobe sunrpc; modprobe nfsv4
rpcrdma_rs_load
dmesg | grep 'rpcrdma_rs: registered'
rdma_link_up rxe >/dev/null && rdma_wait_active rxe0
rdma link show

step "nfsd over rpcrdma_rs's server transport"
nfsd_start rdma
grep rdma /proc/fs/nfsd/portlist

step "mount -o proto=rdma: NFSv4.2 over rpcrdma_rs's client transport"
nfs_mount_rdma 4.2
grep " $MNT " /proc/mounts
dmesg | grep 'rpcrdma_rs: connected' | tail -n 1
d=$MNT
[ -d $MNT$EXPORT ] && d=$MNT$EXPORT
head -c $((16 * 1048576)) /dev/urandom > /tmp/demo.bin
cp /tmp/demo.bin $d/demo.bin; sync; echo 3 > /proc/sys/vm/drop_caches
echo "source : $(md5sum < /tmp/demo.bin)"
echo "mount  : $(md5sum < $d/demo.bin)"
echo "server : $(md5sum < $EXPORT/demo.bin)"
cmp /tmp/demo.bin $d/demo.bin && echo "checksums match"
grep 'xprt:' /proc/self/mountstats

step "teardown: umount, rpc.nfsd 0, rmmod"
umount $MNT
nfsd_stop
# The transport is destroyed asynchronously after umount: wait for the module to be free.
for i in $(seq 1 60); do
	[ "$(cat /sys/module/rpcrdma_rs/refcnt)" = 0 ] && break
	sleep 1
done
mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug
echo "RDMA objects (allocated, freed, alive):"
cat /sys/kernel/debug/rpcrdma_rs/counters
rmmod rpcrdma_rs && dmesg | grep 'rpcrdma_rs: unregistering'
