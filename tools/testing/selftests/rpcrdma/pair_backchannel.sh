#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The RFC 8167 backchannel of the client transport, over two guests: guest "srv" (192.0.2.1)
# serves a tmpfs with nfsd over RDMA, guest "cli" (192.0.2.2) mounts it over RDMA with NFSv4.1
# and then NFSv4.2, and the server's callbacks travel back over that connection. Run by
# scripts/vm-pair.sh as "pair_backchannel.sh server" and "pair_backchannel.sh client", with the
# same environment in both:
#
#   RPCRDMA_SERVER=c|rs   transport nfsd uses: the kernel's rpcrdma.ko, or rpcrdma_rs.ko (c)
#   RPCRDMA_CLIENT=c|rs   transport the client mounts with (rs)
#   RPCRDMA_DEV=rxe|siw   soft RDMA device on the link, both sides (rxe)
#   NFS_VERSIONS          versions to mount, in order ("4.1 4.2")
#   BC_RECONNECT          1: after the last version's recall, force a reconnect (sunrpc fault
#                         injection) and do it all again on the new connection (1)
#   RPCRDMA_MAX_VERSION   1 (default) or 2: max_version of rpcrdma_rs.ko on both sides. With 2
#                         and ours on both ends the connections settle on RPC-over-RDMA version
#                         2 and the backward messages are framed in version 2: the backchannel
#                         counters' check also wants the client's debugfs rpcrdma_rs/versions to
#                         show version 2 connections and backward Calls received in version 2
#
# Per version: mount over RDMA; the server's /proc/fs/nfsd/clients/*/info shows the client's
# callback state UP (nfsd's CB_NULL probe was answered over our backchannel); the client opens
# a file for reading and holds it, and the server's clients/*/states shows it a delegation;
# then a second client, an NFSv4.2 mount over TCP in the server guest itself, overwrites the
# file: nfsd recalls the delegation (CB_RECALL over the backchannel), the client returns it,
# the write goes through, the callback state is still UP and the delegation is gone from the
# client's states (a recall left unanswered would have marked the callback path down and
# revoked it); the first client reads the second one's data back by md5. With BC_RECONNECT
# the last version then drops its connection and, once the NFS client has bound its session
# to the new one (BIND_CONN_TO_SESSION), passes the same checks again.
# With our client: the backchannel counters (debugfs rpcrdma_rs/backchannel) show the calls
# served and replies sent, and nothing dropped; after umount every debugfs object counter
# (backward requests included) is back to zero and rmmod finds nothing live.
#
# Handshake: the client mounts the export over NFSv3/TCP at $CTL (pair_ctl_mount) and asks the
# server for each step by writing ctl/req.N ("cb V", "deleg V FILE", "recall V FILE" or
# "bye"); the server answers in ctl/res.N: "ok ..." or "not ok ...".
set -u
. "$(dirname "$0")/lib.sh"

