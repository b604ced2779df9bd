#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The tracepoints of rpcrdma_rs (the "rpcrdma" trace system, named after the C module's), in one
# guest with both ends on rpcrdma_rs over rxe. With events/rpcrdma enabled in tracefs: a mount
# and I/O (xprtrdma_op_connect, xprtrdma_connect rc=0, xprtrdma_reply with the credits, the
# completion events), an injected disconnect and the reconnect (xprtrdma_op_inject_dsc,
# xprtrdma_disconnect with the reason, a second xprtrdma_connect), an RDMA_ERROR provoked by
# rpcrdma_hostile.py's bad-version Call (svcrdma_decode_badvers_err and svcrdma_err_vers with
# its xid), an RDMA_ERROR received from rpcrdma_hostile_server.py (xprtrdma_err_vers); the
# events' format files name the fields scripts read; a disabled system records
# nothing; rmmod with every object freed.
set -u
. "$(dirname "$0")/lib.sh"

T=/sys/kernel/tracing
EV=$T/events/rpcrdma
HOSTILE="/usr/bin/python3 $RPCRDMA_SELFTEST_DIR/rpcrdma_hostile.py"
# rpcrdma_hostile.py's xid.
HXID=0x1234abcd

ktap_print_header
ktap_set_plan 14

modprobe sunrpc
modprobe nfsv3
if quiet rpcrdma_rs_load && quiet rdma_link_up rxe && rdma_wait_active rxe0; then
	ktap_test_pass "rpcrdma_rs.ko loaded, rxe up"
else
	ktap_exit_fail_msg "setup failed"
fi
mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug
mountpoint -q $T || mount -t tracefs nodev $T
[ -d $EV ] || ktap_exit_fail_msg "no $EV: the module's events are not registered"

# --- format files: the fields scripts read --------------------------------------------------
# "event field..." lines; each field must appear as "field:<type> <name>[...];" in the format.
bad=""
while read -r ev fields; do
	f=$EV/$ev/format
	[ -r $f ] || { bad="$bad $ev(missing)"; continue; }
	for fld in $fields; do
		grep -Eq "field:[^;]* $fld(\[[0-9]+\])?;" $f || bad="$bad $ev.$fld"
	done
done <<'EOF'
xprtrdma_connect rc connect_status addr port
xprtrdma_disconnect rc connect_status addr port
xprtrdma_op_connect delay addr port
xprtrdma_op_inject_dsc addr port
xprtrdma_reply task_id client_id xid credits
xprtrdma_reply_vers_err xid version proc addr port
xprtrdma_reply_rqst_err xid version proc addr port
xprtrdma_reply_short_err xid version proc addr port
xprtrdma_reply_hdr_err xid version proc addr port
xprtrdma_err_vers task_id client_id xid min max
xprtrdma_err_chunk task_id client_id xid
xprtrdma_wc_send cq_id completion_id status vendor_err
xprtrdma_wc_receive cq_id completion_id received status vendor_err
xprtrdma_wc_fastreg cq_id status vendor_err
xprtrdma_wc_li_wake cq_id status vendor_err
xprtrdma_wc_li_done cq_id status vendor_err
xprtrdma_frwr_alloc mr_id rc
xprtrdma_frwr_dereg mr_id rc
xprtrdma_frwr_sgerr mr_id addr dir nents
xprtrdma_frwr_maperr mr_id addr dir num_mapped nents
xprtrdma_nomrs_err task_id client_id addr port
xprtrdma_marshal_failed task_id client_id xid ret
xprtrdma_post_send_err task_id client_id rc
svcrdma_pd_err status addr
svcrdma_qp_err status addr
svcrdma_fabric_err status addr
svcrdma_initdepth_err status addr
svcrdma_accept_err status addr
svcrdma_decode_short_err cq_id hdrlen
svcrdma_decode_badvers_err cq_id xid vers proc credits
svcrdma_decode_drop_err cq_id xid vers proc credits
svcrdma_decode_badproc_err cq_id xid vers proc credits
svcrdma_decode_parse_err cq_id xid vers proc credits
svcrdma_err_vers xid
svcrdma_err_chunk xid
svcrdma_send_err status xid addr
svcrdma_rq_post_err status addr
svcrdma_wc_send cq_id completion_id
svcrdma_wc_send_flush cq_id status vendor_err
svcrdma_wc_send_err cq_id status vendor_err
svcrdma_wc_recv cq_id received
svcrdma_wc_recv_flush cq_id status vendor_err
svcrdma_wc_recv_err cq_id status vendor_err
svcrdma_wc_read_err cq_id status vendor_err
svcrdma_wc_write_err cq_id status vendor_err
svcrdma_sq_full cq_id avail depth
svcrdma_sq_retry cq_id avail depth
svcrdma_sq_post_err cq_id avail depth status
EOF
n=$(ls $EV | grep -c -E '^(xprtrdma|svcrdma)_')
[ -z "$bad" ] && ktap_test_pass "format files of $n events name the fields scripts read" ||
	ktap_test_fail "format files: missing$bad"

