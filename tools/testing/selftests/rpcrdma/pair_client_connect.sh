#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Our client transport connects to the C server. Guest "srv" (192.0.2.1) serves NFS over rxe
# with the C rpcrdma.ko; guest "cli" (192.0.2.2) loads rpcrdma_rs.ko with the development-only
# parameter experimental_client=1 and mounts over RDMA. There is no send path yet, so the mount
# must fail; before that our transport must have connected and negotiated the C server's inline
# sizes (RFC 8797), and afterwards the module must unload with no RDMA object left. Run by
# scripts/vm-pair.sh as "pair_client_connect.sh server" and "pair_client_connect.sh client";
# the client prints KTAP, the server exits non-zero if the client never checked in.
set -u
. "$(dirname "$0")/lib.sh"

role=${1:?usage: $0 server|client}
if [ "$role" = server ]; then
	pair_link_up $SRV_ADDR
	modprobe rpcrdma
	nfsd_start rdma || exit 1
	echo "server ready"
	# The client checks in over NFS/TCP when it is done.
	pair_wait_client_done || exit 1
	echo "server: ok: the client checked in after its RDMA connect test"
	exit 0
fi

ktap_print_header
ktap_set_plan 5
pair_link_up $CLI_ADDR
modprobe sunrpc
modprobe nfs
modprobe nfsv3
dmesg -C
if quiet rpcrdma_rs_load experimental_client=1; then
	ktap_test_pass "insmod rpcrdma_rs.ko experimental_client=1"
else
	ktap_exit_fail_msg "insmod $RPCRDMA_KO experimental_client=1 failed"
fi

# Wait for the server's mountd, then mount until our transport has connected once (the
# server's rdma listener comes up right after mountd). Every mount must fail: no send path.
for i in $(seq 1 120); do
	showmount -e $SRV_ADDR 2>/dev/null | grep -q "^$EXPORT " && break
	sleep 2
done
mkdir -p $MNT
failed=1
for i in $(seq 1 5); do
	out=$(timeout 60 mount -t nfs -o vers=3,proto=rdma,port=20049,soft,timeo=20,retrans=1,nolock \
		$SRV_ADDR:$EXPORT $MNT 2>&1)
	rc=$?
	ktap_print_msg "mount attempt $i: rc=$rc: $out"
	if [ $rc = 0 ]; then
		failed=0
		umount $MNT
	fi
	dmesg_has "rpcrdma_rs: connected to $SRV_ADDR:" && break
	sleep 5
done
dmesg | grep rpcrdma_rs | sed 's/^/# /'
[ $failed = 1 ] && ktap_test_pass "mount over rdma fails (no send path yet)" ||
	ktap_test_fail "mount over rdma fails (no send path yet)"

# The C server advertises 4 KiB both ways and no Send With Invalidate (flags 0).
want="rpcrdma_rs: connected to $SRV_ADDR: inline send 4096 recv 4096, remote invalidation no"
dmesg_has "$want" && ktap_test_pass "connected with the C server's inline sizes" ||
	ktap_test_fail "connected with the C server's inline sizes"

# The transport is destroyed asynchronously after the failed mount; give it a moment.
ok=0
for i in $(seq 1 30); do
	rmmod rpcrdma_rs 2>/dev/null && { ok=1; break; }
	sleep 1
done
[ $ok = 1 ] && ktap_test_pass "rmmod rpcrdma_rs" ||
	ktap_test_fail "rmmod rpcrdma_rs (refcnt $(cat /sys/module/rpcrdma_rs/refcnt 2>/dev/null))"
dmesg_has "rpcrdma_rs: unregistering transports; rdma objects still live: 0$" &&
	ktap_test_pass "no RDMA object left at unload" ||
	ktap_test_fail "no RDMA object left at unload"

# Check in with the server over NFS/TCP, so that it can stop.
quiet mount -t nfs -o vers=3,proto=tcp,nolock $SRV_ADDR:$EXPORT $MNT && touch $MNT/done
umount $MNT 2>/dev/null
ktap_finished