RPCRDMA_SERVER=${RPCRDMA_SERVER:-c}
RPCRDMA_CLIENT=${RPCRDMA_CLIENT:-rs}
RPCRDMA_DEV=${RPCRDMA_DEV:-rxe}
NFS_VERSIONS=${NFS_VERSIONS:-4.1 4.2}
NFS_VERSIONS=${NFS_VERSIONS//,/ }
BC_RECONNECT=${BC_RECONNECT:-1}
RPCRDMA_MAX_VERSION=${RPCRDMA_MAX_VERSION:-1}
RS_PARAMS=
[ "$RPCRDMA_MAX_VERSION" = 1 ] || RS_PARAMS="max_version=$RPCRDMA_MAX_VERSION"
CTL=$PAIR_CTL
# A step through the RDMA mount that takes longer is a hung transport.
OP_TIMEOUT=$((120 * RPCRDMA_SLOW))
# How long the server waits for a state to show (callback UP, a delegation).
STATE_WAIT=$((60 * RPCRDMA_SLOW))
DELEG_WAIT=$((15 * RPCRDMA_SLOW))
# Opens the client tries for a delegation: nfsd grants none while in its grace period, or for a
# while after a conflict on the file.
DELEG_TRIES=4
SIZE=$((256 * 1024))

# ---- server side ----

# The clients/ directory of the RDMA client of minor version $1 (192.0.2.2, confirmed).
client_dir() {
	local d
	for d in /proc/fs/nfsd/clients/*; do
		[ -r "$d/info" ] || continue
		grep -q "^address: \"$CLI_ADDR:" "$d/info" &&
			grep -q "^minor version: $1\$" "$d/info" &&
			grep -q '^status: confirmed' "$d/info" && { echo "$d"; return 0; }
	done
	return 1
}

cb_state() { sed -n 's/^callback state: //p' "$1/info"; }

# Delegations the client of $1 holds on file $2 (the states file names it).
delegs() { grep 'type: deleg' "$1/states" 2>/dev/null | grep -cF "/$2\""; }

# "cb V": wait until the callback state of the version-V client is UP.
srv_cb() {
	local minor=${1#4.} i d= st=
	for i in $(seq 1 "$STATE_WAIT"); do
		d=$(client_dir "$minor") && st=$(cb_state "$d")
		[ "$st" = UP ] && { echo "ok callback state UP after ${i}s ($d)"; return; }
		sleep 1
	done
	echo "not ok callback state ${st:-(no client)} after ${STATE_WAIT}s"
	[ -z "$d" ] || sed 's/^/  /' "$d/info"
}

# "deleg V FILE": wait until the version-V client holds a delegation on FILE.
srv_deleg() {
	local minor=${1#4.} i d=
	for i in $(seq 1 "$DELEG_WAIT"); do
		d=$(client_dir "$minor") && [ "$(delegs "$d" "$2")" -gt 0 ] && {
			echo "ok $(grep 'type: deleg' "$d/states" | grep -F "/$2\"" | head -n 1)"; return; }
		sleep 1
	done
	echo "not ok no delegation on $2 after ${DELEG_WAIT}s"
	[ -z "$d" ] || sed 's/^/  /' "$d/states"
}

# "recall V FILE": overwrite FILE through a second client (NFSv4.2 over TCP, here), which
# recalls the version-V client's delegation; then the callback state must still be UP and the
# delegation gone. Answers with the md5 of the new content.
srv_recall() {
	local minor=${1#4.} d rc=0 start secs st n sum rtt
	d=$(client_dir "$minor") || { echo "not ok no client of version $1"; return; }
	head -c $SIZE /dev/urandom > /tmp/new
	sum=$(md5sum < /tmp/new | cut -d' ' -f1)
	cb_trace_start || echo "  (no tracefs: the callback round trip is not measured)" >&2
	start=$SECONDS
	timeout -s KILL $((180 * RPCRDMA_SLOW)) cp /tmp/new "$MNT2/$2" || rc=$?
	secs=$((SECONDS - start))
	[ $rc = 0 ] || { echo "not ok the second client's write failed ($rc, ${secs}s)"; return; }
	# The delegation returns right after the recall; give the state a moment to settle.
	for i in $(seq 1 10); do
		n=$(delegs "$d" "$2")
		[ "$n" = 0 ] && break
		sleep 1
	done
	st=$(cb_state "$d")
	rtt=$(cb_trace_rtt $CLI_ADDR)
	if [ "$st" = UP ] && [ "$n" = 0 ]; then
		echo "ok $sum recalled and returned: the second client's write took ${secs}s, callback state UP, callback round trip ${rtt:-?} us"
	else
		echo "not ok $sum after the write (${secs}s): callback state $st, $n delegation(s) on $2"
		sed 's/^/  /' "$d/info"
	fi
}

if [ "${1:-}" = server ]; then
	echo "server: transport $RPCRDMA_SERVER, device $RPCRDMA_DEV"
	pair_rdma_link_up $SRV_ADDR "$RPCRDMA_DEV" || { echo "server: no $RPCRDMA_DEV link"; exit 1; }
	rpcrdma_transport_load "$RPCRDMA_SERVER" "$RS_PARAMS" ||
		echo "server: loading transport $RPCRDMA_SERVER failed"
	rdma_state=ok
	out=$(nfsd_start rdma 2>&1) ||
		rdma_state="failed: $(echo "$out" | tail -n 1)"
	modprobe nfsv4
	# No delegation is granted during the grace period (nfsv4gracetime, 10 s in nfsd_start).
	sleep 12
	mkdir -p $EXPORT/ctl
	for v in $NFS_VERSIONS; do
		head -c $SIZE /dev/urandom > $EXPORT/f$v
		head -c $SIZE /dev/urandom > $EXPORT/f$v-again
	done
	# The second client, over TCP to this nfsd (the pseudo-root is the export).
	MNT2=/tmp/mnt2
	mkdir -p $MNT2
	mount -t nfs -o vers=4.2,proto=tcp $SRV_ADDR:/ $MNT2 ||
		rdma_state="$rdma_state; the second client's TCP mount failed"
	echo "rdma listener $rdma_state" > $EXPORT/ctl/ready
	echo "server ready: rdma listener $rdma_state"
	n=0 rc=0
	while wait_file $EXPORT/ctl/req.$n $((1200 * RPCRDMA_SLOW)); do
		read -r cmd a b < $EXPORT/ctl/req.$n
		case $cmd in
		cb) res=$(srv_cb "$a") ;;
		deleg) res=$(srv_deleg "$a" "$b") ;;
		recall) res=$(srv_recall "$a" "$b") ;;
		bye) break ;;
		*) res="not ok unknown request $cmd" ;;
		esac
		echo "server: $cmd $a $b: $res"
		# (The client opens the file again when no delegation came: its verdict counts.)
		case $cmd/$res in deleg/*) ;; */"not ok"*) rc=1 ;; esac
		echo "$res" > $EXPORT/ctl/res.tmp && mv $EXPORT/ctl/res.tmp $EXPORT/ctl/res.$n
		n=$((n + 1))
	done
	umount $MNT2
	nfsd_stop
	[ "$rdma_state" = ok ] || rc=1
	exit $rc
fi
[ "${1:-}" = client ] || { echo "usage: $0 server|client"; exit 2; }

# ---- client side ----

nvers=$(echo $NFS_VERSIONS | wc -w)
rs=0
[ "$RPCRDMA_CLIENT" = rs ] && rs=1
# Per version: mount, callback UP, delegation, recall, data, umount (6); after a reconnect 4
# more; with our client the backchannel counters (1) and the object counters (1); rmmod (1).
plan=$((nvers * 6 + 1))
[ "$BC_RECONNECT" = 1 ] && plan=$((plan + 4))
[ $rs = 1 ] && plan=$((plan + 2))
ktap_print_header
ktap_set_plan $plan
ktap_print_msg "server $RPCRDMA_SERVER, client $RPCRDMA_CLIENT, device $RPCRDMA_DEV, NFS $NFS_VERSIONS"
pair_rdma_link_up $CLI_ADDR "$RPCRDMA_DEV" || ktap_exit_fail_msg "no $RPCRDMA_DEV link"
quiet rpcrdma_transport_load "$RPCRDMA_CLIENT" "$RS_PARAMS" ||
	ktap_exit_fail_msg "loading client transport $RPCRDMA_CLIENT failed"
dmesg -C
modprobe nfs
modprobe nfsv3
modprobe nfsv4
mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
BC=/sys/kernel/debug/rpcrdma_rs/backchannel
mkdir -p $MNT
pair_ctl_mount || ktap_exit_fail_msg "control mount over TCP failed"
wait_file $CTL/ctl/ready $((120 * RPCRDMA_SLOW)) || ktap_exit_fail_msg "server never got ready"
ktap_print_msg "server: $(cat $CTL/ctl/ready)"

# Ask the server for a step; prints its answer (empty if none came). Called in command
# substitutions (subshells): the request number lives in a file.
echo 0 > /tmp/req
ask() {
	local req
	req=$(cat /tmp/req)
	echo $((req + 1)) > /tmp/req
	echo "$*" > $CTL/ctl/req.tmp && mv $CTL/ctl/req.tmp $CTL/ctl/req.$req
	wait_file $CTL/ctl/res.$req $((400 * RPCRDMA_SLOW)) && cat $CTL/ctl/res.$req
}
# A case from the server's answer $2 to step $1.
verdict() {
	local first
	first=$(echo "$2" | head -n 1)
	echo "$2" | tail -n +2 | sed 's/^/# /'
	case $first in
	"ok "*) ktap_test_pass "$1 (server: ${first#ok })"; return 0 ;;
	"") ktap_test_fail "$1 (no answer from the server)"; return 1 ;;
	*) ktap_test_fail "$1 (server: ${first#not ok })"; return 1 ;;
	esac
}
t() { timeout -s KILL "$OP_TIMEOUT" "$@"; }

