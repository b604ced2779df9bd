#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The RDMA device goes away under a live mount of our client. Guest "srv" (192.0.2.1) serves
# NFS over rxe with the C rpcrdma.ko; guest "cli" mounts NFSv4.2 over rpcrdma_rs, reads a file,
# and deletes its rxe device while the read is in flight. Deleting the device must return
# promptly: the module's ib_client tells the connection first (its removal callback logs
# "device removal (ib_client)") and waits until the endpoint let go of the device. `umount -f`
# must not hang, the mount must come off once the reader is killed, the debugfs leak counters
# (removal notifications included) must be back at zero, and the module must unload with no
# RDMA object left. No oops or warning (scripts/vm.sh fails the run on any backtrace). Run by scripts/vm-pair.sh as
# "pair_client_device_removal.sh server|client"; the client prints KTAP.
set -u
. "$(dirname "$0")/lib.sh"

role=${1:?usage: $0 server|client}
if [ "$role" = server ]; then
	pair_link_up $SRV_ADDR
	modprobe rpcrdma
	nfsd_start rdma || exit 1
	head -c $((32 * 1048576)) /dev/urandom > $EXPORT/big
	echo "server ready"
	pair_wait_client_done || exit 1
	exit 0
fi

ktap_print_header
ktap_set_plan 9
pair_link_up $CLI_ADDR
modprobe sunrpc
modprobe nfsv4
quiet rpcrdma_rs_load || ktap_exit_fail_msg "insmod $RPCRDMA_KO failed"
for i in $(seq 1 120); do
	showmount -e $SRV_ADDR 2>/dev/null | grep -q "^$EXPORT " && break
	sleep 2
done
mkdir -p $MNT
mounted=0
for i in 1 2 3 4 5; do
	timeout 120 mount -t nfs -o vers=4.2,proto=rdma,port=20049 $SRV_ADDR:/ $MNT && { mounted=1; break; }
	sleep 5
done
[ $mounted = 1 ] && ktap_test_pass "mount NFSv4.2 over rpcrdma_rs" ||
	ktap_exit_fail_msg "mount NFSv4.2 over rpcrdma_rs failed"
d=$MNT
[ -e $MNT$EXPORT/big ] && d=$MNT$EXPORT

# Read in a loop, so RPCs are in flight when the device goes.
( while :; do cat $d/big > /dev/null; done ) &
reader=$!
sleep 5
counters=/sys/kernel/debug/rpcrdma_rs/counters
mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug
ktap_print_msg "before removal: $(awk '$1 == "removal_notifications" { print "removal notifications live " $4 }' $counters)"
t0=$(date +%s)
timeout 120 rdma link delete rxe0
rc=$?
secs=$(($(date +%s) - t0))
ktap_print_msg "rdma link delete rxe0: rc $rc after ${secs}s"
[ $rc = 0 ] && ktap_test_pass "rdma link delete rxe0 under a live mount returns" ||
	ktap_test_fail "rdma link delete rxe0 under a live mount returns (rc $rc)"
[ $rc = 0 ] && [ $secs -le 30 ] && ktap_test_pass "rdma link delete returns promptly (${secs}s)" ||
	ktap_test_fail "rdma link delete returns promptly (${secs}s, rc $rc)"
dmesg | grep -E 'rpcrdma_rs: (device removal|rxe0)' | sed 's/^/# /'
dmesg_has "rpcrdma_rs: device removal (ib_client): closing the connection to $SRV_ADDR" &&
	dmesg_has "rpcrdma_rs: rxe0 is being removed: waiting for [1-9][0-9]* connection" &&
	dmesg_has "rpcrdma_rs: rxe0: every connection let go of it" &&
	ktap_test_pass "the ib_client removal callback closed the connection" ||
	ktap_test_fail "the ib_client removal callback closed the connection"

# Not `mountpoint` or `ls`: they would wait on the hard mount.
timeout 120 umount -f $MNT &
upid=$!
for i in $(seq 1 20); do
	kill -0 $upid 2>/dev/null || break
	sleep 1
