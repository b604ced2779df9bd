#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Both ends on rpcrdma_rs, in one guest: nfsd serves over our server transport and the mount goes
# over our client transport, looped back through one rxe (or siw: RPCRDMA_DEV) device. For
# NFSv3, v4.0, v4.1 and v4.2: files of every size that exercises a marshaling path round trip
# with their md5 checked through the mount and on the exported file system; mkdir with 100
# creates; readdir of a 5000-entry directory (Reply chunks); symlinks (one with a 4000-byte
# target) and a 255-byte name; Read, Write and Reply chunks used (mountstats); calls over the
# inline threshold with no payload (a big xattr or ACL) sent as position-zero Read chunks;
# umount. Then 10,000 RPCs that each register memory (4 KiB O_DIRECT reads into Write chunks and
# writes from Read chunks), an injected disconnect and an injected failure to allocate a
# LOCAL_INV (the client must close the connection), with the debugfs object counters checked
# against their idle values after each; 16 concurrent 1 MiB reads over a connection with a
# small MR pool (sends wait for MRs); then `rpc.nfsd 0`, and rmmod with every counter at zero.
#
#   RPCRDMA_DEV     rxe (default) or siw
#   RPCRDMA_FAMILY  4 (default: 192.0.2.1, proto=rdma) or 6 (2001:db8::1, proto=rdma6)
#   NFS_VERSIONS    versions, in order (default "3 4.0 4.1 4.2")
set -u
. "$(dirname "$0")/lib.sh"

DEV=${RPCRDMA_DEV:-rxe}
VERSIONS=${NFS_VERSIONS:-3 4.0 4.1 4.2}
SIZES="0 1 1023 1024 4095 4096 4097 65536 1048579 67108864"
COUNTERS=/sys/kernel/debug/rpcrdma_rs/counters
# RPCs of the leak check (scripts/run-tests.sh --debug-kernel makes it fewer).
LEAK_RPCS=${LEAK_RPCS:-10000}
FAMILY=${RPCRDMA_FAMILY:-4}
case $FAMILY in
4) proto=rdma host=$SRV_ADDR ;;
6) proto=rdma6 SRV_ADDR6=2001:db8::1 host="[2001:db8::1]" ;;
*) echo "RPCRDMA_FAMILY must be 4 or 6" >&2; exit 1 ;;
esac

ktap_print_header
ktap_set_plan $((2 + 8 * $(echo $VERSIONS | wc -w) + 7 + 2))

modprobe sunrpc
modprobe nfsv3
modprobe nfsv4
# IPv6: nodad, or the address stays tentative for a while and rdma_cm cannot resolve it.
if quiet rpcrdma_rs_load && quiet rdma_link_up $DEV && rdma_wait_active ${DEV}0 &&
	{ [ $FAMILY = 4 ] || quiet ip -6 addr add $SRV_ADDR6/64 dev veth0 nodad; }; then
	ktap_test_pass "rpcrdma_rs.ko loaded, $DEV up (IPv$FAMILY: $host)"
else
	ktap_exit_fail_msg "setup failed"
fi
mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug
if quiet nfsd_start rdma && grep -q '^rdma 20049' /proc/fs/nfsd/portlist; then
	ktap_test_pass "nfsd listens on rdma 20049 through rpcrdma_rs"
else
	ktap_exit_fail_msg "nfsd rdma listener failed"
fi
mkdir -p $EXPORT/big
(cd $EXPORT/big && seq -f 'entry-with-a-longer-name-%05g' 1 5000 | xargs touch)
mkdir -p /tmp/src
for s in $SIZES; do head -c $s /dev/urandom > /tmp/src/f$s; done

