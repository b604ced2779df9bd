#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A hostile peer against our server transport, in one guest over rxe loopback: nfsd listens on
# rdma 20049 through rpcrdma_rs.ko and rpcrdma_hostile.py (pyverbs) sends truncated headers,
# wrong versions, bogus chunk counts, overlapping and out-of-range Read chunks and garbage,
# each on its own connection. Each case checks the RDMA_ERROR (or drop, or disconnect) RFC 8166
# prescribes (ERR_CHUNK for a header cut short after its XID, as svcrdma; a zero-length message,
# with no XID to answer, dropped and counted in server_short_dropped of debugfs
# rpcrdma_rs/versions, the call after it answered), a Reply chunk answered with a Long Message, a Position-Zero Read chunk with
# another Read chunk read as svcrdma does, and an NFSv4 WRITE and READ of nfsd's largest payload
# (4 MiB) in one Read or Write chunk, the data checked on both sides; backward-direction Replies
# (RFC 8167) the server never asked for: one with an unknown XID is dropped and counted
# (srv_drop_reply in debugfs rpcrdma_rs/backchannel) and the connection still answers, one
# larger than the server's inline threshold ends the connection; a client that posts no
# Receives and asked for infinite RNR retries, whose NULL calls fill the server's Send Queue, is
# closed by the server once that queue made no progress for 30 s (server_sq_timeouts in debugfs
# rpcrdma_rs/versions); afterwards a well-formed Call
# is still answered, NFS over RDMA still works, nfsd stops, and the module unloads with no RDMA
# object left. Then the same with the module loaded with max_version=2 and version 2 messages
# (rpcrdma-v2 draft): a NULL call is answered in version 2 and followed by the server's
# RDMA2_CONNPROP (its Receive Buffer Size and segment count); a property value that does not
# fit its type is RDMA2_ERR_BAD_XDR, a continued RDMA2_CONNPROP is RDMA2_ERR_INVAL_FLAG; a
# Receive Buffer Size too small to honour is ignored and an unknown property skipped, the
# call after them answered; message continuation: a NULL call in two messages is answered, one
# whose final message never comes is kept and not answered, two interleaved sequences are
# RDMA2_ERR_INVAL_FLAG, 70 continued messages (beyond the server's 64) RDMA2_ERR_SYSTEM, one
# broken by an RDMA2_ERROR from the client (dropped itself) RDMA2_ERR_INVAL_FLAG; the
# draft's other errors: an undefined header type (RDMA2_ERR_INVAL_HTYPE), a
# reserved flag (RDMA2_ERR_INVAL_FLAG), an rdma_inv_handle naming no handle of the header
# (RDMA2_ERR_BAD_XDR), 17 Read chunks (RDMA2_ERR_READ_CHUNKS); an RDMA2_ERROR from the client is
# not answered; a credit word of 0 is still served; an NFSv4.0 READ of 12000 bytes offering no
# chunk is answered continued, in three RDMA2_MSG messages (F_MORE on all but the last, our XID,
# F_RESPONSE, empty chunk lists) whose payloads make the READ reply with the file's bytes;
# debugfs rpcrdma_rs/versions counts exactly that; and the module unloads with nothing live again.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pyfork.sh"

V=/sys/kernel/debug/rpcrdma_rs/versions
vc() { awk -v k="$1" '$1 == k { print $2 }' $V 2>/dev/null; }
# case:expected answer
CASES="null:REPLY_0 short:ERR_CHUNK zero_len:REPLY_0 badvers:ERR_VERS_1_1 garbage:ERR_VERS_1_1
badproc:ERR_CHUNK msgp:ERR_CHUNK rdma_error:NOREPLY truncated_lists:ERR_CHUNK
bad_discriminant:ERR_CHUNK bogus_count:ERR_CHUNK overlap:ERR_CHUNK pos_beyond:ERR_CHUNK
too_long:ERR_CHUNK unaligned:ERR_CHUNK nomsg_no_pz:ERR_CHUNK reply_chunk_null:NOMSG_REPLY_0
pz_plus_read:REPLY_0 write_4m:NFS_0_WRITE_4194304 read_4m:NFS_0_READ_4194304_match
out_of_range:DISCONNECT bc_reply_unknown:REPLY_0 bc_reply_big:DISCONNECT sq_stall:CLOSED
null:REPLY_0"