done
# Still running after 20 s: show where umount and the reader wait.
if kill -0 $upid 2>/dev/null; then
	for p in $(pgrep -f 'umount|cat '); do
		ktap_print_msg "pid $p: $(tr '\0' ' ' < /proc/$p/cmdline 2>/dev/null)"
		sed 's/^/#   /' /proc/$p/stack 2>/dev/null | head -n 12
	done
fi
wait $upid
rc=$?
ktap_print_msg "umount -f: rc $rc (busy while the reader holds the file)"
[ $rc != 124 ] && ktap_test_pass "umount -f does not hang" ||
	ktap_test_fail "umount -f does not hang"

kill -9 $reader 2>/dev/null
pkill -9 -x cat 2>/dev/null
wait 2>/dev/null
gone=0
for i in 1 2 3; do
	timeout 60 umount -f $MNT 2>/dev/null
	grep -q " $MNT " /proc/mounts || { gone=1; break; }
	sleep 2
done
[ $gone = 1 ] && ktap_test_pass "the mount comes off once the reader is killed" ||
	ktap_test_fail "the mount comes off once the reader is killed"

# When an RPC was pending as the device went, the NFS client outlives the mount: unmounting
# ends its session (DESTROY_SESSION, DESTROY_CLIENTID), and those calls retry, each connect
# failing at once ("address resolution -19") and paced 3 s apart by call_connect_status,
# until they time out (minutes with timeo=600; 14 on the debug kernel). The transport, and
# the objects it holds (its backchannel requests, "bc_rqsts"), live until then, as the C
# client's would. So wait, with a bound, until no transport holds the module, showing who
# keeps it, and only then require every counter back at zero.
held=1
for i in $(seq 1 900); do
	[ "$(cat /sys/module/rpcrdma_rs/refcnt 2>/dev/null)" = 0 ] && { held=0; break; }
	if [ $((i % 120)) = 0 ]; then
		ktap_print_msg "module refcount $(cat /sys/module/rpcrdma_rs/refcnt) after ${i}s; nfs clients: $(tail -n +2 /proc/fs/nfsfs/servers 2>/dev/null | wc -l); rpc tasks:"
		cat /sys/kernel/debug/sunrpc/rpc_clnt/*/tasks 2>/dev/null | head -n 8 | sed 's/^/#   /'
	fi
	sleep 1
done
ktap_print_msg "no transport holds the module after ${i}s (held: $held)"
ok=0
for i in $(seq 1 30); do
	[ "$(awk '$4 != 0' $counters | wc -l)" = 0 ] && grep -q '^removal_notifications ' $counters &&
		{ ok=1; break; }
	sleep 1
done
sed 's/^/# /' $counters
[ $ok = 1 ] && ktap_test_pass "no RDMA object or removal notification left (debugfs counters)" ||
	ktap_test_fail "no RDMA object or removal notification left (debugfs counters)"

ok=0
for i in $(seq 1 60); do
	rpcrdma_rs_unload && { ok=1; break; }
	sleep 1
done
dmesg | grep rpcrdma_rs: | tail -n 5 | sed 's/^/# /'
[ $ok = 1 ] && dmesg_has "rpcrdma_rs: unregistering transports; rdma objects still live: 0$" &&
	ktap_test_pass "rmmod rpcrdma_rs (still live: 0) with no RDMA object left" ||
	ktap_test_fail "rmmod rpcrdma_rs (still live: 0) with no RDMA object left"

# Check in with the server over NFS/TCP (the link itself is still up).
if quiet mount -t nfs -o vers=3,proto=tcp,nolock,$PAIR_CTL_OPTS $SRV_ADDR:$EXPORT $MNT && touch $MNT/done; then
	ktap_test_pass "checked in with the server over NFS/TCP"
else
	ktap_test_fail "checked in with the server over NFS/TCP"
fi
umount $MNT 2>/dev/null
ktap_finished
