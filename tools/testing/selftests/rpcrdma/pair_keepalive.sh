#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Keep-alive (RPC-over-RDMA version 2, issue 14): how long a client takes to notice that its
# server is gone while the link stays up. Guest "srv" serves NFS over RDMA, guest "cli" mounts
# it and then leaves the mount idle; the server "blackholes" itself: it stops answering ARP
# (`arp off`) and takes another MAC address, so that frames to it are dropped by its NIC and its
# own frames go nowhere, with its link up (no port event tells either side anything). The
# client then polls its transport's state (sunrpc debugfs rpc_xprt/*/info, XPRT_CONNECTED)
# until it is no longer connected, and the time is printed. Once the server takes its address
# back, the mount must read the data back.
#
# Run by scripts/vm-pair.sh as "pair_keepalive.sh server" and "pair_keepalive.sh client", with
# the same environment in both:
#
#   RPCRDMA_SERVER=c|rs   transport nfsd uses (rs)
#   RPCRDMA_CLIENT=c|rs   transport the client mounts with (rs)
#   RPCRDMA_DEV=rxe|siw   soft RDMA device on the link, both sides (rxe)
#   RPCRDMA_MAX_VERSION   max_version of rpcrdma_rs.ko on both sides (2: keep-alive is a
#                         version 2 feature)
#   KEEPALIVE             the keepalive module parameter of rpcrdma_rs.ko, seconds (5)
#   NFS_VERS              NFS version of the mount (3: no lease renewal, so that only the
#                         transport can notice; 4.2 shows what the NFSv4 lease does for C)
#
# With our client the KTAP cases assert: the idle connection sends credit refreshes every
# KEEPALIVE seconds and receives the server's (when it is ours too), without being declared
# dead; the blackholed server is noticed within KEEPALIVE + 35 s (scaled by RPCRDMA_SLOW: a
# refresh's Send runs out of RDMA retries, 5 s over rxe here); the mount reads the data back once
# the server is back; every debugfs counter back to zero and rmmod with nothing live. With the C
# client the time is printed only (it has no keep-alive: idle, it notices nothing until an
# RPC's Send fails).
#
# Measured on 2026-11-26 (normal kernel, TCG, rxe, NFSv3): see Documentation/testing.md.
set -u
. "$(dirname "$0")/lib.sh"

RPCRDMA_SERVER=${RPCRDMA_SERVER:-rs}
RPCRDMA_CLIENT=${RPCRDMA_CLIENT:-rs}
RPCRDMA_DEV=${RPCRDMA_DEV:-rxe}
RPCRDMA_MAX_VERSION=${RPCRDMA_MAX_VERSION:-2}
KEEPALIVE=${KEEPALIVE:-5}
NFS_VERS=${NFS_VERS:-3}
RS_PARAMS="max_version=$RPCRDMA_MAX_VERSION keepalive=$KEEPALIVE"
CTL=$PAIR_CTL
SIZE=$((1048576 + 3))
# How long the server stays blackholed: what our client needs, or long enough to see whether
# the C client notices at all.
if [ "$RPCRDMA_CLIENT" = rs ]; then
	BLACKHOLE=$(((KEEPALIVE * 2 + 40) * RPCRDMA_SLOW))
	DETECT_MAX=$(((KEEPALIVE + 35) * RPCRDMA_SLOW))
else
	BLACKHOLE=$((180 * RPCRDMA_SLOW))
	DETECT_MAX=$((BLACKHOLE - 5))
fi

