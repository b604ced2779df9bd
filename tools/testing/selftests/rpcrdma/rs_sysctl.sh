#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The C module's sysctls, served by rpcrdma_rs: every file of /proc/sys/sunrpc/rdma_* and
# /proc/sys/sunrpc/svc_rdma/ exists with C's default and mode; every bounded knob refuses min-1
# and max+1 with EINVAL (value unchanged) and accepts its bounds. Then, with both ends on
# rpcrdma_rs in one guest over rxe (as rs_nfs_loopback.sh), each knob is changed and its effect
# observed on the next connection:
#  - the client's rdma_max_inline_{write,read} in its RFC 8797 private data, as the server's
#    connect log shows them, and the server's max_req_size in its own, as the client's shows;
#  - the server's max_requests as the credits granted (the server's log, and the client's
#    congestion window in /sys/kernel/sunrpc/.../xprt_info, cong_win = credits << 8);
#  - rdma_slot_table_entries as the transport's slot table (max_num_slots), which also caps the
#    credits the client takes;
#  - files round trip with md5 checked at 1 KiB/2 KiB inline sizes, and a readdir;
#  - rdma_stat_recv, rdma_stat_read (RDMA Reads: O_DIRECT writes) and rdma_stat_write (RDMA
#    Writes: O_DIRECT reads) grow with I/O, and any write resets a counter to 0;
# then rmmod with nothing live, and the files gone with the module.
set -u
. "$(dirname "$0")/lib.sh"

S=/proc/sys/sunrpc
V=$S/svc_rdma
PAGE=$(getconf PAGESIZE)
XPRTS=/sys/kernel/sunrpc/xprt-switches
COUNTERS4="rdma_stat_read rdma_stat_recv rdma_stat_write rdma_stat_sq_starve"
UNUSED5="rdma_stat_rq_starve rdma_stat_rq_poll rdma_stat_rq_prod rdma_stat_sq_poll rdma_stat_sq_prod"
# file default min max (min/max "-": no bounds)
KNOBS="
$S/rdma_slot_table_entries 128 4 16384
$S/rdma_max_inline_read 4096 1024 65536
$S/rdma_max_inline_write 4096 1024 65536
$S/rdma_inline_write_padding 0 0 $PAGE
$S/rdma_memreg_strategy 5 0 6
$S/rdma_pad_optimize 0 - -
$V/max_requests 128 4 16384
$V/max_req_size 4096 4096 65536
$V/max_outbound_read_requests 16 1 255"
NBOUNDED=8

ktap_print_header
ktap_set_plan $((3 + NBOUNDED + 2 + 1 + 8 + 4 + 1 + 2))

modprobe sunrpc
modprobe nfsv3
modprobe nfsv4
dmesg -C
if quiet rpcrdma_rs_load && quiet rdma_link_up rxe && rdma_wait_active rxe0; then
	ktap_test_pass "rpcrdma_rs.ko loaded, rxe up"
else
	ktap_exit_fail_msg "setup failed"
fi
mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug

# --- the files, their defaults and modes ------------------------------------------------------
bad=""
while read -r f def _; do
	[ -n "$f" ] || continue
	[ -f "$f" ] || { bad="$bad missing:${f#$S/}"; continue; }
	[ "$(cat "$f")" = "$def" ] || bad="$bad ${f#$S/}=$(cat "$f")(want $def)"
	[ "$(stat -c %a "$f")" = 644 ] || bad="$bad mode:${f#$S/}=$(stat -c %a "$f")"
done <<< "$KNOBS"
[ -z "$bad" ] && ktap_test_pass "the 6 client and 3 server tunables exist with C's defaults, mode 0644" ||
	ktap_test_fail "tunables with C's defaults:$bad"
bad=""
for c in $COUNTERS4 $UNUSED5; do
	[ -f $V/$c ] || { bad="$bad missing:$c"; continue; }
	[ "$(cat $V/$c)" = 0 ] || bad="$bad $c=$(cat $V/$c)"
	[ "$(stat -c %a $V/$c)" = 644 ] || bad="$bad mode:$c"
done
[ -z "$bad" ] && ktap_test_pass "the 9 rdma_stat_* files exist, 0 before any connection, mode 0644" ||
	ktap_test_fail "rdma_stat_* files:$bad"