# One delegation's life on file $2 of the version-$1 mount, cases named with $3: the callback
# path is UP, a read delegation is granted to an open, a second client's write recalls it, and
# the new data reads back.
holder=
deleg_cycle() {
	local v=$1 f=$2 what=$3 res sum got i
	verdict "$what: callback state UP" "$(ask cb "$v")"
	for try in $(seq 1 $DELEG_TRIES); do
		# Hold the file open for reading (a read delegation is granted at OPEN).
		(exec 3<"$MNT/$f"; exec sleep 1000) &
		holder=$!
		for i in $(seq 1 $OP_TIMEOUT); do
			[ -e /proc/$holder/fd/3 ] && break
			sleep 1
		done
		t md5sum "$MNT/$f" > /dev/null
		res=$(ask deleg "$v" "$f")
		case $res in "ok "*) break ;; esac
		[ $try = $DELEG_TRIES ] && break
		ktap_print_msg "$what: no delegation at open $try, opening again"
		kill $holder 2>/dev/null
		wait $holder 2>/dev/null
	done
	verdict "$what: read delegation granted (open $try)" "$res"
	res=$(ask recall "$v" "$f")
	verdict "$what: a second client's write recalls it, returned" "$res"
	kill $holder 2>/dev/null
	wait $holder 2>/dev/null
	sum=$(echo "$res" | head -n 1 | awk '$1 == "ok" { print $2 }')
	echo 3 > /proc/sys/vm/drop_caches
	got=$(t md5sum "$MNT/$f" | cut -d' ' -f1)
	[ -n "$sum" ] && [ "$got" = "$sum" ] &&
		ktap_test_pass "$what: the second client's data reads back (md5)" ||
		ktap_test_fail "$what: the second client's data reads back (md5 ${got:-none}, want ${sum:-unknown})"
}

