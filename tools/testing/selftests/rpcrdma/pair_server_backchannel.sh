#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The backchannel (RFC 8167) of our server transport, with the C client: rpcrdma_rs.ko serves
# NFS over RDMA in guest "srv" (192.0.2.1), the kernel's C rpcrdma.ko mounts it from guest "cli"
# (192.0.2.2), NFSv4.1 then NFSv4.2. Per version:
#  - the server's /proc/fs/nfsd/clients/*/info for the RDMA client shows "callback state: UP"
#    (nfsd's callback client was created over the connection and its CB_NULL was answered);
#  - the client opens a file the server made and keeps it open: its states show a delegation;
#  - a second client, an NFSv4.2/TCP mount on the server guest itself, writes the file: nfsd
#    recalls the delegation (CB_RECALL over our backchannel), the RDMA client returns it
#    (mountstats: DELEGRETURN), the write completes, the delegation is gone from the server's
#    states, and the client reads the second client's data back (md5).
# Then the client unmounts; the server stops nfsd and checks that no backchannel Reply was
# dropped (srv_drop_reply in debugfs rpcrdma_rs/backchannel), every RDMA object counter is back
# to zero and the module unloads with no RDMA object left.
#
# Both guests print KTAP. They meet through the server's export mounted by the client over
# NFSv3/TCP at $PAIR_CTL (pair_ctl_mount), never through the transport under test. Run by
# scripts/vm-pair.sh as "pair_server_backchannel.sh server" and "... client";
# RPCRDMA_DEV=rxe|siw (rxe), NFS_VERSIONS ("4.1 4.2").
set -u
. "$(dirname "$0")/lib.sh"