# Whether a sunrpc transport has the netid $1, the address $2 and the port $3 (its
# address_strings, as /sys/kernel/debug/sunrpc/rpc_xprt/*/info prints them).
xprt_strings() {
	local f
	for f in /sys/kernel/debug/sunrpc/rpc_xprt/*/info; do
		grep -qx "netid: $1" $f && grep -qx "addr:  $2" $f && grep -qx "port:  $3" $f && return 0
	done
	return 1
}

for v in $VERSIONS; do
	path=$EXPORT
	[ $v = 3 ] || path=/
	if ! timeout 120 mount -t nfs -o vers=$v,proto=$proto,port=20049 $host:$path $MNT; then
		ktap_test_fail "v$v: mount over rpcrdma_rs (client and server)"
		for t in files dir bigdir names mountstats position-zero umount; do ktap_test_fail "v$v: $t (not mounted)"; done
		continue
	fi
	# The mount's transport shows the address strings rpcrdma_rs formatted (sunrpc debugfs).
	if xprt_strings $proto "${host//[][]/}" 20049; then
		ktap_test_pass "v$v: mount over rpcrdma_rs (client and server, $proto; xprt address strings)"
	else
		ktap_print_msg "$(cat /sys/kernel/debug/sunrpc/rpc_xprt/*/info 2>&1)"
		ktap_test_fail "v$v: mount over rpcrdma_rs (client and server, $proto; xprt address strings)"
	fi
	d=$MNT
	[ -d $MNT$EXPORT/big ] && d=$MNT$EXPORT
	mkdir -p $d/v$v
	bad=""
	for s in $SIZES; do timeout 300 cp /tmp/src/f$s $d/v$v/f$s || bad="$bad cp:$s"; done
	sync
	echo 3 > /proc/sys/vm/drop_caches
	for s in $SIZES; do
		want=$(md5sum < /tmp/src/f$s)
		[ "$(timeout 300 md5sum < $d/v$v/f$s)" = "$want" ] || bad="$bad mount:$s"
		[ "$(md5sum < $EXPORT/v$v/f$s)" = "$want" ] || bad="$bad server:$s"
	done
	[ -z "$bad" ] && ktap_test_pass "v$v: $(echo $SIZES | wc -w) files round trip (md5 via the mount and on the server)" ||
		ktap_test_fail "v$v: files round trip:$bad"
	mkdir $d/v$v/dir && (cd $d/v$v/dir && seq 1 100 | xargs touch)
	n=$(ls $d/v$v/dir | wc -l)
	[ "$n" = 100 ] && [ "$(ls $EXPORT/v$v/dir | wc -l)" = 100 ] &&
		ktap_test_pass "v$v: mkdir and 100 creates" || ktap_test_fail "v$v: mkdir and 100 creates ($n)"
	n=$(ls $d/big | wc -l)
	[ "$n" = 5000 ] && [ "$(ls $d/big | md5sum)" = "$(ls $EXPORT/big | md5sum)" ] &&
		ktap_test_pass "v$v: readdir of 5000 entries" || ktap_test_fail "v$v: readdir of 5000 entries ($n)"
	long=$(printf 'n%.0s' $(seq 1 255))
	# A 4000-byte target: a SYMLINK call over the inline threshold (its target travels in a
	# Read chunk: NFS marks it XDRBUF_WRITE); READLINK's reply takes a Reply chunk.
	lt=$(printf 'v%s/%03997d' "$v" 0 | head -c 4000)
	ln -s /some/target/of/a/symlink $d/v$v/link && touch $d/v$v/$long && ln -s "$lt" $d/v$v/longlink
	echo 3 > /proc/sys/vm/drop_caches
	[ "$(readlink $d/v$v/link)" = /some/target/of/a/symlink ] && [ -e $EXPORT/v$v/$long ] &&
		[ "$(readlink $d/v$v/longlink)" = "$lt" ] && [ "$(readlink $EXPORT/v$v/longlink)" = "$lt" ] &&
		ktap_test_pass "v$v: symlinks (a 4000-byte target too) and a 255-byte name" ||
		ktap_test_fail "v$v: symlinks (a 4000-byte target too) and a 255-byte name"
	line=$(grep -m1 'xprt:' /proc/self/mountstats)
	ktap_print_msg "v$v $line"
	# Fields 13-15: Read, Write and Reply chunks (xprt_rdma_print_stats).
	echo "$line" | awk '$2 == "rdma" && $13 > 0 && $14 > 0 && $15 > 0 { ok = 1 } END { exit !ok }' &&
		ktap_test_pass "v$v: mountstats: read, write and reply chunks used" ||
		ktap_test_fail "v$v: mountstats: read, write and reply chunks used"
	# Calls over the inline threshold with no data payload (a big xattr or ACL) travel whole
	# in a position-zero Read chunk (RDMA_NOMSG): field 23 must grow.
	touch $d/v$v/nomsg
	ktap_print_msg "v$v: $(rpcrdma_nomsg_calls $d/v$v/nomsg)"
	grew=$(mountstats_rdma_grew "$line" "$(grep -m1 'xprt:' /proc/self/mountstats)" $MOUNTSTATS_NOMSG) &&
		ktap_test_pass "v$v: mountstats: position-zero calls used ($grew)" ||
		ktap_test_fail "v$v: mountstats: position-zero calls used ($grew)"
	timeout 120 umount $MNT && ktap_test_pass "v$v: umount" || ktap_test_fail "v$v: umount"