# --- ranges: EINVAL out of range, value unchanged; the bounds accepted ------------------------
# Write $2 to $1; prints the error message, fails if the write failed.
put() {
	local err
	err=$( { echo "$2" > "$1"; } 2>&1 ) && return 0
	echo "$err"
	return 1
}
# $1 file, $2 value: the write must fail with EINVAL and leave the value as it was.
refused() {
	local before err
	before=$(cat "$1")
	err=$(put "$1" "$2") && { echo "$2 accepted"; return 1; }
	echo "$err" | grep -q "Invalid argument" || { echo "$2: $err"; return 1; }
	[ "$(cat "$1")" = "$before" ] || { echo "$2 refused but changed to $(cat "$1")"; return 1; }
}
# $1 file, $2 value: accepted and read back.
accepted() {
	put "$1" "$2" >/dev/null && [ "$(cat "$1")" = "$2" ] || { echo "$2 not accepted ($(cat "$1"))"; return 1; }
}
while read -r f def min max; do
	[ -n "$f" ] && [ "$min" != - ] || continue
	out=$(refused "$f" $((min - 1)); refused "$f" $((max + 1)); accepted "$f" "$min";
		accepted "$f" "$max"; accepted "$f" "$def")
	[ -z "$out" ] && [ "$(cat "$f")" = "$def" ] &&
		ktap_test_pass "${f#$S/}: $((min - 1)) and $((max + 1)) refused (EINVAL, unchanged), $min and $max accepted" ||
		ktap_test_fail "${f#$S/}: $(echo $out)"
done <<< "$KNOBS"
out=$(accepted $S/rdma_pad_optimize 1; accepted $S/rdma_pad_optimize -1; accepted $S/rdma_pad_optimize 0)
[ -z "$out" ] && ktap_test_pass "rdma_pad_optimize: any integer accepted (proc_dointvec, as C)" ||
	ktap_test_fail "rdma_pad_optimize: $(echo $out)"
out=""
for c in $UNUSED5; do
	out="$out$(refused $V/$c 1; accepted $V/$c 0)"
done
[ -z "$out" ] && ktap_test_pass "rdma_stat_{rq_starve,rq_poll,rq_prod,sq_poll,sq_prod}: 1 refused, 0 accepted" ||
	ktap_test_fail "unused counters: $(echo $out)"

# --- connections ------------------------------------------------------------------------------
if quiet nfsd_start rdma && grep -q '^rdma 20049' /proc/fs/nfsd/portlist; then
	ktap_test_pass "nfsd listens on rdma 20049 through rpcrdma_rs"
else
	ktap_exit_fail_msg "nfsd rdma listener failed"
fi

