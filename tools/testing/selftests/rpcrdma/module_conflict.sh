#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rpcrdma_rs.ko and the C rpcrdma.ko exclude each other cleanly, in both orders: the second one
# fails to load with a clear message, and the first one keeps working.
set -u
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 6

modprobe sunrpc
dmesg -C
quiet modprobe rpcrdma || ktap_exit_fail_msg "cannot load rpcrdma.ko"

out=$(rpcrdma_rs_load 2>&1)
rc=$?
ktap_print_msg "insmod beside rpcrdma.ko: rc=$rc: $out"
if [ $rc != 0 ] && dmesg_has "rpcrdma_rs: the rdma client transport is already registered (is rpcrdma.ko loaded?)"; then
	ktap_test_pass "insmod beside rpcrdma.ko fails with a clear message"
else
	ktap_test_fail "insmod beside rpcrdma.ko fails with a clear message"
fi
if [ ! -d /sys/module/rpcrdma_rs ]; then
	ktap_test_pass "nothing of rpcrdma_rs is left loaded"
else
	ktap_test_fail "nothing of rpcrdma_rs is left loaded"
fi

# The C module's classes are intact: nfsd listens over rdma through it, and it unloads.
quiet rdma_link_up rxe && rdma_wait_active rxe0
if quiet nfsd_start rdma && grep -q '^rdma 20049' /proc/fs/nfsd/portlist; then
	ktap_test_pass "rpcrdma.ko still serves rdma 20049"
else
	ktap_test_fail "rpcrdma.ko still serves rdma 20049"
fi
nfsd_stop
echo "-rdma 20049" > /proc/fs/nfsd/portlist 2>/dev/null

if quiet rmmod rpcrdma && quiet rpcrdma_rs_load; then
	ktap_test_pass "rpcrdma_rs loads once rpcrdma.ko is gone"
else
	ktap_test_fail "rpcrdma_rs loads once rpcrdma.ko is gone"
fi

# The other order: with ours loaded, the C module fails and ours still serves.
dmesg -C
if ! modprobe rpcrdma 2>/dev/null && [ ! -d /sys/module/rpcrdma ]; then
	ktap_test_pass "rpcrdma.ko fails to load beside rpcrdma_rs"
else
	ktap_test_fail "rpcrdma.ko fails to load beside rpcrdma_rs"
fi
out=$( { echo "rdma 20049" > /proc/fs/nfsd/portlist; } 2>&1)
rc=$?
listening=0
[ $rc = 0 ] && dmesg_has "rpcrdma_rs: rdma listener on 0.0.0.0:20049" && listening=1
# nfsd holds the listener (and a module reference) until it stops.
rpc.nfsd 0
unloaded=0
for i in $(seq 1 30); do
	rpcrdma_rs_unload && { unloaded=1; break; }
	sleep 1
done
if [ $listening = 1 ] && [ $unloaded = 1 ]; then
	ktap_test_pass "rpcrdma_rs still serves rdma 20049 and unloads after rpc.nfsd 0"
else
	ktap_print_msg "portlist: rc=$rc $out; unloaded=$unloaded"
	ktap_test_fail "rpcrdma_rs still serves rdma 20049 and unloads after rpc.nfsd 0"
fi

ktap_finished