ktap_print_header
# Version 2 cases: case, then the glob the answer must match. v2_more_reply (an NFSv4 READ)
# comes last: by then v2_msg_more's wait for no answer has outlasted nfsd's grace period, in
# which it would get NFS4ERR_GRACE.
V2_CASES="v2_null|REPLY2 0 CONNPROP 4096 [1-9]*
v2_connprop_bad|ERR2 2
v2_connprop_more|ERR2 4
v2_connprop_tiny|REPLY2 0 CONNPROP 4096 [1-9]*
v2_connprop_unknown|REPLY2 0 CONNPROP 4096 [1-9]*
v2_msg_more|NOREPLY
v2_more_call|REPLY2 0 CONNPROP 4096 [1-9]*
v2_more_interleaved|ERR2 4
v2_more_endless|ERR2 10
v2_more_broken|ERR2 4
v2_bad_htype|ERR2 3
v2_reserved_flag|ERR2 4
v2_inv_handle_unknown|ERR2 2
v2_read_chunks|ERR2 5
v2_error_from_client|NOREPLY
v2_credits_zero|REPLY2 0 CONNPROP 4096 [1-9]*
v2_more_reply|MORE 3 NFS 0 READ 12000 match CONNPROP 4096 [1-9]*
v2_write_short|ERR2 8 1 12000"

ktap_set_plan $(($(echo $CASES | wc -w) + 7 + $(echo "$V2_CASES" | wc -l) + 3 + 2))
/usr/bin/python3 -c 'import pyverbs' 2>/dev/null ||
	ktap_exit_fail_msg "python3-pyverbs is not installed (scripts/install-deps.sh)"
# rpcrdma_hostile.py, a process per case, forked from one that imported it (pyfork.sh).
pyfork_start "$RPCRDMA_SELFTEST_DIR/rpcrdma_hostile.py" ||
	ktap_exit_fail_msg "cannot start the fork server of rpcrdma_hostile.py"
rdma_link_up rxe
rdma_wait_active rxe0
dmesg -C
rpcrdma_rs_load || ktap_exit_fail_msg "cannot load rpcrdma_rs.ko"
# nfsd's largest payload (NFSSVC_MAXBLKSIZE, 4 MiB) whatever the guest's memory: write_4m and
# read_4m move that much in one chunk.
NFSD_MAX_BLOCK_SIZE=4194304 nfsd_start rdma || ktap_exit_fail_msg "nfsd has no rdma listener"
ktap_print_msg "nfsd max_block_size $(cat /proc/fs/nfsd/max_block_size)"
: > $EXPORT/f4m