# --- mount and I/O, all events on ----------------------------------------------------------
echo 0 > $T/tracing_on
echo 8192 > $T/buffer_size_kb
echo > $T/trace
echo 1 > $EV/enable
echo 1 > $T/tracing_on
if ! quiet nfsd_start rdma || ! grep -q '^rdma 20049' /proc/fs/nfsd/portlist; then
	ktap_exit_fail_msg "nfsd rdma listener failed"
fi
# Enough calls for several batches of unsignaled Sends (an eighth of the credits each).
touch_many() {
	local i
	for i in $(seq 1 64); do timeout 60 touch $MNT/t$i || return 1; done
}
head -c 1048576 /dev/urandom > /tmp/src1m
want=$(md5sum < /tmp/src1m)
if timeout 120 mount -t nfs -o vers=3,proto=rdma,port=20049 $SRV_ADDR:$EXPORT $MNT &&
	timeout 120 cp /tmp/src1m $MNT/f && sync && echo 3 > /proc/sys/vm/drop_caches &&
	[ "$(timeout 120 md5sum < $MNT/f)" = "$want" ] &&
	touch_many; then
	ktap_test_pass "mount, 1 MiB round trip and 64 creates with the events enabled"
else
	ktap_test_fail "mount, 1 MiB round trip and 64 creates with the events enabled"
fi
# The trace so far, for the assertions.
snap() { cat $T/trace > /tmp/trace.txt; }
# Lines of event $1 in the snapshot that match the extended regex $2.
has() { grep -E " $1: " /tmp/trace.txt | grep -Ec -- "$2"; }
show() { grep -E " $1: " /tmp/trace.txt | head -n ${2:-2} | sed 's/^ */# /'; }
snap
show xprtrdma_op_connect 1; show xprtrdma_connect 1; show xprtrdma_reply 1
show xprtrdma_wc_send 1; show xprtrdma_wc_receive 1; show svcrdma_wc_recv 1
peer="peer=\[$SRV_ADDR\]:20049"
[ "$(has xprtrdma_op_connect "$peer delay=[0-9]+")" -ge 1 ] &&
	[ "$(has xprtrdma_connect "$peer rc=0 connection status=1$")" -ge 1 ] &&
	ktap_test_pass "connect traced: xprtrdma_op_connect, xprtrdma_connect rc=0 status=1" ||
	ktap_test_fail "connect traced: xprtrdma_op_connect, xprtrdma_connect rc=0 status=1"
# Credits: our server grants svc_rdma/max_requests (128 by default) once its Receives are
# posted; the client asks for its slot table's size.
grant=$(cat /proc/sys/sunrpc/svc_rdma/max_requests 2>/dev/null)
[ "$(has xprtrdma_reply "xid=0x[0-9a-f]{8} credits=[1-9][0-9]*$")" -ge 10 ] &&
	[ -n "$grant" ] && [ "$(has xprtrdma_reply "credits=$grant$")" -ge 1 ] &&
	ktap_test_pass "replies traced with their credits (xprtrdma_reply credits=$grant)" ||
	ktap_test_fail "replies traced with their credits ($(has xprtrdma_reply .) xprtrdma_reply)"
