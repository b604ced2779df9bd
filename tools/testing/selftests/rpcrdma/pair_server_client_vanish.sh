#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The client vanishes mid-transfer: our server transport (rpcrdma_rs.ko) serves NFSv4.2 in guest
# "srv"; in guest "cli" the kernel's C rpcrdma.ko mounts it and runs a large O_DIRECT write and a
# large O_DIRECT read at once (RDMA Reads and RDMA Writes of the server in flight), then the
# client guest resets itself with `echo b > /proc/sysrq-trigger`: no umount, no disconnect, no
# FIN. Over soft RoCE the server learns of it only when an RDMA operation to the dead peer runs
# out of retries, or at `rpc.nfsd 0`. RPCRDMA_VANISH_CLOSE=nfsd (the default): the server runs
# `rpc.nfsd 0` as soon as the client has reported its progress, the connection still up with
# RDMA operations to the dead peer pending; =server: it first waits (120 s at most) for the
# transport to notice and close the connection by itself (rxe only: siw's TCP stream gives up on
# a dead peer only after TCP's retransmission timeout, many minutes). RPCRDMA_DEV=rxe (default)
# or siw on both ends. Then it checks that `rpc.nfsd 0` returns promptly, that no nfsd thread is left, that every debugfs counter of the module falls back to
# zero, that `rdma res show` lists no object of ours, and that rmmod succeeds with no RDMA
# object live; the VM runner fails the run on any kernel backtrace.
#
# The verdict comes from the side that survives: the server prints the KTAP (the client's guest
# dies before it could report; scripts/run-tests.sh counts the KTAP of whichever side prints a
# KTAP header). The client reports its progress through the NFS/TCP control mount ($PAIR_CTL):
# "$PAIR_CTL/vanish" holds how far both transfers had got, written just before it dies.
#
# Run by scripts/vm-pair.sh as "pair_server_client_vanish.sh server|client".
set -u
. "$(dirname "$0")/lib.sh"

role=${1:?usage: $0 server|client}
# Large enough to be still in flight when the client dies (TCG moves a few MiB/s), small enough
# for the server's tmpfs.
SIZE_MB=${RPCRDMA_VANISH_MB:-256}
# Progress each transfer must have made (MiB) before the client vanishes.
PROGRESS_MB=4
COUNTERS=/sys/kernel/debug/rpcrdma_rs/counters
# Who ends the dead client's connection: nfsd (rpc.nfsd 0 as soon as the client has vanished,
# RDMA operations to it still pending) or server (the transport notices by itself when they
# run out of retries; rpc.nfsd 0 comes after).
CLOSE=${RPCRDMA_VANISH_CLOSE:-nfsd}
# Soft RDMA device on both ends: rxe (RoCE) or siw (iWARP, over TCP).
DEV=${RPCRDMA_DEV:-rxe}

if [ "$role" = client ]; then
	# Diagnostics only ("#" lines): the server reports the test cases.
	say() { echo "# client: $*"; }
	pair_rdma_link_up $CLI_ADDR $DEV || say "link up failed"
	modprobe rpcrdma
	modprobe nfsv4
	pair_ctl_mount || { say "control mount failed"; exit 1; }
	mkdir -p $MNT
	wait_file $PAIR_CTL/ready 300 || { say "server never ready"; exit 1; }
	ok=0
	for i in $(seq 1 10); do
		timeout 120 mount -t nfs -o vers=4.2,proto=rdma,port=20049 $SRV_ADDR:/ $MNT \
			2>/tmp/mount.err && { ok=1; break; }
		sleep 3
	done
	if [ $ok = 0 ]; then
		sed 's/^/# /' /tmp/mount.err
		echo "mount failed: $(cat /tmp/mount.err)" > $PAIR_CTL/vanish
		exit 1
	fi
	say "mounted: $(mountstats_xprt $MNT)"
	# Each direct I/O of 1 MiB is one NFS WRITE (a Read chunk: the server pulls it with RDMA
	# Reads) or READ (a Write chunk: the server pushes it with RDMA Writes).
	dd if=/dev/zero of=$MNT/w bs=1M count=$SIZE_MB oflag=direct 2>/tmp/dd-w.err &
	wpid=$!
	dd if=$MNT/r of=/dev/null bs=1M iflag=direct 2>/tmp/dd-r.err &
	rpid=$!
	# MiB moved by a dd: the file offset of its fd 1 (of=, the writer) or fd 0 (if=, the reader).
	moved() { awk '$1 == "pos:" { print int($2 / 1048576) }' /proc/$1/fdinfo/$2 2>/dev/null; }
	for i in $(seq 1 600); do
		w=$(moved $wpid 1) r=$(moved $rpid 0)
		[ "${w:-0}" -ge $PROGRESS_MB ] && [ "${r:-0}" -ge $PROGRESS_MB ] && break
		kill -0 $wpid 2>/dev/null || break
		kill -0 $rpid 2>/dev/null || break
		sleep 0.2
	done
	w=$(moved $wpid 1) r=$(moved $rpid 0)
	running=
	kill -0 $wpid 2>/dev/null && running="$running write"
	kill -0 $rpid 2>/dev/null && running="$running read"
	say "write ${w:-0} MiB, read ${r:-0} MiB of $SIZE_MB, running:${running:- none}"
	# One line for the server: "write W read R running: write read".
	echo "write ${w:-0} read ${r:-0} running:$running" > $PAIR_CTL/vanish.tmp &&
		mv $PAIR_CTL/vanish.tmp $PAIR_CTL/vanish
	say "vanishing now (sysrq b)"
	# Nothing more may reach the server: no umount, no disconnect, no sync of the mount.
	echo b > /proc/sysrq-trigger
	sleep 60
	say "still alive after sysrq b"
	exit 1
