#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# RPC-over-RDMA version 2 on the wire, seen from outside (issue 14, "Wire visibility"): guest
# "srv" (192.0.2.1) serves a tmpfs with nfsd through rpcrdma_rs.ko, guest "cli" (192.0.2.2)
# mounts it over NFSv3 through rpcrdma_rs.ko, both with max_version=2, over rxe. The client
# records the RoCEv2 traffic of its link (dumpcap, UDP port 4791) while files below, at and
# well above the inline threshold go both ways (inline, Read, Write and Reply chunks), then
# decodes the capture with tools/rpcrdma-decode, the host decoder built on rust/proto, which
# must find every Send message decodable, all of them version 2 (NFSv3 has no backchannel,
# whose Calls stay version 1), and the debugfs version counters must agree that v2 was used.
# rxe on a single guest would not do: it hands a packet for its own address to its receive
# path without the netdev, where no capture sees it.
#
# Run by scripts/vm-pair.sh as "pair_v2_capture.sh server" and "pair_v2_capture.sh client".
# The decoder is built by scripts/run-tests.sh (cargo test in tools/rpcrdma-decode); run by
# hand, build it first: (cd tools/rpcrdma-decode && cargo build --locked).
set -u
. "$(dirname "$0")/lib.sh"

role=${1:?usage: $0 server|client}
SIZES="0 1 4095 4096 4097 65536 $((1048576 + 3))"
DECODE=$(readlink -f "$(dirname "$0")/../../../../tools/rpcrdma-decode/target/debug/rpcrdma-decode")

if [ "$role" = server ]; then
	pair_rdma_link_up $SRV_ADDR rxe || { echo "server: no rxe link"; exit 1; }
	dmesg -C
	rpcrdma_rs_load max_version=2 || exit 1
	nfsd_start rdma || { echo "server: rdma listener not created"; exit 1; }
	mkdir -p $EXPORT/big && (cd $EXPORT/big && seq -f 'entry-%05g' 1 300 | xargs touch)
	echo "server ready"
	pair_wait_client_done || exit 1
	bad=0
	while read -r sum name; do
		[ "$(md5sum < "$EXPORT/$name" | cut -d' ' -f1)" = "$sum" ] ||
			{ echo "server: checksum of $name differs"; bad=1; }
	done < $EXPORT/sums
	[ -s $EXPORT/sums ] || { echo "server: the client sent no checksums"; bad=1; }
	v=$(cat /sys/kernel/debug/rpcrdma_rs/versions 2>/dev/null)
	echo "$v" | sed 's/^/server: versions: /'
	nfsd_stop
	sleep 2
	rpcrdma_rs_unload || { echo "server: rmmod failed"; bad=1; }
	exit $bad
fi

ktap_print_header
ktap_set_plan 7
[ -x "$DECODE" ] || ktap_exit_fail_msg "no decoder at $DECODE (cargo build in tools/rpcrdma-decode)"
pair_rdma_link_up $CLI_ADDR rxe || ktap_exit_fail_msg "no rxe link"
rpcrdma_rs_load max_version=2 || ktap_exit_fail_msg "cannot load rpcrdma_rs.ko"
mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
VERS=/sys/kernel/debug/rpcrdma_rs/versions
mkdir -p $MNT /tmp/src
for s in $SIZES; do head -c $s /dev/urandom > /tmp/src/f$s; done

CAP=/tmp/v2.pcap
rm -f $CAP
dumpcap -q -i "$(pair_ifname)" -f "udp port 4791" -P -w $CAP 2>/tmp/dumpcap.err &
cap=$!
for i in $(seq 1 30); do [ -s $CAP ] && break; sleep 1; done
[ -s $CAP ] && kill -0 $cap 2>/dev/null &&
	ktap_test_pass "dumpcap records the link's RoCEv2 traffic" ||
	{ sed 's/^/# /' /tmp/dumpcap.err; ktap_test_fail "dumpcap records the link's RoCEv2 traffic"; }