# The client signals one Send in a batch, as the C client (frwr_send): only those complete,
# at most one for every four replies here, at least one.
sends=$(has xprtrdma_wc_send "status=SUCCESS \(0/0x0\)") replies=$(has xprtrdma_reply .)
[ "$sends" -ge 1 ] && [ $((sends * 4)) -le "$replies" ] &&
	[ "$(has xprtrdma_wc_receive "status=SUCCESS \(0/0x0\) received=[1-9]")" -ge 10 ] &&
	[ "$(has svcrdma_wc_recv "received=[1-9]")" -ge 10 ] &&
	[ "$(has svcrdma_wc_send "cq.id=[0-9]+")" -ge 10 ] &&
	ktap_test_pass "completions traced (client Send, $sends for $replies replies, and Receive; server Receive and Send)" ||
	ktap_test_fail "completions traced (client Send, $sends for $replies replies, and Receive; server Receive and Send)"

# --- an RDMA_ERROR: a Call of version 2 ----------------------------------------------------
echo > $T/trace
# Up to three tries, each traced alone: the first run of rpcrdma_hostile.py in a fresh guest was
# seen to take over its 60 s (before it sent anything: no event at all) on a loaded machine.
for try in 1 2 3; do
	echo > $T/trace
	got=$(timeout $((60 * RPCRDMA_SLOW)) $HOSTILE $SRV_ADDR badvers 2>/tmp/hostile.err)
	rc=$?
	ktap_print_msg "rpcrdma_hostile.py badvers (try $try): ${got:-nothing} (exit $rc)"
	[ -n "$got" ] && break
	tail -n 5 /tmp/hostile.err | sed 's/^/# /'
	grep -E ' (svcrdma|xprtrdma)_' $T/trace | tail -n 5 | sed 's/^ */# /'
	sleep 5
done
# Its connection's teardown (xpo_free, the drain) may come a moment after the client exits.
for i in $(seq 1 $((30 * RPCRDMA_SLOW))); do
	grep -q ' svcrdma_wc_recv_flush: ' $T/trace && break
	sleep 1
done
snap
show svcrdma_decode_badvers_err 1; show svcrdma_err_vers 1
[ "$got" = "ERR_VERS 1 1" ] &&
	[ "$(has svcrdma_decode_badvers_err "xid=$HXID vers=2 credits=32 proc=0$")" = 1 ] &&
	[ "$(has svcrdma_err_vers "xid=$HXID$")" = 1 ] &&
	ktap_test_pass "RDMA_ERROR traced: svcrdma_decode_badvers_err vers=2, svcrdma_err_vers xid=$HXID" ||
	ktap_test_fail "RDMA_ERROR traced: svcrdma_decode_badvers_err vers=2, svcrdma_err_vers xid=$HXID"
# The hostile client's connection ended: its Receives come back flushed (WR_FLUSH_ERR, 5).
[ "$(has svcrdma_wc_recv_flush "status=WR_FLUSH_ERR \(5/0x[0-9a-f]+\)")" -ge 1 ] &&
	ktap_test_pass "flushed Receives traced with their status (svcrdma_wc_recv_flush)" ||
	ktap_test_fail "flushed Receives traced with their status (svcrdma_wc_recv_flush)"

# --- an injected disconnect and the reconnect ---------------------------------------------
echo > $T/trace
fs=/sys/kernel/debug/fail_sunrpc
echo 0 > $fs/verbose; echo 1 > $fs/interval; echo 100 > $fs/probability; echo 1 > $fs/times
got=$(timeout 300 dd if=$MNT/f bs=4096 iflag=direct status=none | md5sum)
echo 0 > $fs/times
[ "$got" = "$want" ] || ktap_print_msg "data read across the disconnect differs"
snap
show xprtrdma_op_inject_dsc 1; show xprtrdma_disconnect 2; show xprtrdma_op_connect 1
show xprtrdma_connect 1
# The disconnect: rdma_disconnect moves the QP to the error state, which flushes the posted
# Receives (their completions traced with WR_FLUSH_ERR, 5), and its DISCONNECTED event ends the
# connection (-ECONNABORTED, -103, as re_connect_status in C); sunrpc's close then tears it
# down. Whichever of the two reaches sunrpc first, the status says why: -103, or 1 if the
# flush closed a connection still up (as in C, where a flush forces the disconnect too).
show xprtrdma_wc_receive 1
[ "$got" = "$want" ] &&
	[ "$(has xprtrdma_op_inject_dsc "$peer$")" = 1 ] &&
	[ "$(has xprtrdma_disconnect "$peer rc=-?[0-9]+ connection status=(-103|1)$")" -ge 1 ] &&
	[ "$(grep -E ' xprtrdma_wc_(receive|send): ' /tmp/trace.txt |
		grep -Ec 'status=WR_FLUSH_ERR \(5/0x[0-9a-f]+\)')" -ge 1 ] &&
	ktap_test_pass "injected disconnect traced: xprtrdma_op_inject_dsc, flushed completions, xprtrdma_disconnect" ||
	ktap_test_fail "injected disconnect traced: xprtrdma_op_inject_dsc, flushed completions, xprtrdma_disconnect"
