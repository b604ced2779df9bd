#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Network namespaces: rpcrdma_rs makes its connections in the namespace of the RPC client (the
# mount's) and its listeners in the namespace of the service (nfsd's), as the C transports do,
# never in the initial namespace regardless. In one guest, over rxe:
#  1. nfsd serves in the initial namespace on veth0 (192.0.2.1, rxe0); a mount made from
#     namespace "cli" (veth1, 192.0.2.2, rxe1) reads and writes a file (md5 on both sides) and
#     the server logs the connection as coming from 192.0.2.2: from the initial namespace the
#     same address is local, so a connection made there comes from 192.0.2.1 over loopback.
#  2. nfsd serves in namespace "srv" only (veth2, 192.0.3.1, rxe2; veth3 192.0.3.2 and rxe3 in
#     the initial namespace): a mount of 192.0.3.1 from the initial namespace works, which it
#     cannot if the listener lives in the initial namespace (rdma_cm finds listeners by the
#     receiving device's namespace).
# Then every debugfs counter is back to zero and rmmod finds nothing live.
set -u
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 6

setup() {
	ip link set lo up &&
	ip netns add cli && ip netns add srv &&
	ip -n cli link set lo up && ip -n srv link set lo up &&
	ip link add veth0 type veth peer name veth1 netns cli &&
	ip addr add $SRV_ADDR/24 dev veth0 && ip link set veth0 up &&
	ip -n cli addr add $CLI_ADDR/24 dev veth1 && ip -n cli link set veth1 up &&
	ip link add veth3 type veth peer name veth2 netns srv &&
	ip addr add 192.0.3.2/24 dev veth3 && ip link set veth3 up &&
	ip -n srv addr add 192.0.3.1/24 dev veth2 && ip -n srv link set veth2 up &&
	modprobe rdma_rxe &&
	rdma link add rxe0 type rxe netdev veth0 && rdma link add rxe3 type rxe netdev veth3 &&
	ip netns exec cli rdma link add rxe1 type rxe netdev veth1 &&
	ip netns exec srv rdma link add rxe2 type rxe netdev veth2 &&
	rdma_wait_active rxe0 && rdma_wait_active rxe1 && rdma_wait_active rxe2 &&
	rdma_wait_active rxe3 &&
	rpcrdma_rs_load && nfsd_start rdma
}
dmesg -C
if quiet setup; then
	ktap_test_pass "setup: namespaces cli and srv, four rxe devices, nfsd on rdma 20049"
else
	rdma link show | sed 's/^/# /'
	ktap_exit_fail_msg "setup failed"
fi
head -c 1048579 /dev/urandom > /tmp/src
want=$(md5sum < /tmp/src)

# 1. The client in namespace cli.
if ip netns exec cli sh -c "mkdir -p $MNT &&
	timeout -s KILL 120 mount -t nfs -o vers=4.2,proto=rdma,port=20049 $SRV_ADDR:/ $MNT &&
	cp /tmp/src $MNT/from-cli && echo 3 > /proc/sys/vm/drop_caches &&
	[ \"\$(md5sum < $MNT/from-cli)\" = \"$want\" ] && umount $MNT" &&
	[ "$(md5sum < $EXPORT/from-cli)" = "$want" ]; then
	ktap_test_pass "a mount from namespace cli writes and reads back 1 MiB + 3 (md5 both sides)"
else
	ktap_test_fail "a mount from namespace cli writes and reads back 1 MiB + 3 (md5 both sides)"
fi
dmesg | grep 'rdma connection from' | sed 's/^/# /'
if dmesg | grep -q "rdma connection from $CLI_ADDR:"; then
	ktap_test_pass "the connection came from the client's namespace ($CLI_ADDR)"
else
	ktap_test_fail "the connection came from the client's namespace ($CLI_ADDR)"
fi
nfsd_stop

# 2. nfsd in namespace srv. Its state (the nfsd file system, rpcbind, mountd, the export)
# lives in that namespace's own mount namespace, so all of it runs in one shell there.
ip netns exec srv bash -c "
	. $RPCRDMA_SELFTEST_DIR/lib.sh
	pkill -x rpc.mountd; pkill -x rpcbind; sleep 1
	mount -t nfsd nfsd /proc/fs/nfsd && nfsd_start rdma && grep -q '^rdma 20049' /proc/fs/nfsd/portlist &&
		touch /tmp/srv-ready
	# Serve until the test is done.
	while [ ! -e /tmp/srv-done ]; do sleep 1; done
	cp $EXPORT/from-init /tmp/from-init.copy 2>/dev/null
	nfsd_stop
	touch /tmp/srv-stopped
" >/tmp/srv.log 2>&1 &
wait_file /tmp/srv-ready 60 || sed 's/^/# srv: /' /tmp/srv.log
mkdir -p $MNT
if timeout -s KILL 120 mount -t nfs -o vers=4.2,proto=rdma,port=20049 192.0.3.1:/ $MNT &&
	cp /tmp/src $MNT/from-init && echo 3 > /proc/sys/vm/drop_caches &&
	[ "$(md5sum < $MNT/from-init)" = "$want" ] && umount $MNT; then
	ok=1
else
	ok=0
fi
touch /tmp/srv-done
wait_file /tmp/srv-stopped 120
[ $ok = 1 ] && [ "$(md5sum < /tmp/from-init.copy 2>/dev/null)" = "$want" ] &&
	ktap_test_pass "nfsd in namespace srv serves a mount over rdma (md5 both sides)" ||
	ktap_test_fail "nfsd in namespace srv serves a mount over rdma (md5 both sides)"

rpcrdma_counters_zero 60 && ktap_test_pass "every debugfs counter back to zero" ||
	ktap_test_fail "every debugfs counter back to zero"
rpcrdma_rs_unload && ktap_test_pass "rmmod rpcrdma_rs (still live: 0)" ||
	ktap_test_fail "rmmod rpcrdma_rs (still live: 0)"
ktap_finished
