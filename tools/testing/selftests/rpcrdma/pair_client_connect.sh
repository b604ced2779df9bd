#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Our client transport against the C server, quickly. Guest "srv" (192.0.2.1) serves NFS over
# rxe with the C rpcrdma.ko; guest "cli" (192.0.2.2) loads rpcrdma_rs.ko and mounts NFSv3 over
# RDMA: the connection negotiates the C server's inline sizes (RFC 8797), a file written and
# read back keeps its checksum (the server checks it too), mountstats prints the C transport's
# 27 fields, and after umount every memory registration is gone and the module unloads with
# no RDMA object left. The full NFS matrix is pair_nfs.sh. Run by scripts/vm-pair.sh as
# "pair_client_connect.sh server" and "pair_client_connect.sh client"; the client prints KTAP,
# the server exits non-zero if the client never checked in or a checksum differs.
set -u
. "$(dirname "$0")/lib.sh"

SIZE=1048579

role=${1:?usage: $0 server|client}
if [ "$role" = server ]; then
	pair_link_up $SRV_ADDR
	modprobe rpcrdma
	nfsd_start rdma || exit 1
	echo "server ready"
	# The client checks in over NFS/TCP when it is done, leaving the checksum it computed.
	pair_wait_client_done || exit 1
	want=$(cat $EXPORT/done)
	got=$(md5sum < $EXPORT/file | cut -d' ' -f1)
	echo "server: file md5 $got, client says $want"
	[ -n "$want" ] && [ "$got" = "$want" ] || exit 1
	echo "server: ok"
	exit 0
fi

ktap_print_header
ktap_set_plan 7
pair_link_up $CLI_ADDR
modprobe sunrpc
modprobe nfs
modprobe nfsv3
dmesg -C
if quiet rpcrdma_rs_load; then
	ktap_test_pass "insmod rpcrdma_rs.ko"
else
	ktap_exit_fail_msg "insmod $RPCRDMA_KO failed"
fi

# Wait for the server's mountd; its rdma listener comes up right after.
for i in $(seq 1 120); do
	showmount -e $SRV_ADDR 2>/dev/null | grep -q "^$EXPORT " && break
	sleep 2
done
mkdir -p $MNT
mounted=0
for i in $(seq 1 5); do
	out=$(timeout 120 mount -t nfs -o vers=3,proto=rdma,port=20049,nolock \
		$SRV_ADDR:$EXPORT $MNT 2>&1) && { mounted=1; break; }
	ktap_print_msg "mount attempt $i: $out"
	sleep 5
done
[ $mounted = 1 ] && ktap_test_pass "mount -o proto=rdma (NFSv3) over rpcrdma_rs" ||
	ktap_exit_fail_msg "mount -o proto=rdma (NFSv3) over rpcrdma_rs failed"

# The C server advertises 4 KiB both ways and no Send With Invalidate (flags 0).
want="rpcrdma_rs: connected to $SRV_ADDR: inline send 4096 recv 4096"
dmesg_has "$want" && ktap_test_pass "connected with the C server's inline sizes" ||
	ktap_test_fail "connected with the C server's inline sizes"

head -c $SIZE /dev/urandom > /tmp/file
md5=$(md5sum < /tmp/file | cut -d' ' -f1)
cp /tmp/file $MNT/file && sync && echo 3 > /proc/sys/vm/drop_caches
got=$(md5sum < $MNT/file | cut -d' ' -f1)
[ "$got" = "$md5" ] && ktap_test_pass "a $SIZE-byte file reads back with its checksum" ||
	ktap_test_fail "a $SIZE-byte file reads back with its checksum ($got, want $md5)"

stats=$(grep -m1 'xprt:' /proc/self/mountstats)
ktap_print_msg "mountstats:$stats"
n=$(echo "$stats" | sed 's/.*xprt:[[:space:]]*rdma //' | wc -w)
[ "$n" = 27 ] && ktap_test_pass "mountstats xprt: rdma line has the C transport's 27 fields" ||
	ktap_test_fail "mountstats xprt: rdma line has the C transport's 27 fields (got $n)"

umount $MNT
counters=/sys/kernel/debug/rpcrdma_rs/counters
mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug
sed 's/^/# /' $counters
ok=0
for i in $(seq 1 30); do
	[ "$(awk '$1 == "mr_maps" { print $4 }' $counters)" = 0 ] &&
		[ "$(awk '$1 == "qps" { print $4 }' $counters)" = 0 ] && { ok=1; break; }
	sleep 1
done
[ $ok = 1 ] && ktap_test_pass "after umount: no registration, no QP left (debugfs counters)" ||
	ktap_test_fail "after umount: no registration, no QP left (debugfs counters)"

ok=0
for i in $(seq 1 30); do
	rpcrdma_rs_unload && { ok=1; break; }
	sleep 1
done
[ $ok = 1 ] && dmesg_has "rpcrdma_rs: unregistering transports; rdma objects still live: 0$" &&
	ktap_test_pass "rmmod rpcrdma_rs (still live: 0) with no RDMA object left" ||
	ktap_test_fail "rmmod rpcrdma_rs (still live: 0) with no RDMA object left"

# Check in with the server over NFS/TCP, so that it can stop.
quiet mount -t nfs -o vers=3,proto=tcp,nolock,$PAIR_CTL_OPTS $SRV_ADDR:$EXPORT $MNT && echo $md5 > $MNT/done
umount $MNT 2>/dev/null
ktap_finished