ok=0
for i in $(seq 1 20); do
	timeout $((120 * RPCRDMA_SLOW)) mount -t nfs -o vers=3,proto=rdma,port=20049,nolock \
		$SRV_ADDR:$EXPORT $MNT 2>/tmp/mount.err && { ok=1; break; }
	sleep 3
done
[ $ok = 1 ] || { sed 's/^/# /' /tmp/mount.err; kill $cap; ktap_exit_fail_msg "NFSv3 mount over rdma failed"; }
ktap_test_pass "NFSv3 mount over rdma, max_version=2 on both ends"

bad=
: > /tmp/sums
for s in $SIZES; do cp /tmp/src/f$s $MNT/f$s || bad="$bad write:$s"; done
sync
echo 3 > /proc/sys/vm/drop_caches
for s in $SIZES; do
	want=$(md5sum < /tmp/src/f$s | cut -d' ' -f1)
	[ "$(md5sum < $MNT/f$s | cut -d' ' -f1)" = "$want" ] || bad="$bad read:$s"
	echo "$want f$s" >> /tmp/sums
done
n=$(ls -l $MNT/big | grep -c entry-)
[ "$n" = 300 ] || bad="$bad readdir:$n"
[ -z "$bad" ] && ktap_test_pass "files of $(echo $SIZES | wc -w) sizes round trip (md5), a 300-entry directory lists" ||
	ktap_test_fail "I/O:$bad"
cp /tmp/sums $MNT/sums
v=$(cat $VERS 2>/dev/null)
echo "$v" | sed 's/^/# versions: /'
touch $MNT/done
umount $MNT && ktap_test_pass "umount" || ktap_test_fail "umount"

# Stop the capture (SIGINT: dumpcap flushes and closes the file).
kill -INT $cap
wait $cap
out=$("$DECODE" $CAP 2>&1)
rc=$?
echo "$out" | head -n 12 | sed 's/^/# /'
echo "$out" | tail -n 1 | sed 's/^/# /'
totals=$(echo "$out" | tail -n 1)
msgs=$(echo "$totals" | sed -n 's/.* \([0-9]*\) messages: .*/\1/p')
v1=$(echo "$totals" | sed -n 's/.*messages: \([0-9]*\) v1, .*/\1/p')
v2=$(echo "$totals" | sed -n 's/.*messages: [0-9]* v1, \([0-9]*\) v2, .*/\1/p')
und=$(echo "$totals" | sed -n 's/.* \([0-9]*\) undecodable.*/\1/p')
[ $rc = 0 ] && [ "${und:-x}" = 0 ] && [ "${msgs:-0}" -gt 0 ] &&
	ktap_test_pass "rpcrdma-decode decodes all ${msgs} Send messages of the capture" ||
	ktap_test_fail "rpcrdma-decode: exit $rc, ${und:-?} undecodable of ${msgs:-?} messages"
# Every Send on the connection is version 2: the first call offers it, the server answers in
# it, and NFSv3 has no backward Calls. Hundreds of them, more than the negotiation alone.
calls=$(echo "$v" | awk '$1 == "client_calls_v2" { print $2 }')
[ "${v1:-x}" = 0 ] && [ "${v2:-0}" -ge 100 ] &&
	ktap_test_pass "the capture holds only version 2 messages ($v2), the client counted ${calls:-?} v2 calls" ||
	ktap_test_fail "the capture holds ${v1:-?} version 1 and ${v2:-?} version 2 messages"
for i in $(seq 1 30); do
	rpcrdma_rs_unload && { ok=2; break; }
	sleep 2
done
[ $ok = 2 ] && ktap_test_pass "rmmod rpcrdma_rs (still live: 0)" ||
	ktap_test_fail "rmmod rpcrdma_rs (still live: 0)"
ktap_finished
