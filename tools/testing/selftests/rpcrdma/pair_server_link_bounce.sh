#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Our server's own link goes down with a client mounted. Guest "srv" serves NFSv3 over rxe
# through rpcrdma_rs.ko; guest "cli" mounts it with the kernel's C rpcrdma.ko. The server takes
# its link down and, while it is down, stops nfsd (`rpc.nfsd 0`), which closes the client's
# connection: its disconnect (a DREQ, a MAD on the port's GSI QP) cannot be sent on a down port,
# and over rxe one MAD sent then moves QP1 to the error state for good, after which no client
# can connect to this server again. The transport must defer that teardown to a work item (no
# nfsd thread waits for the port) and disconnect once the link is back. Then nfsd starts again,
# and the old mount (hard, NFSv3) and a new one must both read the data back by md5.
#
# The server prints the KTAP: the client mounted; `rpc.nfsd 0` returns with the link down; the
# teardown was deferred; once the link is up the deferred disconnect went out; the server's
# GSI QP is not in the error state; the old mount and a new mount read the data back (reported
# by the client through the NFS/TCP control mount); and after the client's umount every debugfs
# counter returns to zero and the module unloads with no RDMA object live.
#
# Run by scripts/vm-pair.sh as "pair_server_link_bounce.sh server|client".
set -u
. "$(dirname "$0")/lib.sh"

role=${1:?usage: $0 server|client}
SIZE=$((4 * 1048576 + 3))
MNT2=/tmp/mnt2

if [ "$role" = client ]; then
	# Diagnostics only ("#" lines): the server reports the test cases.
	say() { echo "# client: $*"; }
	pair_rdma_link_up $CLI_ADDR rxe || say "link up failed"
	modprobe rpcrdma
	modprobe nfsv3
	pair_ctl_mount || { say "control mount failed"; exit 1; }
	wait_file $PAIR_CTL/ready 300 || { say "server never ready"; exit 1; }
	mkdir -p $MNT $MNT2
	mnt() { # mnt DIR: mount the export over RDMA, a few attempts
		local i
		for i in $(seq 1 10); do
			timeout 120 mount -t nfs -o vers=3,proto=rdma,port=20049,nolock \
				$SRV_ADDR:$EXPORT "$1" 2>/tmp/mount.err && return 0
			sleep 3
		done
		sed 's/^/# client: /' /tmp/mount.err
		return 1
	}
	if mnt $MNT; then
		sum=$(timeout 300 md5sum < $MNT/data | cut -d' ' -f1)
		echo "mounted ${sum:-none}" > $PAIR_CTL/mounted.tmp
	else
		echo "failed" > $PAIR_CTL/mounted.tmp
	fi
	mv $PAIR_CTL/mounted.tmp $PAIR_CTL/mounted
	say "first mount: $(cat $PAIR_CTL/mounted)"
	# The server bounces its link and restarts nfsd meanwhile (the soft control mount fails
	# while nfsd is down: keep polling).
	wait_file $PAIR_CTL/bounced 600 || { say "server never bounced"; exit 1; }
	echo 3 > /proc/sys/vm/drop_caches
	old=$(timeout 300 md5sum < $MNT/data | cut -d' ' -f1)
	say "old mount: ${old:-no data}; $(mountstats_xprt $MNT)"
	new=none
	if mnt $MNT2; then
		new=$(timeout 300 md5sum < $MNT2/data | cut -d' ' -f1)
	fi
	say "new mount: ${new:-no data}"
	timeout 120 umount $MNT2
	timeout 120 umount $MNT || umount -l $MNT
	echo "old ${old:-none} new ${new:-none}" > $PAIR_CTL/result.tmp &&
		mv $PAIR_CTL/result.tmp $PAIR_CTL/result
	exit 0
fi