[ $rs = 1 ] && bc0=$(cat $BC 2>/dev/null)
V=/sys/kernel/debug/rpcrdma_rs/versions
[ $rs = 1 ] && v0=$(cat $V 2>/dev/null)
last=${NFS_VERSIONS##* }
for v in $NFS_VERSIONS; do
	if ! out=$(t mount -t nfs -o vers=$v,proto=rdma,port=20049,retry=0 $SRV_ADDR:/ $MNT 2>&1); then
		ktap_print_msg "$out"
		dmesg -c | tail -n 20 | sed 's/^/# /'
		ktap_test_fail "v$v: mount over rdma"
		for c in "callback state UP" "read delegation granted" \
			"a second client's write recalls it, returned" \
			"the second client's data reads back (md5)" "umount"; do
			ktap_test_fail "v$v: $c"
		done
		if [ "$v" = "$last" ] && [ "$BC_RECONNECT" = 1 ]; then
			for c in "callback state UP" "read delegation granted" \
				"a second client's write recalls it, returned" \
				"the second client's data reads back (md5)"; do
				ktap_test_fail "v$v after a reconnect: $c"
			done
		fi
		continue
	fi
	ktap_test_pass "v$v: mount over rdma ($RPCRDMA_CLIENT client, $RPCRDMA_SERVER server, $RPCRDMA_DEV)"
	deleg_cycle "$v" "f$v" "v$v"
	if [ "$v" = "$last" ] && [ "$BC_RECONNECT" = 1 ]; then
		# sunrpc fault injection: the next transmission disconnects (the transport's
		# inject_disconnect); traffic then reconnects, and the NFS client binds its session
		# to the new connection.
		fs=/sys/kernel/debug/fail_sunrpc
		c0=$(mountstats_xprt $MNT | awk '{ print $5 }')
		if [ -d $fs ]; then
			echo 0 > $fs/verbose; echo 1 > $fs/interval; echo 100 > $fs/probability
			echo 1 > $fs/times
		fi
		for i in $(seq 1 30); do
			t ls -l "$MNT" > /dev/null
			c1=$(mountstats_xprt $MNT | awk '{ print $5 }')
			[ "${c1:-0}" -gt "${c0:-0}" ] && break
			sleep 1
		done
		[ -d $fs ] && echo 0 > $fs/times
		ktap_print_msg "v$v: connect count $c0 -> $c1 (fault injection)"
		deleg_cycle "$v" "f$v-again" "v$v after a reconnect"
	fi
	t umount $MNT && ktap_test_pass "v$v: umount" ||
		{ ktap_test_fail "v$v: umount"; umount -l $MNT 2>/dev/null; }
done

if [ $rs = 1 ]; then
	bc1=$(cat $BC 2>/dev/null)
	echo "$bc1" | sed 's/^/# backchannel: /'
	grow() { # counter $1 grew by how much
		echo "$(echo "$bc1" | awk -v n="$1" '$1 == n { print $2 }') $(echo "$bc0" |
			awk -v n="$1" '$1 == n { print $2 }')" | awk '{ print $1 - $2 }'
	}
	calls=$(grow calls) replies=$(grow replies)
	# A Call in flight across the forced reconnect may be dropped as arriving on a closing
	# connection, or its Reply as stale: expected then. Every other drop is a bad one.
	drops=$(echo "$bc1" | awk '$1 ~ /^drop_/ && $1 != "drop_closing" &&
		$1 != "drop_stale_reply" { s += $2 } END { print s + 0 }')
	# Version 2 on both ends: every connection in version 2, the backward Calls in it too.
	v2=ok
	if [ "$RPCRDMA_MAX_VERSION" = 2 ] && [ "$RPCRDMA_SERVER" = rs ]; then
		v1=$(cat $V 2>/dev/null)
		vgrow() { echo "$(echo "$v1" | awk -v n="$1" '$1 == n { print $2 }') $(echo "$v0" |
			awk -v n="$1" '$1 == n { print $2 }')" | awk '{ print $1 - $2 }'; }
		v2="conns_v2 +$(vgrow client_conns_v2), conns_v1 +$(vgrow client_conns_v1), backward Calls in v2 +$(vgrow client_backward_v2)"
		[ "$(vgrow client_conns_v2)" -gt 0 ] && [ "$(vgrow client_conns_v1)" = 0 ] &&
			[ "$(vgrow client_backward_v2)" -gt 0 ] && [ "$(vgrow client_backward_v2)" -ge "${calls:-0}" ] ||
			v2="not ok: $v2"
		ktap_print_msg "version 2: $v2"
	fi
	[ "${calls:-0}" -gt 0 ] && [ "${replies:-0}" -gt 0 ] && [ "$drops" = 0 ] &&
		[ "${v2#not ok}" = "$v2" ] &&
		ktap_test_pass "backchannel counters: $calls calls served, $replies replies sent, no bad one dropped${RS_PARAMS:+ ($v2)}" ||
		ktap_test_fail "backchannel counters: ${calls:-?} calls, ${replies:-?} replies, $drops bad ones dropped${RS_PARAMS:+ ($v2)}"
	rpcrdma_counters_zero $((60 * RPCRDMA_SLOW)) &&
		ktap_test_pass "every debugfs object counter back to zero (backward requests included)" ||
		ktap_test_fail "every debugfs object counter back to zero (backward requests included)"
fi

mod=rpcrdma
[ $rs = 1 ] && mod=rpcrdma_rs
ok=0
for i in $(seq 1 30); do
	if [ $rs = 1 ]; then
		rpcrdma_rs_unload && { ok=1; break; }
	else
		rmmod $mod 2>/dev/null && { ok=1; break; }
	fi
	sleep 1
done
[ $ok = 1 ] && ktap_test_pass "rmmod $mod (ours: still live: 0)" ||
	ktap_test_fail "rmmod $mod (refcnt $(cat /sys/module/$mod/refcnt 2>/dev/null))"

echo bye > $CTL/ctl/req.tmp && mv $CTL/ctl/req.tmp $CTL/ctl/req.$(cat /tmp/req)
# -i: no UMNT call to the server, which may already be on its way out.
umount -i $CTL
ktap_finished
