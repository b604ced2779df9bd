#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Our server transport against the C client: rpcrdma_rs.ko serves NFS over RDMA in guest
# "srv" (192.0.2.1), the kernel's C rpcrdma.ko mounts it from guest "cli" (192.0.2.2) for
# NFSv3, 4.0, 4.1 and 4.2. Per version: files of edge sizes written and read back (md5 on
# both sides), mkdir and readdir of a directory of 5,000 entries, a symlink and a long name,
# umount. Then a mount with rsize=wsize=4194304 (nfsd's largest payload) moves 16 MiB in 4 MiB
# O_DIRECT writes and reads (md5); the server stops nfsd with the client still connected and
# unloads the module with no RDMA object left. On the debug kernel the largest file is 16 MiB
# and the mounts' timeo is scaled (lib.sh, NFS_BIG).
#
# Creating 5,000 files over NFS takes about ten minutes per version under emulation, so the
# server creates them in $EXPORT/big before nfsd starts; the client reads the directory back
# (READDIR replies far larger than the inline threshold, through the Reply chunk) and creates
# a directory of its own with $DIR_FILES files.
#
# Run by scripts/vm-pair.sh as "pair_server_nfs.sh server [rxe|siw]" and
# "pair_server_nfs.sh client [rxe|siw]"; the client prints KTAP, the server's exit status
# is its verdict (it writes its own checks to $EXPORT/server.result for the client).
set -u
. "$(dirname "$0")/lib.sh"

role=${1:?usage: $0 server|client [rxe|siw]}
dev=${2:-${RPCRDMA_PAIR_DEV:-rxe}}
VERSIONS=${RPCRDMA_PAIR_VERSIONS:-"3 4.0 4.1 4.2"}
SIZES="0 1 1023 1024 4095 4096 4097 65536 $((1048576 + 3)) $NFS_BIG"
DIR_FILES=${RPCRDMA_PAIR_DIR_FILES:-100}

if [ "$role" = server ]; then
	pair_rdma_link_up $SRV_ADDR $dev
	dmesg -C
	rpcrdma_rs_load || exit 1
	mkdir -p $EXPORT
	mountpoint -q $EXPORT || mount -t tmpfs -o size=1200M tmpfs $EXPORT
	mkdir $EXPORT/big && (cd $EXPORT/big && seq -f 'entry-%05g' 1 5000 | xargs touch)
	# nfsd's largest payload (4 MiB) whatever the guest's memory: the client's last mount asks
	# for rsize=wsize=4194304.
	NFSD_MAX_BLOCK_SIZE=4194304 nfsd_start rdma || { echo "server: rdma listener not created"; exit 1; }
	echo "server ready (max_block_size $(cat /proc/fs/nfsd/max_block_size))"
	pair_wait_client_done || exit 1
	# The client's checksums, recomputed from the server's copy of each file.
	bad=0
	while read -r sum name; do
		[ "$(md5sum < "$EXPORT/$name" | cut -d' ' -f1)" = "$sum" ] ||
			{ echo "server: checksum of $name differs"; bad=1; }
	done < $EXPORT/sums
	[ $bad = 0 ] && echo "server: all checksums match"
	[ -s $EXPORT/sums ] || { echo "server: the client sent no checksums"; bad=1; }
	# The client is still connected (it only lazily unmounted): stop nfsd under it.
	rpc.nfsd 0 || { echo "server: rpc.nfsd 0 failed"; bad=1; }
	exportfs -ua
	sleep 2
	rpcrdma_rs_unload || { echo "server: rmmod failed"; bad=1; }
	dmesg_has "rpcrdma_rs: unregistering transports; rdma objects still live: 0$" ||
		{ echo "server: rdma objects leaked"; dmesg | grep rpcrdma_rs | tail -5; bad=1; }
	dmesg | grep -E 'rpcrdma_rs|svcrdma|rdma connection' | head -20
	exit $bad
fi