# The reconnect, after the disconnect.
awk -v p="$SRV_ADDR" '
	/ xprtrdma_disconnect: / { d = NR }
	/ xprtrdma_op_connect: / && d { o = NR }
	/ xprtrdma_connect: / && o && / rc=0 connection status=1$/ { ok = 1 }
	END { exit !ok }' /tmp/trace.txt &&
	ktap_test_pass "reconnect traced: xprtrdma_op_connect then xprtrdma_connect rc=0 after the disconnect" ||
	ktap_test_fail "reconnect traced: xprtrdma_op_connect then xprtrdma_connect rc=0 after the disconnect"

# --- an RDMA_ERROR received: rpcrdma_hostile_server.py answers a read with ERR_VERS ---------
# (client_hostile.sh's err_vers case: it proxies the calls to nfsd over TCP and replaces the
# answer to the first Call offering a Write chunk, an O_DIRECT read, with RDMA_ERROR/ERR_VERS.)
echo > $T/trace
hstate=$(mktemp -d)
/usr/bin/python3 $RPCRDMA_SELFTEST_DIR/rpcrdma_hostile_server.py $SRV_ADDR 20050 2049 err_vers \
	$hstate 2>$hstate/err &
hpid=$!
for i in $(seq 1 60); do
	grep -q listening $hstate/log 2>/dev/null && break
	sleep 0.5
done
HMNT=/tmp/hmnt
mkdir -p $HMNT
rc=1
if timeout -s KILL 120 mount -t nfs -o vers=3,proto=rdma,port=20050,mountproto=tcp,nolock,soft,timeo=20,retrans=2 \
	$SRV_ADDR:$EXPORT $HMNT; then
	timeout -s KILL 180 dd if=$HMNT/f of=/dev/null bs=64k count=1 iflag=direct status=none
	rc=$?
	timeout -s KILL 120 umount $HMNT || umount -l $HMNT
fi
kill $hpid 2>/dev/null
wait $hpid 2>/dev/null
snap
show xprtrdma_err_vers 1
[ $rc != 0 ] && [ "$(has xprtrdma_err_vers "task:[0-9a-f]{8}@[0-9a-f]{8} xid=0x[0-9a-f]{8} versions=\[1, 1\]$")" -ge 1 ] &&
	ktap_test_pass "RDMA_ERROR received traced: xprtrdma_err_vers versions=[1, 1] (the read failed)" ||
	ktap_test_fail "RDMA_ERROR received traced: xprtrdma_err_vers versions=[1, 1] (dd $rc)"

# --- disabled: nothing recorded ------------------------------------------------------------
echo 0 > $EV/enable
echo > $T/trace
timeout 120 md5sum < $MNT/f >/dev/null
echo 3 > /proc/sys/vm/drop_caches
timeout 120 md5sum < $MNT/f >/dev/null
n=$(grep -Ec ' (xprtrdma|svcrdma)_[a-z_]+: ' $T/trace)
[ "$n" = 0 ] && ktap_test_pass "events disabled: nothing recorded during I/O" ||
	ktap_test_fail "events disabled: $n events recorded during I/O"

timeout 120 umount $MNT || umount -l $MNT
rpc.nfsd 0
exportfs -ua
rpcrdma_counters_zero 30 && ktap_test_pass "after rpc.nfsd 0: every debugfs counter back to zero" ||
	ktap_test_fail "after rpc.nfsd 0: every debugfs counter back to zero"
rpcrdma_rs_unload &&
	dmesg_has "rpcrdma_rs: unregistering transports; rdma objects still live: 0$" &&
	ktap_test_pass "rmmod rpcrdma_rs (still live: 0)" || ktap_test_fail "rmmod rpcrdma_rs (still live: 0)"
ktap_finished
