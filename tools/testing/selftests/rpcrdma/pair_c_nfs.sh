#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The two-guest bench: the C rpcrdma.ko serves NFSv4.2 over rxe in guest "srv" (192.0.2.1) and
# mounts it from guest "cli" (192.0.2.2) across the virtual link. Run by scripts/vm-pair.sh as
# "pair_c_nfs.sh server" in one guest and "pair_c_nfs.sh client" in the other; the client
# prints KTAP, the server exits non-zero if it never saw the client's file.
set -u
. "$(dirname "$0")/lib.sh"

role=${1:?usage: $0 server|client}
if [ "$role" = server ]; then
	pair_link_up $SRV_ADDR
	modprobe rpcrdma
	nfsd_start rdma || exit 1
	echo "server ready"
	pair_wait_client_done || exit 1
	# The client wrote the expected checksum next to the file; check it here too.
	[ "$(md5sum < $EXPORT/f)" = "$(cat $EXPORT/f.md5)" ] || { echo "server: checksum differs"; exit 1; }
	echo "server: checksum matches"
	exit 0
fi

ktap_print_header
ktap_set_plan 3
pair_link_up $CLI_ADDR
modprobe rpcrdma
modprobe nfsv4
mkdir -p $MNT
ok=0
for i in $(seq 1 90); do
	mount -t nfs -o vers=4.2,proto=rdma,port=20049 $SRV_ADDR:/ $MNT 2>/dev/null && { ok=1; break; }
	sleep 2
done
[ $ok = 1 ] && ktap_test_pass "cli mounts srv over rxe across the link" ||
	ktap_exit_fail_msg "cli could not mount srv"
head -c $((4 * 1048576 + 3)) /dev/urandom > /tmp/f
want=$(md5sum < /tmp/f)
cp /tmp/f $MNT/f && sync && echo 3 > /proc/sys/vm/drop_caches
[ "$(md5sum < $MNT/f)" = "$want" ] && ktap_test_pass "4 MiB+3 round trip checksum" ||
	ktap_test_fail "4 MiB+3 round trip checksum"
echo "$want" > $MNT/f.md5
touch $MNT/done
umount $MNT && ktap_test_pass "umount" || ktap_test_fail "umount"
ktap_finished