for c in $CASES; do
	name=${c%%:*} want=$(echo "${c#*:}" | tr _ ' ')
	want=${want/ERR CHUNK/ERR_CHUNK}
	want=${want/ERR VERS/ERR_VERS}
	want=${want/NOMSG REPLY/NOMSG_REPLY}
	dropped=$(rpcrdma_bc_counter srv_drop_reply)
	short=$(vc server_short_dropped)
	# sq_stall waits for the server's 30 s Send Queue limit, on a connection granting 16
	# credits: its Send Queue is full after some 550 replies.
	limit=60
	if [ $name = sq_stall ]; then
		limit=120
		max_requests=$(cat /proc/sys/sunrpc/svc_rdma/max_requests)
		echo 16 > /proc/sys/sunrpc/svc_rdma/max_requests
	fi
	for try in $(seq 1 20); do
		got=$(pyfork_run $((limit * RPCRDMA_SLOW)) $SRV_ADDR $name 2>/tmp/hostile.err)
		rc=$?
		# NFS4ERR_GRACE: nfsd's grace period after its start; try again.
		case $got in "NFS 10013"*) sleep 2 ;; *) break ;; esac
	done
	# Killed by its own SIGALRM (128 + 14): nothing came back.
	[ -z "$got" ] && [ $rc = 142 ] && got=NOREPLY
	[ -n "$got" ] || sed 's/^/# /' /tmp/hostile.err
	[ "$got" = "$want" ] && ktap_test_pass "$name: $want" ||
		ktap_test_fail "$name: want \"$want\", got \"$got\""
	if [ $name = bc_reply_unknown ]; then
		# Exactly one Reply dropped and counted: the backward Reply, not the NULL call (another
		# nfsd thread may still be counting it when the NULL's reply is in).
		for i in 1 2 3 4 5; do
			[ "$(rpcrdma_bc_counter srv_drop_reply)" = $((${dropped:-0} + 1)) ] && break
			sleep 1
		done
		[ "$(rpcrdma_bc_counter srv_drop_reply)" = $((${dropped:-0} + 1)) ] &&
			ktap_test_pass "bc_reply_unknown: the backward Reply was dropped and counted" ||
			ktap_test_fail "bc_reply_unknown: the backward Reply was dropped and counted (srv_drop_reply: ${dropped:-none} -> $(rpcrdma_bc_counter srv_drop_reply))"
	fi
	if [ $name = zero_len ]; then
		# Exactly one message dropped as too short to answer, the empty one, and logged.
		for i in 1 2 3 4 5; do
			[ "$(vc server_short_dropped)" = $((${short:-0} + 1)) ] && break
			sleep 1
		done
		[ "$(vc server_short_dropped)" = $((${short:-0} + 1)) ] &&
			dmesg_has "rpcrdma_rs: .*message of 0 bytes, too short to answer: dropped" &&
			ktap_test_pass "zero_len: the empty message was dropped, counted and logged" ||
			ktap_test_fail "zero_len: the empty message was dropped, counted and logged (server_short_dropped: ${short:-none} -> $(vc server_short_dropped))"
	fi
	if [ $name = sq_stall ]; then
		echo $max_requests > /proc/sys/sunrpc/svc_rdma/max_requests
		# The server closed the connection itself, once, logged and counted.
		dmesg | grep 'rpcrdma_rs: .*Send Queue full' | tail -n 1 | sed 's/^/# /'
		[ "$(vc server_sq_timeouts)" = 1 ] &&
			dmesg_has "rpcrdma_rs: .*no Send completed in 30 s with the Send Queue full: closing the connection" &&
			ktap_test_pass "sq_stall: the server closed the stalled connection (server_sq_timeouts 1)" ||
			ktap_test_fail "sq_stall: the server closed the stalled connection (server_sq_timeouts $(vc server_sq_timeouts))"
	fi
	[ $name = write_4m ] || continue
	sum=$(md5sum < $EXPORT/f4m)
	[ "$sum" = "$(python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(256)) * 16384)' | md5sum)" ] &&
		ktap_test_pass "write_4m: the exported file holds the 4 MiB written" ||
		ktap_test_fail "write_4m: the exported file holds the 4 MiB written ($(stat -c %s $EXPORT/f4m) bytes)"
done

# nfsd still serves NFS over RDMA through our server transport (mounted through our client):
# the transport survived the hostile peer.
mkdir -p $MNT
timeout -s KILL 120 mount -t nfs -o vers=4.2,proto=rdma,port=20049 $SRV_ADDR:/ $MNT &&
	echo hello > $MNT/f && echo 3 > /proc/sys/vm/drop_caches &&
	[ "$(cat $MNT/f)" = hello ] && [ "$(cat $EXPORT/f)" = hello ] && umount $MNT &&
	ktap_test_pass "nfsd still serves NFS over RDMA after the hostile peer" ||
	ktap_test_fail "nfsd still serves NFS over RDMA after the hostile peer"

# The NFS client lets its transport go asynchronously after the umount: retry rmmod a while.
unload() {
	local i
	for i in $(seq 1 60); do
		rpcrdma_rs_unload && return 0
		sleep 1
	done
	return 1
}
rpc.nfsd 0 && exportfs -ua && unload &&
	ktap_test_pass "rpc.nfsd 0 and rmmod rpcrdma_rs (still live: 0)" ||
	ktap_test_fail "rpc.nfsd 0 and rmmod rpcrdma_rs (still live: 0)"
dmesg_has "rpcrdma_rs: unregistering transports; rdma objects still live: 0$" &&
	ktap_test_pass "no rdma object leaked" ||
	{ dmesg | grep rpcrdma_rs | tail -5 | sed 's/^/# /'; ktap_test_fail "no rdma object leaked"; }

# Version 2: the module again, now accepting version 2.
# v2_more_reply reads 12000 bytes of this file, the pattern rpcrdma_hostile.py checks.
python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(256)) * 64)' > $EXPORT/f16k
if rpcrdma_rs_load max_version=2 && nfsd_start rdma; then
	ktap_test_pass "v2: rpcrdma_rs.ko loaded with max_version=2, nfsd on rdma 20049"
