#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The RDMA device goes away under both ends of rpcrdma_rs, in one guest: nfsd serves over our
# server transport and an NFSv3 mount goes over our client transport, looped back through rxe.
# While a read is in flight the rxe device is deleted: `rdma link delete` must return promptly,
# after the module's ib_client told both connections (the client's and the server's removal
# handlers log "device removal (ib_client)"); the mount (soft) must come off, and after
# `rpc.nfsd 0` every debugfs counter, removal notifications included, is back to zero and
# the module unloads. No oops or warning (scripts/vm.sh fails the run on any backtrace).
set -u
. "$(dirname "$0")/lib.sh"

COUNTERS=/sys/kernel/debug/rpcrdma_rs/counters

ktap_print_header
ktap_set_plan 7

modprobe sunrpc
modprobe nfsv3
if quiet rpcrdma_rs_load && quiet rdma_link_up rxe && rdma_wait_active rxe0; then
	ktap_test_pass "rpcrdma_rs.ko loaded, rxe up"
else
	ktap_exit_fail_msg "setup failed"
fi
mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug
quiet nfsd_start rdma && grep -q '^rdma 20049' /proc/fs/nfsd/portlist ||
	ktap_exit_fail_msg "nfsd rdma listener failed"
head -c $((32 * 1048576)) /dev/urandom > $EXPORT/big
mkdir -p $MNT
if timeout 120 mount -t nfs -o vers=3,proto=rdma,port=20049,soft,timeo=50,retrans=2 \
	$SRV_ADDR:$EXPORT $MNT; then
	ktap_test_pass "NFSv3 mount over rpcrdma_rs (client and server)"
else
	ktap_exit_fail_msg "NFSv3 mount over rpcrdma_rs failed"
fi

( while :; do echo 3 > /proc/sys/vm/drop_caches; cat $MNT/big > /dev/null; done ) 2>/dev/null &
reader=$!
sleep 5
ktap_print_msg "before removal: $(awk '$1 == "removal_notifications" { print "removal notifications live " $4 }' $COUNTERS)"
t0=$(date +%s)
timeout 120 rdma link delete rxe0
rc=$?
secs=$(($(date +%s) - t0))
ktap_print_msg "rdma link delete rxe0: rc $rc after ${secs}s"
[ $rc = 0 ] && [ $secs -le 30 ] &&
	ktap_test_pass "rdma link delete under both ends returns promptly (${secs}s)" ||
	ktap_test_fail "rdma link delete under both ends returns promptly (rc $rc, ${secs}s)"
dmesg | grep -E 'rpcrdma_rs: (device removal|rxe0)' | sed 's/^/# /'
dmesg_has "rpcrdma_rs: device removal (ib_client): closing the connection to $SRV_ADDR" &&
	dmesg_has "rpcrdma_rs: device removal (ib_client): closing the connection$" &&
	dmesg_has "rpcrdma_rs: rxe0: every connection let go of it" &&
	ktap_test_pass "the ib_client closed the client's and the server's connection" ||
	ktap_test_fail "the ib_client closed the client's and the server's connection"

kill -9 $reader 2>/dev/null
pkill -9 -x cat 2>/dev/null
wait 2>/dev/null
gone=0
for i in $(seq 1 10); do
	timeout 60 umount -f $MNT 2>/dev/null
	grep -q " $MNT " /proc/mounts || { gone=1; break; }
	sleep 3
done
[ $gone = 1 ] && ktap_test_pass "the soft mount comes off" ||
	ktap_test_fail "the soft mount comes off"

quiet rpc.nfsd 0
rpcrdma_counters_zero 60 && ktap_test_pass "every debugfs counter back to zero, removal notifications included" ||
	ktap_test_fail "every debugfs counter back to zero, removal notifications included"

ok=0
for i in $(seq 1 360); do
	rpcrdma_rs_unload && { ok=1; break; }
	[ $((i % 60)) = 0 ] && ktap_print_msg "rmmod: module refcount $(cat /sys/module/rpcrdma_rs/refcnt 2>/dev/null) after ${i}s"
	sleep 1
done
[ $ok = 1 ] && ktap_test_pass "rmmod rpcrdma_rs (still live: 0)" || ktap_test_fail "rmmod rpcrdma_rs (still live: 0)"
ktap_finished
