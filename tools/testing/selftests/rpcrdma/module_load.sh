#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rpcrdma_rs.ko loads, registers both transport classes, and unloads. A mount of a host with no
# RDMA listener reaches our client transport and fails cleanly (the connection is rejected);
# nfsd's rdma listeners are created by our server transport and released with nfsd.
set -u
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 9

modprobe sunrpc
modprobe nfs
modprobe nfsv4
dmesg -C
if [ -d /sys/module/rpcrdma ]; then
	ktap_exit_fail_msg "rpcrdma.ko is loaded: this test needs a fresh guest"
fi

if quiet rpcrdma_rs_load; then
	ktap_test_pass "insmod rpcrdma_rs.ko"
else
	ktap_exit_fail_msg "insmod $RPCRDMA_KO failed"
fi

if dmesg_has "rpcrdma_rs: registered client transport rdma/rdma6 (ident 256) and server transport rdma"; then
	ktap_test_pass "both transport classes registered"
else
	ktap_test_fail "both transport classes registered"
fi

# A client mount reaches our transport, whose connection to a host without an RDMA listener
# (this guest: nfsd is not running) is rejected; the mount fails without loading rpcrdma.ko.
quiet rdma_link_up rxe
mkdir -p $MNT
out=$(timeout 120 mount -t nfs -o vers=4.2,proto=rdma,port=20049,retry=0 $SRV_ADDR:/ $MNT 2>&1)
rc=$?
ktap_print_msg "mount: rc=$rc: $out"
dmesg | grep rpcrdma_rs: | sed 's/^/# /'
if [ $rc != 0 ] && echo "$out" | grep -qi 'connection refused' &&
	dmesg_has "rpcrdma_rs: connect to $SRV_ADDR failed: rejected, reason 8"; then
	ktap_test_pass "mount of a host without an RDMA listener fails: connection rejected"
else
	ktap_test_fail "mount of a host without an RDMA listener fails: connection rejected"
fi
if [ ! -d /sys/module/rpcrdma ]; then
	ktap_test_pass "the C rpcrdma.ko was not auto-loaded"
else
	ktap_test_fail "the C rpcrdma.ko was not auto-loaded"
fi

# nfsd reaches our svc class and gets rdma listeners (IPv4 and IPv6).
quiet nfsd_start
out=$( { echo "rdma 20049" > /proc/fs/nfsd/portlist; } 2>&1)
rc=$?
ktap_print_msg "portlist: rc=$rc: $out"
if [ $rc = 0 ] && dmesg_has "rpcrdma_rs: rdma listener on 0.0.0.0:20049"; then
	ktap_test_pass "nfsd rdma listener created by our transport"
else
	ktap_test_fail "nfsd rdma listener created by our transport"
fi
if grep -q '^rdma 20049' /proc/fs/nfsd/portlist; then
	ktap_test_pass "rdma 20049 listed in portlist"
else
	ktap_test_fail "rdma 20049 listed in portlist"
fi
nfsd_stop

# The failed mount's transport is destroyed asynchronously.
for i in $(seq 1 30); do
	refs=$(cat /sys/module/rpcrdma_rs/refcnt 2>/dev/null)
	[ "$refs" = 0 ] && break
	sleep 1
done
if [ "$refs" = 0 ]; then
	ktap_test_pass "no references held after the failed setups"
else
	ktap_test_fail "no references held after the failed setups (refcnt=$refs)"
fi

if rpcrdma_rs_unload && [ ! -d /sys/module/rpcrdma_rs ] &&
	dmesg_has "rpcrdma_rs: unregistering transports; rdma objects still live: 0$"; then
	ktap_test_pass "rmmod rpcrdma_rs (still live: 0)"
else
	ktap_test_fail "rmmod rpcrdma_rs (still live: 0)"
fi

# Registration is undone completely: loading again succeeds, several times.
ok=1
for i in 1 2 3; do
	quiet rpcrdma_rs_load && rpcrdma_rs_unload || ok=0
done
[ $ok = 1 ] && ktap_test_pass "3 more load/unload cycles" ||
	ktap_test_fail "3 more load/unload cycles"

ktap_finished