# The xprt_info of the connected rdma transport(s): "field=value" lines.
xprt_info() {
	local f
	for f in $XPRTS/*/xprt-*-rdma/xprt_info; do
		[ -r "$f" ] && grep -q '^cong_win=' "$f" && cat "$f"
	done
}
info_field() { xprt_info | sed -n "s/^$1=//p" | head -n 1; }
# Reads a counter.
stat_of() { cat $V/rdma_stat_$1; }

SIZES="0 1 1000 1023 1024 2047 2048 4097 65536 1048579 8388608"
mkdir -p /tmp/src $EXPORT/big
for s in $SIZES; do head -c $s /dev/urandom > /tmp/src/f$s; done
(cd $EXPORT/big && seq -f 'entry-with-a-longer-name-%05g' 1 2000 | xargs touch)

# Mount A, NFSv4.2: the client's inline sizes 1 KiB (write) and 2 KiB (read), a 32-entry slot
# table; the server grants 16 credits, with 8 KiB of its own.
echo 1024 > $S/rdma_max_inline_write
echo 2048 > $S/rdma_max_inline_read
echo 32 > $S/rdma_slot_table_entries
echo 16 > $V/max_requests
echo 8192 > $V/max_req_size
dmesg -C
if timeout 120 mount -t nfs -o vers=4.2,proto=rdma,port=20049 $SRV_ADDR:/ $MNT; then
	ktap_test_pass "mount A (NFSv4.2): client inline 1024/2048, 32 slots; server 16 credits, 8192"
	stat $MNT >/dev/null
	d=$MNT
	[ -d $MNT$EXPORT/big ] && d=$MNT$EXPORT
	# The server logs what it agreed (send/recv): min(8192, the client's receive size), min(8192,
	# its send size): so the client's private data carried 2048 and 1024.
	srv=$(dmesg | grep 'rpcrdma_rs: rdma connection from' | tail -n 1)
	cli=$(dmesg | grep 'rpcrdma_rs: connected to' | tail -n 1)
	ktap_print_msg "server: ${srv#*] }"
	ktap_print_msg "client: ${cli#*] }"
	echo "$srv" | grep -q ": 16 credits, inline 2048/1024," &&
		ktap_test_pass "the client's private data carried rdma_max_inline_read 2048 and _write 1024 (server log)" ||
		ktap_test_fail "the client's private data carried rdma_max_inline_read 2048 and _write 1024 (server log)"
	echo "$cli" | grep -q "inline send 1024 recv 2048$" &&
		ktap_test_pass "the client uses inline send 1024 recv 2048 (client log)" ||
		ktap_test_fail "the client uses inline send 1024 recv 2048 (client log)"
	# I/O of every size that crosses the small thresholds, checksummed both ways.
	mkdir -p $d/a
	bad=""
	for s in $SIZES; do timeout 300 cp /tmp/src/f$s $d/a/f$s || bad="$bad cp:$s"; done
	sync
	echo 3 > /proc/sys/vm/drop_caches
	for s in $SIZES; do
		want=$(md5sum < /tmp/src/f$s)
		[ "$(timeout 300 md5sum < $d/a/f$s)" = "$want" ] || bad="$bad mount:$s"
		[ "$(md5sum < $EXPORT/a/f$s)" = "$want" ] || bad="$bad server:$s"
	done
	n=$(ls $d/big | wc -l)
	[ "$n" = 2000 ] || bad="$bad readdir:$n"
	[ -z "$bad" ] && ktap_test_pass "inline 1024/2048: $(echo $SIZES | wc -w) files round trip (md5), readdir of 2000" ||
		ktap_test_fail "inline 1024/2048: I/O:$bad"
	info=$(xprt_info | tr '\n' ' ')
	ktap_print_msg "xprt_info: $info"
	cw=$(info_field cong_win) slots=$(info_field max_num_slots)
	[ "$cw" = $((16 << 8)) ] &&
		ktap_test_pass "credits granted: 16 (client's cong_win $cw)" ||
		ktap_test_fail "credits granted: 16 (client's cong_win ${cw:-none}, want $((16 << 8)))"
	[ "$slots" = 32 ] && ktap_test_pass "slot table: max_num_slots 32" ||
		ktap_test_fail "slot table: max_num_slots ${slots:-none}, want 32"
	# Statistics: 16 O_DIRECT reads of 64 KiB (Write chunks: RDMA Writes) and 16 writes (Read
	# chunks: RDMA Reads), each at least one rdma_rw context and one received call.
	for c in read recv write; do echo 0 > $V/rdma_stat_$c; done
	r0=$(stat_of read) v0=$(stat_of recv) w0=$(stat_of write)
	timeout 300 dd if=$d/a/f8388608 of=/dev/null bs=65536 count=16 iflag=direct status=none &&
		timeout 300 dd if=/dev/zero of=$d/a/direct bs=65536 count=16 oflag=direct status=none
	rc=$?
	r1=$(stat_of read) v1=$(stat_of recv) w1=$(stat_of write)
	ktap_print_msg "rdma_stat_read $r0 -> $r1, rdma_stat_recv $v0 -> $v1, rdma_stat_write $w0 -> $w1, rdma_stat_sq_starve $(stat_of sq_starve)"
	[ $rc = 0 ] && [ $((r1 - r0)) -ge 16 ] && [ $((w1 - w0)) -ge 16 ] && [ $((v1 - v0)) -ge 32 ] &&
		ktap_test_pass "rdma_stat_read, _write and _recv grow with I/O (+$((r1 - r0)), +$((w1 - w0)), +$((v1 - v0)))" ||
		ktap_test_fail "rdma_stat_read, _write and _recv grow with I/O (dd $rc, +$((r1 - r0)), +$((w1 - w0)), +$((v1 - v0)))"
	timeout 120 umount $MNT && ktap_test_pass "umount A" || ktap_test_fail "umount A"
else
	ktap_test_fail "mount A"
	for t in "server log" "client log" "I/O" "credits" "slot table" "statistics" "umount"; do
		ktap_test_fail "mount A: $t (not mounted)"
	done
fi

# Mount B, NFSv3: the client offers 16 KiB both ways with an 8-entry slot table; the server
# keeps 8 KiB and 128 credits. The client's log shows the server's private data (8192), and
# its 8 slots cap the 128 credits granted.
echo 16384 > $S/rdma_max_inline_write
echo 16384 > $S/rdma_max_inline_read
echo 8 > $S/rdma_slot_table_entries
echo 128 > $V/max_requests
dmesg -C
if timeout 120 mount -t nfs -o vers=3,proto=rdma,port=20049 $SRV_ADDR:$EXPORT $MNT; then
	ktap_test_pass "mount B (NFSv3): client inline 16384, 8 slots; server 128 credits, 8192"
	stat $MNT/a/f1 >/dev/null
	cli=$(dmesg | grep 'rpcrdma_rs: connected to' | tail -n 1)
	srv=$(dmesg | grep 'rpcrdma_rs: rdma connection from' | tail -n 1)
	ktap_print_msg "client: ${cli#*] }"
	ktap_print_msg "server: ${srv#*] }"
	echo "$cli" | grep -q "inline send 8192 recv 8192$" && echo "$srv" | grep -q ": 128 credits, inline 8192/8192," &&
		ktap_test_pass "the server's private data carried max_req_size 8192 (client log)" ||
		ktap_test_fail "the server's private data carried max_req_size 8192 (client log)"
	[ "$(timeout 300 md5sum < $MNT/a/f1048579)" = "$(md5sum < /tmp/src/f1048579)" ] || ktap_print_msg "md5 of f1048579 differs"
	cw=$(info_field cong_win) slots=$(info_field max_num_slots)
	ktap_print_msg "xprt_info: $(xprt_info | tr '\n' ' ')"
	[ "$slots" = 8 ] && [ "$cw" = $((8 << 8)) ] &&
		ktap_test_pass "slot table: max_num_slots 8, and 8 of the 128 credits taken (cong_win $cw)" ||
		ktap_test_fail "slot table: max_num_slots ${slots:-none} (want 8), cong_win ${cw:-none} (want $((8 << 8)))"
	timeout 120 umount $MNT && ktap_test_pass "umount B" || ktap_test_fail "umount B"
else
	ktap_test_fail "mount B"
	for t in "private data" "slot table" "umount"; do ktap_test_fail "mount B: $t (not mounted)"; done
fi

# Any write resets a counter (svcrdma_counter_handler), "0" or not.
before="$(stat_of read) $(stat_of recv) $(stat_of write)"
echo 0 > $V/rdma_stat_read
echo 5 > $V/rdma_stat_recv
echo 0 > $V/rdma_stat_write
echo 0 > $V/rdma_stat_sq_starve
after="$(stat_of read) $(stat_of recv) $(stat_of write) $(stat_of sq_starve)"
[ "$after" = "0 0 0 0" ] && [ "$before" != "0 0 0" ] &&
	ktap_test_pass "a write resets rdma_stat_* to 0 (read/recv/write were $before)" ||
	ktap_test_fail "a write resets rdma_stat_* to 0 (were $before, now $after)"

# Back to the defaults.
while read -r f def _; do
	[ -n "$f" ] && echo "$def" > "$f"
done <<< "$KNOBS"

rpc.nfsd 0
exportfs -ua
rpcrdma_counters_zero 30 && ktap_test_pass "after rpc.nfsd 0: every debugfs counter back to zero" ||
	ktap_test_fail "after rpc.nfsd 0: every debugfs counter back to zero"
rpcrdma_rs_unload && [ ! -e $S/rdma_max_inline_read ] && [ ! -e $V ] &&
	ktap_test_pass "rmmod rpcrdma_rs (still live: 0), its sysctl files gone" ||
	ktap_test_fail "rmmod rpcrdma_rs (still live: 0), its sysctl files gone"
ktap_finished