if [ "${1:-}" = server ]; then
	echo "server: transport $RPCRDMA_SERVER, device $RPCRDMA_DEV"
	pair_rdma_link_up $SRV_ADDR "$RPCRDMA_DEV" || { echo "server: no $RPCRDMA_DEV link"; exit 1; }
	mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug
	rpcrdma_transport_load "$RPCRDMA_SERVER" "$RS_PARAMS" ||
		{ echo "server: loading transport $RPCRDMA_SERVER failed"; exit 1; }
	nfsd_start rdma || { echo "server: nfsd has no rdma listener"; exit 1; }
	mkdir -p $EXPORT/ctl
	head -c $SIZE /dev/urandom > $EXPORT/data
	md5sum < $EXPORT/data | cut -d' ' -f1 > $EXPORT/ctl/ready
	rc=0
	if wait_file $EXPORT/ctl/blackhole $((900 * RPCRDMA_SLOW)); then
		ifname=$(pair_ifname)
		mac=$(cat /sys/class/net/$ifname/address)
		# ARP off first: the address change flushes the neighbours, which a NOARP device
		# then resolves to its own address.
		ip link set "$ifname" arp off && ip link set "$ifname" address 52:54:00:de:ad:01 ||
			{ echo "server: cannot blackhole $ifname"; rc=1; }
		echo "server: blackholed for $BLACKHOLE s (link $(cat /sys/class/net/$ifname/operstate))"
		sleep $BLACKHOLE
		ip link set "$ifname" address "$mac" && ip link set "$ifname" arp on ||
			{ echo "server: cannot restore $ifname"; rc=1; }
		echo "server: back"
		touch $EXPORT/ctl/back
	else
		echo "server: the client never asked for the blackhole"
		rc=1
	fi
	wait_file $EXPORT/ctl/bye $((900 * RPCRDMA_SLOW)) || echo "server: no bye from the client"
	if [ "$RPCRDMA_SERVER" = rs ]; then
		grep -E '^server_(refreshes_sent|keepalive_dead|conns_v2|ignored_v2) ' \
			/sys/kernel/debug/rpcrdma_rs/versions | sed 's/^/server: /'
	fi
	nfsd_stop
	if [ "$RPCRDMA_SERVER" = rs ]; then
		rpcrdma_counters_zero $((60 * RPCRDMA_SLOW)) >/dev/null && rpcrdma_rs_unload ||
			{ echo "server: counters not back to zero, or rmmod failed"; rc=1; }
		dmesg | grep 'rpcrdma_rs: ' | tail -n 12 | sed 's/^/server: /'
	fi
	exit $rc
fi
[ "${1:-}" = client ] || { echo "usage: $0 server|client"; exit 2; }

# ---- client side ----

rs=0
[ "$RPCRDMA_CLIENT" = rs ] && rs=1
# The mount reads the data; [ours: the idle keep-alive]; the blackhole noticed [ours]; the data
# after the server is back; the counters and rmmod.
plan=3
[ $rs = 1 ] && plan=5
ktap_print_header
ktap_set_plan $plan
ktap_print_msg "server $RPCRDMA_SERVER, client $RPCRDMA_CLIENT, device $RPCRDMA_DEV, NFSv$NFS_VERS, keepalive $KEEPALIVE s, blackhole $BLACKHOLE s"
pair_rdma_link_up $CLI_ADDR "$RPCRDMA_DEV" || ktap_exit_fail_msg "no $RPCRDMA_DEV link"
mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug
quiet rpcrdma_transport_load "$RPCRDMA_CLIENT" "$RS_PARAMS" ||
	ktap_exit_fail_msg "loading client transport $RPCRDMA_CLIENT failed"
dmesg -C
modprobe nfs
modprobe nfsv3
modprobe nfsv4
pair_ctl_mount || ktap_exit_fail_msg "control mount failed"
wait_file $CTL/ctl/ready $((300 * RPCRDMA_SLOW)) || ktap_exit_fail_msg "server never ready"
want=$(cat $CTL/ctl/ready)
VERSIONS=/sys/kernel/debug/rpcrdma_rs/versions
vget() { awk -v n="$1" '$1 == n { print $2 }' $VERSIONS 2>/dev/null; }