done

# --- 10,000 RPCs and a disconnect: no object may be left behind -------------------------------
# "name alive" of every debugfs counter.
alive() { awk '{ print $1, $4 }' $COUNTERS; }
# The server re-posts Receives in batches (RECV_BATCH, 8, as svc_rdma_refresh_recvs): an idle
# connection has between its credits + 1 and its credits + 8 Receives posted, so posted_wrs may
# be up to 7 away from its idle value (one server connection at a time here). The client
# signals one Send in a batch of an eighth of its slots (SendBudget, as the C client): up to a
# batch of unsignaled Sends and REG_MRs stay posted until a later Send's completion hands them
# back, so posted_wrs may be that much further away. Every other
# counter must be equal: a Receive that leaked would still show in dma_maps (its buffer). But
# rw_objs: the server connection keeps the objects of its rdma_rw contexts for its next RDMA
# Reads and Writes, as many as it once had in use at the same time (bounded by its QP's
# rdma_rw contexts, and freed with the connection, checked after rpc.nfsd 0); the contexts and
# tables in use (rw_ctxs, sgts) must be back at their idle values.
RECV_SLACK=7
SEND_SLACK=$(($(cat /proc/sys/sunrpc/rdma_slot_table_entries 2>/dev/null || echo 0) / 8))
# Whether the "name alive" lines $2 match the idle ones $1.
at_idle() {
	[ "$(echo "$1" | cut -d' ' -f1)" = "$(echo "$2" | cut -d' ' -f1)" ] || return 1
	paste -d' ' <(echo "$1") <(echo "$2") | awk -v slack=$((RECV_SLACK + SEND_SLACK)) '
		{ d = $4 - $2 }
		$1 == "posted_wrs" { if (d < -slack || d > slack) bad = 1; next }
		$1 == "rw_objs" { if ($4 < 0) bad = 1; next }
		d != 0 { bad = 1 }
		END { exit bad }'
}
# Wait until the counters are back at the idle values in $1 (Receives re-posted, MRs
# invalidated); print the differences if they never are.
settles_to() {
	local i
	for i in $(seq 1 30); do
		at_idle "$1" "$(alive)" && return 0
		sleep 1
	done
	diff <(echo "$1") <(alive) | sed 's/^/# /'
	return 1
}
# The counters once they stop moving (a previous connection's teardown, freeing its MRs, takes
# seconds under TCG).
steady() {
	local a b i
	a=$(alive)
	for i in $(seq 1 30); do
		sleep 2
		b=$(alive)
		[ "$a" = "$b" ] && break
		a=$b
	done
	echo "$b"
}
xprt_field() { grep -m1 'xprt:' /proc/self/mountstats | awk -v f=$1 '{ print $f }'; }
lv=${VERSIONS##* }
path=$EXPORT
[ $lv = 3 ] || path=/
if timeout 120 mount -t nfs -o vers=$lv,proto=$proto,port=20049 $host:$path $MNT; then
	d=$MNT
	[ -d $MNT$EXPORT/big ] && d=$MNT$EXPORT
	big=$d/v$lv/f67108864
	# Idle values, taken once the connection is up and has carried a call.
	stat $d >/dev/null
	idle=$(steady)
	s0=$(xprt_field 8)
	n=$((LEAK_RPCS / 2))
	# 4 KiB O_DIRECT: one READ (a Write chunk: the reply exceeds the 4 KiB inline size) or one
	# WRITE (a Read chunk) per block, each registering and invalidating an MR.
	timeout 600 dd if=$big of=/dev/null bs=4096 count=$n iflag=direct status=none &&
		timeout 600 dd if=/dev/zero of=$d/leak bs=4096 count=$n oflag=direct status=none
	rc=$?
	s1=$(xprt_field 8)
	ktap_print_msg "$((s1 - s0)) RPCs sent"
	[ $rc = 0 ] && [ $((s1 - s0)) -ge $LEAK_RPCS ] &&
		ktap_test_pass "$LEAK_RPCS RPCs with memory registration ($((s1 - s0)) sent)" ||
		ktap_test_fail "$LEAK_RPCS RPCs with memory registration (dd $rc, $((s1 - s0)) sent)"
	settles_to "$idle" && ktap_test_pass "after $LEAK_RPCS RPCs: object counters at their idle values" ||
		ktap_test_fail "after $LEAK_RPCS RPCs: object counters at their idle values"
	# One disconnect injected by sunrpc (the transport's inject_disconnect), then more I/O on
	# the new connection: the old connection's MRs, buffers and WRs must all be gone.
	fs=/sys/kernel/debug/fail_sunrpc
	c0=$(xprt_field 5)
	echo 0 > $fs/verbose; echo 1 > $fs/interval; echo 100 > $fs/probability; echo 1 > $fs/times
	# Checksummed: 1.6 MiB read across the disconnect must match the source.
	got=$(timeout 300 dd if=$big bs=4096 count=400 iflag=direct status=none | md5sum)
	rc=${PIPESTATUS[0]}
	[ "$got" = "$(head -c $((400 * 4096)) /tmp/src/f67108864 | md5sum)" ] ||
		{ ktap_print_msg "data read across the disconnect differs"; rc=1; }
	echo 0 > $fs/times
	c1=$(xprt_field 5)
	ktap_print_msg "injected disconnect: connect count $c0 -> $c1"
	[ $rc = 0 ] && [ "${c1:-0}" -gt "${c0:-0}" ] &&
		ktap_test_pass "I/O across an injected disconnect (connect count $c0 -> $c1)" ||
		ktap_test_fail "I/O across an injected disconnect (dd $rc, connect count $c0 -> $c1)"
	settles_to "$idle" && ktap_test_pass "after the disconnect: object counters at their idle values" ||
		ktap_test_fail "after the disconnect: object counters at their idle values"
	# A LOCAL_INV chain whose work request cannot be allocated (rpcrdma_rs' fault injection):
	# the MRs are still registered with the server, so the client closes the connection, keeps
	# them until the QP is drained, and retransmits on a new connection. What crosses it needs
	# LOCAL_INV (mountstats' local_inv_needed, $27) whatever the device: READDIR replies of the
	# 5000-entry directory come in Reply chunks of two MRs or more (head, pages), of which the
	# server's Send With Invalidate ends only one; then checksummed 1 MiB O_DIRECT reads.
	fli=/sys/kernel/debug/rpcrdma_rs/fail_local_inv
	c0=$(xprt_field 5) li0=$(xprt_field 27)
	echo 3 > /proc/sys/vm/drop_caches
	echo 1 > $fli
	n=$(timeout 300 ls -f $d/big | grep -c '^entry-')
	got=$(timeout 300 dd if=$big bs=1M count=4 skip=4 iflag=direct status=none | md5sum)
	rc=${PIPESTATUS[0]}
	[ "$n" = 5000 ] || { ktap_print_msg "readdir across the failed LOCAL_INV: $n entries"; rc=1; }
	[ "$got" = "$(head -c $((8 * 1048576)) /tmp/src/f67108864 | tail -c $((4 * 1048576)) | md5sum)" ] ||
		{ ktap_print_msg "data read across the failed LOCAL_INV differs"; rc=1; }
	left=$(cat $fli)
	echo 0 > $fli
	c1=$(xprt_field 5) li1=$(xprt_field 27)
	ktap_print_msg "failed LOCAL_INV: injections left ${left:-?}, connect count $c0 -> $c1, local_inv_needed $li0 -> $li1"
	[ $rc = 0 ] && [ "$left" = 0 ] && [ "${c1:-0}" -gt "${c0:-0}" ] &&
		ktap_test_pass "I/O across a LOCAL_INV that cannot be allocated (connect count $c0 -> $c1)" ||
		ktap_test_fail "I/O across a LOCAL_INV that cannot be allocated (dd $rc, left ${left:-?}, connect count $c0 -> $c1)"
	settles_to "$idle" && ktap_test_pass "after the failed LOCAL_INV: object counters at their idle values" ||
		ktap_test_fail "after the failed LOCAL_INV: object counters at their idle values"
	timeout 120 umount $MNT || umount -l $MNT
	# A new NFSv3 mount whose connection has the smallest MR pool (debugfs client_mrs: 1 is
	# raised to two full chunks' worth), and 16 concurrent 2 MiB O_DIRECT reads, each READ a
	# Write chunk of several MRs: sends short of MRs must wait for some to come back (sunrpc's
	# write-space wait, traced as xprtrdma_nomrs_err) and every block read must match.
	cm=/sys/kernel/debug/rpcrdma_rs/client_mrs T=/sys/kernel/tracing
	echo 1 > $cm
	rc=1 waits=0 pool=?
	if timeout 120 mount -t nfs -o vers=3,proto=$proto,port=20049 $host:$EXPORT $MNT; then
		# A connection made now, whether or not sunrpc reused an earlier transport: one
		# more injected disconnect. mrs_allocated ($26) grows by the new pool.
		p0=$(xprt_field 26)
		echo 1 > $fs/times
		timeout 300 dd if=$MNT/v3/f67108864 of=/dev/null bs=4096 count=100 iflag=direct status=none
		echo 0 > $fs/times
		pool=$(($(xprt_field 26) - p0))
		echo > $T/trace
		echo 1 > $T/events/rpcrdma/xprtrdma_nomrs_err/enable
		rc=0 pids=
		for i in $(seq 0 15); do
			(timeout 300 dd if=$MNT/v3/f67108864 bs=1M count=2 skip=$((2 * i)) iflag=direct \
				status=none | md5sum > /tmp/mrwait.$i) &
			pids="$pids $!"
		done
		wait $pids
		echo 0 > $T/events/rpcrdma/xprtrdma_nomrs_err/enable
		waits=$(grep -c xprtrdma_nomrs_err $T/trace)
		for i in $(seq 0 15); do
			[ "$(cat /tmp/mrwait.$i)" = "$(head -c $(((2 * i + 2) * 1048576)) /tmp/src/f67108864 |
				tail -c $((2 * 1048576)) | md5sum)" ] || { ktap_print_msg "block $i differs"; rc=1; }
		done
		timeout 120 umount $MNT || umount -l $MNT
	fi
	echo 0 > $cm
	ktap_print_msg "small MR pool: $pool MRs, $waits sends waited for MRs"
	[ $rc = 0 ] && [ "${waits:-0}" -gt 0 ] && [ "$pool" != 0 ] &&
		ktap_test_pass "sends wait for MRs of a small pool ($pool MRs, $waits waits)" ||
		ktap_test_fail "sends wait for MRs of a small pool (data $rc, $pool MRs, $waits waits)"
else
	for c in "$LEAK_RPCS RPCs" "counters after RPCs" "injected disconnect" "counters after disconnect" \
		"failed LOCAL_INV" "counters after failed LOCAL_INV" "small MR pool"; do
		ktap_test_fail "$c (mount failed)"
	done
fi

rpc.nfsd 0
exportfs -ua
rpcrdma_counters_zero 30 && ktap_test_pass "after rpc.nfsd 0: every debugfs counter back to zero" ||
	ktap_test_fail "after rpc.nfsd 0: every debugfs counter back to zero"
rpcrdma_rs_unload &&
	dmesg_has "rpcrdma_rs: unregistering transports; rdma objects still live: 0$" &&
	ktap_test_pass "rmmod rpcrdma_rs (still live: 0)" || ktap_test_fail "rmmod rpcrdma_rs (still live: 0)"
ktap_finished
