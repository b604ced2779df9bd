#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The bench itself: the kernel's C rpcrdma.ko serves and mounts NFSv3 and NFSv4.2 over rxe in
# one guest; files written through the mount read back with the same checksum on both sides.
set -u
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 7

modprobe rpcrdma
quiet rdma_link_up rxe && rdma_wait_active rxe0
if quiet nfsd_start rdma && grep -q '^rdma 20049' /proc/fs/nfsd/portlist; then
	ktap_test_pass "C svcrdma listens on rdma 20049"
else
	ktap_exit_fail_msg "C svcrdma did not start"
fi

# Sizes around the inline threshold and the page size, and a multi-chunk one.
mkdir -p /tmp/src
for size in 0 1 1023 4097 65536 $((8 * 1048576 + 3)); do
	head -c $size /dev/urandom > /tmp/src/f$size
done

for vers in 3 4.2; do
	if ! quiet nfs_mount_rdma $vers; then
		ktap_test_fail "v$vers: mount over rdma"
		ktap_test_fail "v$vers: round trip checksums"
		ktap_test_fail "v$vers: mountstats has an rdma transport line"
		continue
	fi
	ktap_test_pass "v$vers: mount over rdma"
	ok=1
	for f in /tmp/src/*; do
		n=$(basename "$f")
		cp "$f" $MNT/$n.v$vers || ok=0
	done
	sync
	echo 3 > /proc/sys/vm/drop_caches
	for f in /tmp/src/*; do
		n=$(basename "$f")
		want=$(md5sum < "$f")
		[ "$(md5sum < $MNT/$n.v$vers)" = "$want" ] || { ktap_print_msg "$n differs via mount"; ok=0; }
		[ "$(md5sum < $EXPORT/$n.v$vers)" = "$want" ] || { ktap_print_msg "$n differs on server"; ok=0; }
	done
	[ $ok = 1 ] && ktap_test_pass "v$vers: round trip checksums" ||
		ktap_test_fail "v$vers: round trip checksums"
	if grep -q 'xprt:.*rdma' /proc/self/mountstats; then
		ktap_test_pass "v$vers: mountstats has an rdma transport line"
	else
		ktap_test_fail "v$vers: mountstats has an rdma transport line"
	fi
	umount $MNT
done

nfsd_stop
ktap_finished