# Whether the mount's RDMA transport is connected (XPRT_CONNECTED, bit 1 of its state).
xprt_connected() {
	local f st
	for f in /sys/kernel/debug/sunrpc/rpc_xprt/*/info; do
		grep -q '^netid: rdma' "$f" 2>/dev/null && grep -q "^addr:  *$SRV_ADDR\$" "$f" || continue
		st=$(awk '$1 == "state:" { print $2 }' "$f")
		[ -n "$st" ] && [ $((st & 2)) != 0 ] && return 0
	done
	return 1
}

path=$EXPORT
[ "$NFS_VERS" = 3 ] || path=/
mkdir -p $MNT
got=
opts=vers=$NFS_VERS,proto=rdma,port=20049
[ "$NFS_VERS" = 3 ] && opts=$opts,nolock
if timeout $((120 * RPCRDMA_SLOW)) mount -t nfs -o $opts \
	$SRV_ADDR:$path $MNT 2>/tmp/mount.err; then
	got=$(timeout $((120 * RPCRDMA_SLOW)) md5sum < $MNT/data | cut -d' ' -f1)
else
	sed 's/^/# /' /tmp/mount.err
fi
[ -n "$got" ] && [ "$got" = "$want" ] && xprt_connected &&
	ktap_test_pass "NFSv$NFS_VERS mount over RDMA reads the data (md5), transport connected" ||
	ktap_test_fail "NFSv$NFS_VERS mount over RDMA reads the data (md5 ${got:-none}), transport connected"

if [ $rs = 1 ]; then
	# Idle: refreshes go out every KEEPALIVE seconds (and come in from our server), and the
	# connection stays up.
	s0=$(vget client_refreshes_sent) r0=$(vget client_refreshes) d0=$(vget client_keepalive_dead)
	sleep $((KEEPALIVE * 4 + 2))
	s1=$(vget client_refreshes_sent) r1=$(vget client_refreshes) d1=$(vget client_keepalive_dead)
	sent=$((${s1:-0} - ${s0:-0})) recvd=$((${r1:-0} - ${r0:-0}))
	need_recvd=0
	[ "$RPCRDMA_SERVER" = rs ] && need_recvd=1
	[ "$(vget client_conns_v2)" -ge 1 ] 2>/dev/null && [ $sent -ge 2 ] && [ $recvd -ge $need_recvd ] &&
		[ "${d1:-x}" = "${d0:-y}" ] && xprt_connected &&
		ktap_test_pass "idle for $((KEEPALIVE * 4 + 2)) s: $sent credit refreshes sent, $recvd received, connection up" ||
		ktap_test_fail "idle for $((KEEPALIVE * 4 + 2)) s: $sent credit refreshes sent, $recvd received (v2 conns $(vget client_conns_v2), dead ${d0:-?}->${d1:-?}), connection up"
fi

# The server blackholes itself (it polls for the request every second).
echo $BLACKHOLE > $CTL/ctl/blackhole.tmp && mv $CTL/ctl/blackhole.tmp $CTL/ctl/blackhole
t0=$SECONDS
detected=
xprt_connected || ktap_print_msg "the transport was not connected before the blackhole"
while [ $((SECONDS - t0)) -lt $DETECT_MAX ]; do
	xprt_connected || { detected=$((SECONDS - t0)); break; }
	sleep 1
done
if [ -n "$detected" ]; then
	ktap_print_msg "client $RPCRDMA_CLIENT (server $RPCRDMA_SERVER): the blackholed server noticed after $detected s"
else
	ktap_print_msg "client $RPCRDMA_CLIENT (server $RPCRDMA_SERVER): the blackholed server not noticed within $DETECT_MAX s"
fi
dmesg | grep -E 'rpcrdma(_rs)?: ' | grep -vE 'registered|registering' | tail -n 6 | sed 's/^/# /'
if [ $rs = 1 ]; then
	[ -n "$detected" ] && [ -n "$got" ] &&
		ktap_test_pass "the blackholed server is noticed after $detected s (keepalive $KEEPALIVE s)" ||
		ktap_test_fail "the blackholed server is noticed within $DETECT_MAX s (keepalive $KEEPALIVE s)"
fi

# The server comes back: the hard mount reads the data again.
wait_file $CTL/ctl/back $((BLACKHOLE + 120 * RPCRDMA_SLOW)) >/dev/null 2>&1 ||
	ktap_print_msg "no word from the server that it is back"
t1=$SECONDS
echo 3 > /proc/sys/vm/drop_caches
got=$(timeout $((180 * RPCRDMA_SLOW)) md5sum < $MNT/data | cut -d' ' -f1)
[ "$got" = "$want" ] &&
	ktap_test_pass "the server is back: the mount reads the data again (md5, $((SECONDS - t1)) s)" ||
	ktap_test_fail "the server is back: the mount reads the data again (md5 ${got:-none})"
timeout $((120 * RPCRDMA_SLOW)) umount $MNT || umount -l $MNT

if [ $rs = 1 ]; then
	grep -E '^client_(refreshes_sent|refreshes|keepalive_dead|conns_v2) ' $VERSIONS | sed 's/^/# /'
	rpcrdma_counters_zero $((60 * RPCRDMA_SLOW)) >/dev/null && rpcrdma_rs_unload &&
		ktap_test_pass "every debugfs counter back to zero, rmmod rpcrdma_rs (still live: 0)" ||
		ktap_test_fail "every debugfs counter back to zero, rmmod rpcrdma_rs (still live: 0)"
else
	ok=0
	for i in $(seq 1 30); do rmmod rpcrdma 2>/dev/null && { ok=1; break; }; sleep 1; done
	[ $ok = 1 ] && ktap_test_pass "rmmod rpcrdma" || ktap_test_fail "rmmod rpcrdma"
fi

touch $CTL/ctl/bye
umount -i $CTL
ktap_finished