else
	ktap_test_fail "v2: rpcrdma_rs.ko loaded with max_version=2, nfsd on rdma 20049"
fi
while IFS='|' read -r name want; do
	got=$(pyfork_run $((60 * RPCRDMA_SLOW)) $SRV_ADDR $name 2>/tmp/hostile.err)
	rc=$?
	[ -z "$got" ] && [ $rc = 142 ] && got=NOREPLY
	[ -n "$got" ] || sed 's/^/# /' /tmp/hostile.err
	# shellcheck disable=SC2053 # $want is a glob
	[[ "$got" == $want ]] && ktap_test_pass "$name: $got" ||
		ktap_test_fail "$name: want \"$want\", got \"$got\""
done <<< "$V2_CASES"
# Six connections got the server's properties after their first reply (the continued NULL
# call's and the continued READ reply's among them); ten refused messages were answered with
# RDMA2_ERROR (two for the interleaved sequences, one for the endless one, one for the sequence
# the client's own RDMA2_ERROR broke); of the client
# properties the server read, the one with a 512-byte Receive Buffer Size was not honoured
# and the one with an unknown property was; every connection settled on version 2 with its
# first message; one continued Call was reassembled, of two messages; one reply was sent
# continued, in three messages.
want="sent 6 received 1 bad 1 errors 11 conns 18 continued 1/2 sent continued 1/3"
got="sent $(vc server_connprops_sent) received $(vc server_connprops_received) bad $(vc server_connprops_bad) errors $(vc server_errors_v2) conns $(vc server_conns_v2) continued $(vc server_continued)/$(vc server_continued_msgs) sent continued $(vc server_sent_continued)/$(vc server_sent_continued_msgs)"
[ "$got" = "$want" ] &&
	ktap_test_pass "v2: versions counters: $got" ||
	ktap_test_fail "v2: versions counters: want \"$want\", got \"$got\""
rpc.nfsd 0 && exportfs -ua && unload &&
	ktap_test_pass "v2: rpc.nfsd 0 and rmmod rpcrdma_rs (still live: 0)" ||
	ktap_test_fail "v2: rpc.nfsd 0 and rmmod rpcrdma_rs (still live: 0)"

# Keep-alive: loaded with keepalive=1, a client that sent one credit refresh (it keeps alive)
# and then stays silent, its RDMA device still acknowledging, is closed by the server after 3
# of its intervals; the server's own refreshes went to it meanwhile.
if rpcrdma_rs_load max_version=2 keepalive=1 && nfsd_start rdma; then
	got=$(pyfork_run $((60 * RPCRDMA_SLOW)) $SRV_ADDR v2_silent 2>/tmp/hostile.err)
	[ -n "$got" ] || sed 's/^/# /' /tmp/hostile.err
	dmesg | grep 'rpcrdma_rs: .*keep-alive' | tail -n 2 | sed 's/^/# /'
	[[ "$got" == "REPLY2 0 CONNPROP 4096 "[1-9]*" SILENT" ]] && [ "$(vc server_keepalive_dead)" = 1 ] &&
		[ "$(vc server_refreshes_sent)" -ge 1 ] && [ "$(vc server_ignored_v2)" = 1 ] &&
		dmesg_has "rpcrdma_rs: .*nothing received for .* of the client's keep-alive intervals: closing the connection" &&
		ktap_test_pass "keepalive=1: a silent client that keeps alive is closed ($got; $(vc server_refreshes_sent) refreshes sent)" ||
		ktap_test_fail "keepalive=1: a silent client that keeps alive is closed (got \"$got\", dead $(vc server_keepalive_dead), refreshes sent $(vc server_refreshes_sent), received $(vc server_ignored_v2))"
else
	ktap_test_fail "keepalive=1: rpcrdma_rs.ko loaded, nfsd on rdma 20049"
fi
rpc.nfsd 0 && exportfs -ua && unload &&
	ktap_test_pass "keepalive: rpc.nfsd 0 and rmmod rpcrdma_rs (still live: 0)" ||
	ktap_test_fail "keepalive: rpc.nfsd 0 and rmmod rpcrdma_rs (still live: 0)"
pyfork_stop
ktap_finished