# Server.
ktap_print_header
ktap_set_plan 8
pair_rdma_link_up $SRV_ADDR rxe || ktap_exit_fail_msg "link or rxe0 did not come up"
ifname=$(pair_ifname)
mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug
dmesg -C
rpcrdma_rs_load || ktap_exit_fail_msg "cannot load rpcrdma_rs.ko"
mkdir -p $EXPORT
mount -t tmpfs -o size=256M tmpfs $EXPORT
head -c $SIZE /dev/urandom > $EXPORT/data
want=$(md5sum < $EXPORT/data | cut -d' ' -f1)
nfsd_start rdma || ktap_exit_fail_msg "nfsd has no rdma listener"
touch $EXPORT/ready

got=
wait_file $EXPORT/mounted 600 && got=$(cat $EXPORT/mounted)
[ "$got" = "mounted $want" ] && ktap_test_pass "the C client mounted NFSv3 over rpcrdma_rs and read the data" ||
	ktap_test_fail "the C client mounted NFSv3 over rpcrdma_rs and read the data (${got:-no report})"
ktap_print_msg "connections before: $(awk '$1 == "qps" { print $4 }' /sys/kernel/debug/rpcrdma_rs/counters) QPs"

# Link down, then close the client's connection (nfsd stops) while the port cannot send.
ip link set "$ifname" down
sleep 2
t0=$SECONDS
timeout -s KILL 60 rpc.nfsd 0
rc=$?
[ $rc = 0 ] && ktap_test_pass "rpc.nfsd 0 returns with the server's link down ($((SECONDS - t0)) s)" ||
	ktap_test_fail "rpc.nfsd 0 returns with the server's link down (exit $rc after $((SECONDS - t0)) s)"
dmesg_has "rpcrdma_rs: port down: the connection's teardown waits for it" &&
	ktap_test_pass "the connection's teardown is deferred until the port can send" ||
	ktap_test_fail "the connection's teardown is deferred until the port can send"
sleep 3
ip link set "$ifname" up
rdma_wait_active rxe0 || ktap_print_msg "rxe0 not ACTIVE again"
ok=0
for i in $(seq 1 40); do
	dmesg_has "rpcrdma_rs: port was down: disconnected after" && { ok=1; break; }
	sleep 1
done
dmesg | grep -E 'rpcrdma_rs: port' | sed 's/^/# /'
[ $ok = 1 ] && ! dmesg_has "rpcrdma_rs: port was down: disconnected after .* (still down" &&
	ktap_test_pass "the deferred disconnect goes out once the link is up" ||
	ktap_test_fail "the deferred disconnect goes out once the link is up"
# rxe's GSI QP (QP1) carries every connection's CM messages: it must not be in error.
qp1=$(rdma res show qp lqpn 1 2>/dev/null |
	awk '/ type GSI / { for (i = 1; i < NF; i++) if ($i == "state") print $(i + 1) }')
[ -n "$qp1" ] && [ "$qp1" != ERR ] && ktap_test_pass "the server's GSI QP is usable (state $qp1)" ||
	ktap_test_fail "the server's GSI QP is usable (state ${qp1:-not listed})"

# nfsd again; the client checks its old mount and a new one.
exportfs -ua
nfsd_start rdma || ktap_print_msg "nfsd restart failed"
touch $EXPORT/bounced
got=
wait_file $EXPORT/result 900 && got=$(cat $EXPORT/result)
ktap_print_msg "client: ${got:-no report}"
set -- $got
[ "${1:-}" = old ] && [ "${2:-}" = "$want" ] &&
	ktap_test_pass "the old mount reads the data back after the bounce" ||
	ktap_test_fail "the old mount reads the data back after the bounce"
[ "${3:-}" = new ] && [ "${4:-}" = "$want" ] &&
	ktap_test_pass "a new mount reads the data back after the bounce" ||
	ktap_test_fail "a new mount reads the data back after the bounce"

sleep 5
rpc.nfsd 0
exportfs -ua
rpcrdma_counters_zero 60 && rpcrdma_rs_unload &&
	dmesg_has "rpcrdma_rs: unregistering transports; rdma objects still live: 0$" &&
	ktap_test_pass "counters back to zero, rmmod rpcrdma_rs (still live: 0)" ||
	ktap_test_fail "counters back to zero, rmmod rpcrdma_rs (still live: 0)"
dmesg | grep -E 'rpcrdma_rs' | tail -20 | sed 's/^/# /'
ktap_finished
