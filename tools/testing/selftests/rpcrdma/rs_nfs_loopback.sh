#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Both ends on rpcrdma_rs, in one guest: nfsd serves over our server transport and the mount goes
# over our client transport, looped back through one rxe (or siw: RPCRDMA_DEV) device. For
# NFSv3, v4.0, v4.1 and v4.2: files of every size that exercises a marshaling path round trip
# with their md5 checked through the mount and on the exported file system; mkdir with 100
# creates; readdir of a 5000-entry directory (Reply chunks); a symlink and a 255-byte name;
# umount. Then `rpc.nfsd 0`, and rmmod with every debugfs counter back to zero.
set -u
. "$(dirname "$0")/lib.sh"

DEV=${RPCRDMA_DEV:-rxe}
VERSIONS=${NFS_VERSIONS:-3 4.0 4.1 4.2}
SIZES="0 1 1023 1024 4095 4096 4097 65536 1048579 67108864"
COUNTERS=/sys/kernel/debug/rpcrdma_rs/counters

ktap_print_header
ktap_set_plan $((2 + 6 * $(echo $VERSIONS | wc -w) + 2))

modprobe sunrpc
modprobe nfsv3
modprobe nfsv4
if quiet rpcrdma_rs_load && quiet rdma_link_up $DEV && rdma_wait_active ${DEV}0; then
	ktap_test_pass "rpcrdma_rs.ko loaded, $DEV up"
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

for v in $VERSIONS; do
	path=$EXPORT
	[ $v = 3 ] || path=/
	if ! timeout 120 mount -t nfs -o vers=$v,proto=rdma,port=20049 $SRV_ADDR:$path $MNT; then
		ktap_test_fail "v$v: mount over rpcrdma_rs (client and server)"
		for t in files dir bigdir names umount; do ktap_test_skip "v$v: $t (not mounted)"; done
		continue
	fi
	ktap_test_pass "v$v: mount over rpcrdma_rs (client and server)"
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
	ln -s /some/target/of/a/symlink $d/v$v/link && touch $d/v$v/$long
	[ "$(readlink $d/v$v/link)" = /some/target/of/a/symlink ] && [ -e $EXPORT/v$v/$long ] &&
		ktap_test_pass "v$v: symlink and a 255-byte name" ||
		ktap_test_fail "v$v: symlink and a 255-byte name"
	ktap_print_msg "v$v $(grep -m1 'xprt:' /proc/self/mountstats)"
	timeout 120 umount $MNT && ktap_test_pass "v$v: umount" || ktap_test_fail "v$v: umount"
done

rpc.nfsd 0
exportfs -ua
sed 's/^/# /' $COUNTERS
live=1
for i in $(seq 1 30); do
	[ "$(awk '{ s += $4 } END { print s }' $COUNTERS)" = 0 ] && { live=0; break; }
	sleep 1
done
[ $live = 0 ] && ktap_test_pass "after rpc.nfsd 0: every debugfs counter back to zero" ||
	ktap_test_fail "after rpc.nfsd 0: every debugfs counter back to zero"
quiet rmmod rpcrdma_rs &&
	dmesg_has "rpcrdma_rs: unregistering transports; rdma objects still live: 0$" &&
	ktap_test_pass "rmmod rpcrdma_rs" || ktap_test_fail "rmmod rpcrdma_rs"
ktap_finished