fi

# Server.
ktap_print_header
ktap_set_plan 7
pair_rdma_link_up $SRV_ADDR $DEV || ktap_exit_fail_msg "link or ${DEV}0 did not come up"
mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug
dmesg -C
rpcrdma_rs_load || ktap_exit_fail_msg "cannot load rpcrdma_rs.ko"
mkdir -p $EXPORT
mount -t tmpfs -o size=1200M tmpfs $EXPORT
dd if=/dev/zero of=$EXPORT/r bs=1M count=$SIZE_MB status=none
nfsd_start rdma || ktap_exit_fail_msg "nfsd has no rdma listener"
touch $EXPORT/ready
if wait_file $EXPORT/vanish 420; then
	state=$(cat $EXPORT/vanish)
	ktap_print_msg "client: $state; server has $(($(stat -c %s $EXPORT/w 2>/dev/null || echo 0) / 1048576)) MiB of w"
	set -- $state
	# "write W read R running: write read"
	if [ "${1:-}" = write ] && [ "${2:-0}" -ge $PROGRESS_MB ] && [ "${4:-0}" -ge $PROGRESS_MB ] &&
		[ "${*:5}" = "running: write read" ]; then
		ktap_test_pass "client vanished with a write and a read in flight"
	else
		ktap_test_fail "client vanished with a write and a read in flight"
	fi
else
	ktap_test_fail "client vanished with a write and a read in flight (it never reported)"
fi
live() { awk -v n="$1" '$1 == n { print $4 }' $COUNTERS; }
if [ "$CLOSE" = server ]; then
	# The server's RDMA operations to the dead peer run out of retries (seconds over rxe) and
	# the transport closes the connection by itself.
	t0=$SECONDS
	for i in $(seq 1 120); do
		[ "$(live qps)" = 0 ] && break
		sleep 1
	done
	[ "$(live qps)" = 0 ] &&
		ktap_test_pass "the server closes the dead client's connection by itself ($((SECONDS - t0)) s)" ||
		ktap_test_fail "the server closes the dead client's connection by itself (qps $(live qps) after 120 s)"
else
	# rpc.nfsd 0 at once, with the connection up and RDMA operations to the dead peer pending.
	if [ "$(live qps)" -gt 0 ]; then
		ktap_test_pass "the dead client's connection is still up for rpc.nfsd 0 (qps $(live qps))"
	else
		ktap_test_skip "the dead client's connection is still up for rpc.nfsd 0 (the server had closed it already)"
	fi
fi
ktap_print_msg "before rpc.nfsd 0: $(awk '$4 != 0 { printf "%s %s, ", $1, $4 }' $COUNTERS)"
# Our objects as rdma res show names them (the listeners' cm_ids at least), to show that the
# check after rpc.nfsd 0 would see them.
ours_before=$(for r in cm_id qp cq pd mr; do rdma res show $r; done 2>&1 | grep -c rpcrdma_rs)
dmesg | grep -E 'rpcrdma_rs' | sed 's/^/# /'
t0=$SECONDS
timeout -s KILL 180 rpc.nfsd 0
rc=$?
exportfs -ua
[ $rc = 0 ] && ktap_test_pass "rpc.nfsd 0 returns ($((SECONDS - t0)) s)" ||
	ktap_test_fail "rpc.nfsd 0 returns (exit $rc after $((SECONDS - t0)) s)"
threads=$(cat /proc/fs/nfsd/threads 2>/dev/null || echo 0)
if [ "$threads" = 0 ] && ! pgrep -x nfsd >/dev/null; then
	ktap_test_pass "no nfsd thread left"
else
	ktap_print_msg "threads $threads; $(pgrep -ax nfsd | tr '\n' ' ')"
	ktap_test_fail "no nfsd thread left"
fi
rpcrdma_counters_zero 60 && ktap_test_pass "every debugfs counter back to zero (cm_ids, QPs, MRs, DMA maps, contexts)" ||
	ktap_test_fail "every debugfs counter back to zero (cm_ids, QPs, MRs, DMA maps, contexts)"
res=$(for r in cm_id qp cq pd mr; do rdma res show $r || echo "rdma res show $r failed"; done 2>&1)
summary=$(rdma res show 2>&1)
echo "$summary" | sed 's/^/# rdma res: /'
# Fails closed: the tool must answer (its summary names the device), and must have listed
# objects of ours before.
if [ "$ours_before" -gt 0 ] && echo "$summary" | grep -qE "^[0-9]+: ${RPCRDMA_DEV:-rxe}0: " &&
	! echo "$res" | grep -qE 'rpcrdma|failed'; then
	ktap_test_pass "rdma res show lists no object of rpcrdma_rs ($ours_before before rpc.nfsd 0)"
else
	echo "$res" | grep rpcrdma | sed 's/^/# /'
	ktap_test_fail "rdma res show lists no object of rpcrdma_rs ($ours_before before rpc.nfsd 0)"
fi
rpcrdma_rs_unload &&
	dmesg_has "rpcrdma_rs: unregistering transports; rdma objects still live: 0$" &&
	ktap_test_pass "rmmod rpcrdma_rs (still live: 0), no rdma object live" ||
	{ dmesg | grep rpcrdma_rs | tail -5 | sed 's/^/# /'; ktap_test_fail "rmmod rpcrdma_rs (still live: 0), no rdma object live"; }
dmesg | grep -E 'rpcrdma_rs|nfsd' | tail -20 | sed 's/^/# /'
ktap_finished