ktap_print_header
ntests=0
for v in $VERSIONS; do ntests=$((ntests + 4)); done
ktap_set_plan $((ntests + 1))
pair_rdma_link_up $CLI_ADDR $dev
modprobe rpcrdma
modprobe nfsv4
mkdir -p $MNT /tmp/src
for s in $SIZES; do head -c $s /dev/urandom > /tmp/src/f$s; done
: > /tmp/sums
first=1
for v in $VERSIONS; do
	ok=0
	# The server may still be starting; a mount that hangs is a failure.
	tries=2
	[ -n "$first" ] && tries=10
	for i in $(seq 1 $tries); do
		# shellcheck disable=SC2046 # the arguments are words without spaces
		timeout 120 mount $(nfs_rdma_args $v "$([ $v = 3 ] && echo nolock)") 2>/tmp/mount.err &&
			{ ok=1; break; }
		sleep 3
	done
	first=
	if [ $ok = 0 ]; then
		sed 's/^/# /' /tmp/mount.err
		dmesg | tail -20 | sed 's/^/# /'
		ktap_test_fail "NFSv$v: mount over $dev"
		for t in io dir umount; do ktap_test_skip "NFSv$v: $t (not mounted)"; done
		continue
	fi
	ktap_test_pass "NFSv$v: mount over $dev"
	d=$MNT/v$v
	[ "$v" = 3 ] || d=$MNT/v$v
	mkdir -p $d
	bad=""
	for s in $SIZES; do
		cp /tmp/src/f$s $d/f$s || { bad="$bad write:$s"; continue; }
	done
	sync
	echo 3 > /proc/sys/vm/drop_caches
	for s in $SIZES; do
		want=$(md5sum < /tmp/src/f$s | cut -d' ' -f1)
		got=$(md5sum < $d/f$s | cut -d' ' -f1)
		[ "$want" = "$got" ] || bad="$bad read:$s"
		echo "$want v$v/f$s" >> /tmp/sums
	done
	[ -z "$bad" ] && ktap_test_pass "NFSv$v: $(echo $SIZES | wc -w) files written and read back (md5)" ||
		ktap_test_fail "NFSv$v: files differ:$bad"
	echo "# NFSv$v: I/O done at $(date +%T)"
	long=$(printf 'n%.0s' $(seq 1 250))
	big=$MNT/big
	mkdir $d/dir && (cd $d/dir && seq 1 $DIR_FILES | xargs touch) &&
		ln -s f4096 $d/link && echo hi > "$d/$long" && sync &&
		echo 3 > /proc/sys/vm/drop_caches &&
		[ "$(ls $d/dir | wc -l)" = $DIR_FILES ] && [ "$(ls -l $big | grep -c entry-)" = 5000 ] &&
		[ "$(ls $big | md5sum)" = "$(seq -f 'entry-%05g' 1 5000 | md5sum)" ] &&
		[ "$(readlink $d/link)" = f4096 ] && [ "$(cat "$d/$long")" = hi ] &&
		ktap_test_pass "NFSv$v: mkdir, readdir of 5000 entries, symlink, long name" ||
		ktap_test_fail "NFSv$v: mkdir, readdir of 5000 entries, symlink, long name"
	echo "# NFSv$v: directory done at $(date +%T)"
	umount $MNT && ktap_test_pass "NFSv$v: umount" || ktap_test_fail "NFSv$v: umount"
done
# rsize=wsize=4194304, nfsd's largest payload (the server raised max_block_size to it): the C
# client's transport carries at most 1 MiB per READ or WRITE, so the mount settles on that;
# 16 MiB of 4 MiB O_DIRECT writes and reads must round trip by md5 (the server's chunk limits
# themselves are checked at 4 MiB by server_hostile.sh). Then hand the checksums to the server
# and release it while still connected: the server stops nfsd with this client's connection up.
# shellcheck disable=SC2046 # the arguments are words without spaces
if timeout 120 mount $(nfs_rdma_args 4.2 rsize=4194304,wsize=4194304) 2>/tmp/mount.err; then
	sizes=$(grep " $MNT " /proc/mounts | grep -o 'rsize=[0-9]*,wsize=[0-9]*')
	if [ "$NFS_BIG" -lt $((16 * 1048576)) ]; then
		ktap_test_fail "NFSv4.2 rsize=wsize=4194304 mount: NFS_BIG=$NFS_BIG, this case copies the first 16 MiB of that file"
	else
		want=$(head -c $((16 * 1048576)) /tmp/src/f$NFS_BIG | md5sum | cut -d' ' -f1)
		dd if=/tmp/src/f$NFS_BIG of=$MNT/f16m bs=4M count=4 oflag=direct status=none &&
			echo 3 > /proc/sys/vm/drop_caches &&
			got=$(dd if=$MNT/f16m bs=4M iflag=direct status=none | md5sum | cut -d' ' -f1) &&
			[ "$got" = "$want" ] &&
			ktap_test_pass "NFSv4.2 rsize=wsize=4194304 mount: 4 MiB O_DIRECT writes and reads round trip ($sizes)" ||
			ktap_test_fail "NFSv4.2 rsize=wsize=4194304 mount: 4 MiB O_DIRECT writes and reads round trip ($sizes)"
		echo "$want f16m" >> /tmp/sums
	fi
	cp /tmp/sums $MNT/sums && touch $MNT/done && sync
	umount -l $MNT
else
	sed 's/^/# /' /tmp/mount.err
	ktap_test_fail "NFSv4.2 rsize=wsize=4194304 mount (mount failed)"
fi
ktap_finished