role=${1:?usage: $0 server|client}
RPCRDMA_DEV=${RPCRDMA_DEV:-rxe}
NFS_VERSIONS=${NFS_VERSIONS:-4.1 4.2}
NFS_VERSIONS=${NFS_VERSIONS//,/ }
CTL=$PAIR_CTL
# The server's own (second) client.
MNT2=/tmp/mnt2
# Longest wait for one step of the other guest.
WAIT=$((300 * RPCRDMA_SLOW))

# Server: the directory of /proc/fs/nfsd/clients of the NFSv4.$1 client at $CLI_ADDR.
rdma_client_dir() {
	local d
	for d in /proc/fs/nfsd/clients/*; do
		[ -r "$d/info" ] || continue
		grep -q "^address: \"$CLI_ADDR:" "$d/info" &&
			grep -q "^minor version: $1$" "$d/info" && { echo "$d"; return 0; }
	done
	return 1
}

# Server: wait up to $2 seconds until the command $1 (a string) succeeds.
poll() {
	local i
	for i in $(seq 1 "$2"); do
		eval "$1" && return 0
		sleep 1
	done
	return 1
}

if [ "$role" = server ]; then
	nv=$(echo $NFS_VERSIONS | wc -w)
	ktap_print_header
	ktap_set_plan $((nv * 5 + 3))
	pair_rdma_link_up $SRV_ADDR $RPCRDMA_DEV || ktap_exit_fail_msg "no $RPCRDMA_DEV link"
	dmesg -C
	rpcrdma_rs_load || ktap_exit_fail_msg "cannot load rpcrdma_rs.ko"
	# No delegation is granted while any lock manager is in its grace period (nfsd's, 10 s
	# here, and lockd's, 50 s by default: shortened to 10 s): wait them out before the first
	# open.
	modprobe lockd && echo 10 > /proc/sys/fs/nfs/nlm_grace_period
	nfsd_start rdma || ktap_exit_fail_msg "nfsd has no rdma listener"
	started=$SECONDS
	mkdir -p $MNT2
	for v in $NFS_VERSIONS; do
		m=${v#4.}
		head -c 65536 /dev/urandom > $EXPORT/f$v
		md5sum < $EXPORT/f$v | cut -d' ' -f1 > $EXPORT/a$v
		while [ $((SECONDS - started)) -lt 25 ]; do sleep 1; done
		touch $EXPORT/ready$v
		if ! poll "[ -e $EXPORT/opened$v ]" $WAIT; then
			ktap_test_fail "NFSv$v: the client never opened the file"
			continue
		fi
		d=
		poll 'd=$(rdma_client_dir '$m')' 30
		ktap_print_msg "NFSv$v: client ${d:-not found}"
		[ -n "$d" ] && sed 's/^/# /' $d/info
		poll "[ -n \"$d\" ] && grep -q '^callback state: UP$' $d/info" $((30 * RPCRDMA_SLOW)) &&
			ktap_test_pass "NFSv$v: callback state UP over RDMA" ||
			ktap_test_fail "NFSv$v: callback state UP over RDMA ($(grep 'callback state' $d/info 2>/dev/null))"
		poll "[ -n \"$d\" ] && grep -q 'type: deleg' $d/states" 20 &&
			ktap_test_pass "NFSv$v: a read delegation is granted" ||
			{ sed 's/^/# /' $d/states 2>/dev/null; ktap_test_fail "NFSv$v: a read delegation is granted"; }
		# The conflicting open: a second client writes the file through a TCP mount here.
		head -c 65536 /dev/urandom > /tmp/b$v
		cb_trace_start || ktap_print_msg "no tracefs: the callback round trip is not measured"
		start=$SECONDS
		timeout $((120 * RPCRDMA_SLOW)) mount -t nfs -o vers=4.2,proto=tcp 127.0.0.1:/ $MNT2 &&
			timeout $((120 * RPCRDMA_SLOW)) cp /tmp/b$v $MNT2/f$v && sync $MNT2/f$v &&
			umount $MNT2 &&
			ktap_test_pass "NFSv$v: a second client (TCP) writes the file ($((SECONDS - start)) s)" ||
			ktap_test_fail "NFSv$v: a second client (TCP) writes the file"
		mountpoint -q $MNT2 && umount -f $MNT2
		poll "[ -n \"$d\" ] && ! grep -q 'type: deleg' $d/states" 20
		gone=$?
		ktap_print_msg "NFSv$v: callback round trip $(cb_trace_rtt $CLI_ADDR) us"
		[ $gone = 0 ] &&
			ktap_test_pass "NFSv$v: the delegation was recalled and is gone" ||
			{ sed 's/^/# /' $d/states 2>/dev/null; ktap_test_fail "NFSv$v: the delegation was recalled and is gone"; }
		[ -n "$d" ] && grep -q '^admin-revoked states: 0$' $d/info &&
			ktap_test_pass "NFSv$v: no state revoked" ||
			ktap_test_fail "NFSv$v: no state revoked ($(grep revoked $d/info 2>/dev/null))"
		md5sum < /tmp/b$v | cut -d' ' -f1 > $EXPORT/b$v
		touch $EXPORT/written$v
	done
	pair_wait_client_done || true
	nfsd_stop
	sleep 2
	[ "$(rpcrdma_bc_counter srv_drop_reply)" = 0 ] &&
		ktap_test_pass "no backchannel Reply dropped" ||
		ktap_test_fail "no backchannel Reply dropped (srv_drop_reply: $(rpcrdma_bc_counter srv_drop_reply))"
	rpcrdma_counters_zero 30 &&
		ktap_test_pass "every RDMA object counter back to zero" ||
		ktap_test_fail "every RDMA object counter back to zero"
	# The backchannel transport goes on sunrpc's workqueue after the connection: retry a while.
	for i in $(seq 1 30); do rpcrdma_rs_unload && break; sleep 1; done
	echo "pair_server_backchannel: rmmod tried $i times" > /dev/kmsg
	! lsmod | grep -q '^rpcrdma_rs ' &&
		dmesg_has "rpcrdma_rs: unregistering transports; rdma objects still live: 0$" &&
		ktap_test_pass "rmmod rpcrdma_rs (still live: 0)" ||
		{ dmesg | grep rpcrdma_rs | tail -5 | sed 's/^/# /'; ktap_test_fail "rmmod rpcrdma_rs (still live: 0)"; }
	dmesg | grep -E 'rpcrdma_rs|rdma connection|callback' | head -20 | sed 's/^/# /'
	echo "pair_server_backchannel: server done" > /dev/kmsg
	ktap_finished
fi

nv=$(echo $NFS_VERSIONS | wc -w)
ktap_print_header
ktap_set_plan $((nv * 4))
pair_rdma_link_up $CLI_ADDR $RPCRDMA_DEV || ktap_exit_fail_msg "no $RPCRDMA_DEV link"
modprobe rpcrdma
modprobe nfsv4
pair_ctl_mount || ktap_exit_fail_msg "no control mount of the server's export"
mkdir -p $MNT
for v in $NFS_VERSIONS; do
	if ! wait_file $CTL/ready$v $WAIT; then
		ktap_test_fail "NFSv$v: the server never got ready"
		continue
	fi
	ok=0
	for i in $(seq 1 10); do
		timeout 120 mount -t nfs -o vers=$v,proto=rdma,port=20049 $SRV_ADDR:/ $MNT 2>/tmp/mount.err &&
			{ ok=1; break; }
		sleep 3
	done
	if [ $ok = 0 ]; then
		sed 's/^/# /' /tmp/mount.err
		ktap_test_fail "NFSv$v: mount over $RPCRDMA_DEV"
		touch $CTL/opened$v
		continue
	fi
	ktap_test_pass "NFSv$v: mount over $RPCRDMA_DEV"
	# Open for reading and keep it open: nfsd grants a read delegation on this OPEN.
	exec 3< $MNT/f$v
	[ "$(md5sum <&3 | cut -d' ' -f1)" = "$(cat $CTL/a$v)" ] &&
		ktap_test_pass "NFSv$v: the server's file reads back (md5)" ||
		ktap_test_fail "NFSv$v: the server's file reads back (md5)"
	touch $CTL/opened$v
	wait_file $CTL/written$v $WAIT || ktap_print_msg "NFSv$v: the server never wrote the file"
	# The delegation was recalled and returned: the page cache is revalidated, so the second
	# client's data comes back.
	[ "$(md5sum < $MNT/f$v | cut -d' ' -f1)" = "$(cat $CTL/b$v 2>/dev/null)" ] &&
		ktap_test_pass "NFSv$v: the second client's data reads back (md5)" ||
		ktap_test_fail "NFSv$v: the second client's data reads back (md5)"
	exec 3<&-
	# mountstats' per-op line: "DELEGRETURN: ops ntrans ...".
	n=$(awk -v m="$MNT" '$1 == "device" { on = ($5 == m) } on && $1 == "DELEGRETURN:" { print $2; exit }' \
		/proc/self/mountstats)
	[ "${n:-0}" -gt 0 ] &&
		ktap_test_pass "NFSv$v: the delegation was returned (DELEGRETURN x$n)" ||
		ktap_test_fail "NFSv$v: the delegation was returned (DELEGRETURN x${n:-0})"
	umount $MNT || umount -f $MNT
done
touch $CTL/done
sync
umount -f $CTL 2>/dev/null
ktap_finished
