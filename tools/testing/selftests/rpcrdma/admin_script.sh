#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# An administrator's script written for the C rpcrdma.ko, run unchanged against a transport
# module: rpcrdma_admin_stats.sh prints the client tunables (/proc/sys/sunrpc/rdma_*), the
# server tunables and statistics (/proc/sys/sunrpc/svc_rdma/*) and each RDMA mount's transport
# counters (mountstats), resets the statistics and tells how much they grew. In one guest, nfsd
# serves over the module's server transport and the mount goes over its client transport, looped
# back through rxe (as rs_nfs_loopback.sh). The module is loaded on demand by nfsd's request for
# "svcrdma" (rpcrdma_rs through a modprobe.d "install rpcrdma" line, as the admin guide
# recommends). Asserted: every name is present with a number and C's default; with a mount up,
# `rdma res show` lists the module's cm ids, QPs, CQs, PDs and MRs under its name (client and
# server); checksummed O_DIRECT I/O makes the statistics grow (Receives, RDMA Reads and Writes)
# and the mount's chunk counters too; a reset zeroes them; after umount and `rpc.nfsd 0` no RDMA
# object of the module is left; after unload the sysctls are gone.
#
#   RPCRDMA_MODULE  rs (default: rpcrdma_rs.ko) or c (the kernel's rpcrdma.ko), the reference
#                   that shows the script, and this test, are right for the C module
set -u
. "$(dirname "$0")/lib.sh"

SCRIPT=$RPCRDMA_SELFTEST_DIR/rpcrdma_admin_stats.sh
MODULE=${RPCRDMA_MODULE:-rs}
case $MODULE in
rs) MODNAME=rpcrdma_rs ;;
c) MODNAME=rpcrdma ;;
*) echo "RPCRDMA_MODULE must be rs or c" >&2; exit 1 ;;
esac
# What the C module creates (net/sunrpc/xprtrdma/transport.c, svc_rdma.c), with its defaults.
DEFAULTS="sunrpc.rdma_slot_table_entries=128 sunrpc.rdma_max_inline_read=4096
	sunrpc.rdma_max_inline_write=4096 sunrpc.rdma_inline_write_padding=0
	sunrpc.rdma_memreg_strategy=5 sunrpc.rdma_pad_optimize=0
	sunrpc.svc_rdma.max_requests=128 sunrpc.svc_rdma.max_req_size=4096
	sunrpc.svc_rdma.max_outbound_read_requests=16"
STATS="rdma_stat_read rdma_stat_recv rdma_stat_write rdma_stat_sq_starve rdma_stat_rq_starve
	rdma_stat_rq_poll rdma_stat_rq_prod rdma_stat_sq_poll rdma_stat_sq_prod"
# Statistics C never counts (always 0).
UNUSED="rdma_stat_rq_starve rdma_stat_rq_poll rdma_stat_rq_prod rdma_stat_sq_poll rdma_stat_sq_prod"
RES_TYPES="cm_id qp cq pd mr"
OUT=/tmp/admin
mkdir -p $OUT

# Value of "name = value" $1 in the script's output file $2.
value() { awk -v k="$1" '$1 == k && $2 == "=" { print $3 }' "$2"; }
# Lines of `rdma res show $1` owned by the module (kernel objects show "comm [NAME]"). The C
# module's QPs show as [rdma_cm]: rdma_create_qp() creates them with rdma_cm's KBUILD_MODNAME
# (rpcrdma_rs renames its own).
owner() { if [ "$1" = qp ] && [ $MODULE = c ]; then echo rdma_cm; else echo $MODNAME; fi; }
res_of() { rdma res show "$1" 2>/dev/null | grep -F "comm [$(owner "$1")]"; }
res_count() { res_of "$1" | wc -l; }

ktap_print_header
ktap_set_plan 16

modprobe sunrpc
modprobe nfsv3
# The transport is not loaded by hand: nfsd's "rdma 20049" asks for it (request_module
# "svcrdma", an alias of rpcrdma.ko), and for rpcrdma_rs modprobe's configuration redirects that
# request, as Documentation/admin-guide.md recommends ("install rpcrdma ..."; the guest's root is
# read-only, so /etc/modprobe.d gets a writable copy).
if [ $MODULE = rs ]; then
	cp -a /etc/modprobe.d /tmp/modprobe.d.orig 2>/dev/null || mkdir -p /tmp/modprobe.d.orig
	mount -t tmpfs tmpfs /etc/modprobe.d && cp -a /tmp/modprobe.d.orig/. /etc/modprobe.d/
	echo "install rpcrdma /sbin/modprobe -a sunrpc ib_core rdma_cm && /sbin/insmod $RPCRDMA_KO" \
		> /etc/modprobe.d/rpcrdma_rs.conf
fi
quiet rdma_link_up rxe && rdma_wait_active rxe0 || ktap_exit_fail_msg "rxe setup failed"
mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug
quiet nfsd_start rdma
if [ -d /sys/module/$MODNAME ] && [ "$(ls -d /sys/module/rpcrdma* | wc -l)" = 1 ]; then
	ktap_test_pass "nfsd's rdma listener loaded $MODNAME on demand (and nothing else)"
else
	ktap_test_fail "nfsd's rdma listener loaded $MODNAME on demand (and nothing else): $(ls -d /sys/module/rpcrdma* 2>&1 | tr '\n' ' ')"
	# Go on with the module loaded by hand.
	[ -d /sys/module/$MODNAME ] || quiet rpcrdma_transport_load $MODULE
	echo "rdma 20049" > /proc/fs/nfsd/portlist
fi
if grep -q '^rdma 20049' /proc/fs/nfsd/portlist; then
	ktap_test_pass "nfsd listens on rdma 20049 through $MODNAME"
else
	ktap_exit_fail_msg "nfsd rdma listener failed"
fi
ktap_print_msg "portlist: $(tr '\n' ';' < /proc/fs/nfsd/portlist)"
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
ktap_print_msg "tracepoints: $(ls /sys/kernel/tracing/events/rpcrdma 2>/dev/null | tr '\n' ' ')"

# --- the script's first look: names, numbers, C's defaults ------------------------------------
sh $SCRIPT show > $OUT/show0 2> $OUT/err0
rc=$?
sed 's/^/# /' $OUT/show0 $OUT/err0
grep -q "^# transport module: .*\b$MODNAME\b" $OUT/show0 &&
	ktap_test_pass "script: shows the transport module $MODNAME" ||
	ktap_test_fail "script: shows the transport module $MODNAME"
bad=""
for n in $DEFAULTS $(for s in $STATS; do echo sunrpc.svc_rdma.$s=; done); do
	k=${n%%=*}
	v=$(value $k $OUT/show0)
	[[ "$v" =~ ^[0-9]+$ ]] || bad="$bad $k(${v:-missing})"
done
[ $rc = 0 ] && [ -z "$bad" ] && [ ! -s $OUT/err0 ] &&
	ktap_test_pass "script: every tunable and statistic present with a number (exit 0)" ||
	ktap_test_fail "script: every tunable and statistic present with a number (exit $rc:$bad)"
bad=""
for n in $DEFAULTS; do
	v=$(value ${n%%=*} $OUT/show0)
	[ "$v" = "${n#*=}" ] || bad="$bad ${n%%=*}=${v:-missing}"
done
[ -z "$bad" ] && ktap_test_pass "script: tunables at C's defaults" ||
	ktap_test_fail "script: tunables at C's defaults (not:$bad)"

# --- a mount, and the RDMA objects `rdma res` lists under the module's name -------------------
if timeout $((120 * RPCRDMA_SLOW)) mount -t nfs -o vers=3,proto=rdma,port=20049 \
	$SRV_ADDR:$EXPORT $MNT; then
	ktap_test_pass "mount over $MODNAME (client and server, NFSv3)"
	mounted=1
else
	ktap_test_fail "mount over $MODNAME (client and server, NFSv3)"
	mounted=0
fi
stat $MNT >/dev/null 2>&1
for t in $RES_TYPES; do
	rdma res show $t 2>&1 | sed "s/^/# res $t: /"
done
# Client and server each own a connected cm id, a QP, two CQs and a PD; the listener has its
# own cm ids; MRs are the client's FRWR pool (the server needs none over rxe, an IB device).
ids=$(res_of cm_id)
lis=$(echo "$ids" | grep -c 'state LISTEN.*src-addr [^ ]*:20049')
srv=$(echo "$ids" | grep -v 'state LISTEN' | grep -c 'src-addr [^ ]*:20049 ')
cli=$(echo "$ids" | grep -v 'state LISTEN' | grep -c 'dst-addr [^ ]*:20049')
[ $mounted = 1 ] && [ "$lis" -ge 1 ] && [ "$srv" -ge 1 ] && [ "$cli" -ge 1 ] &&
	ktap_test_pass "rdma res show cm_id: listener ($lis), server ($srv) and client ($cli) under [$MODNAME]" ||
	ktap_test_fail "rdma res show cm_id: listener ($lis), server ($srv) and client ($cli) under [$MODNAME]"
bad=""
for tn in qp:2 cq:4 pd:2 mr:1; do
	n=$(res_count ${tn%:*})
	[ "$n" -ge ${tn#*:} ] || bad="$bad ${tn%:*}:$n<${tn#*:}"
	ktap_print_msg "rdma res show ${tn%:*}: $n under [$(owner ${tn%:*})]"
done
[ $mounted = 1 ] && [ -z "$bad" ] &&
	ktap_test_pass "rdma res show qp, cq, pd, mr: client's and server's under [$MODNAME] (QPs: [$(owner qp)])" ||
	ktap_test_fail "rdma res show qp, cq, pd, mr: client's and server's under [$MODNAME] (QPs: [$(owner qp)]; too few:$bad)"

# --- I/O: the statistics grow ---------------------------------------------------------------
sh $SCRIPT show > $OUT/show1 2>&1
head -c $((4 * 1048576 + 3)) /dev/urandom > /tmp/src
want=$(md5sum < /tmp/src)
# O_DIRECT 1 MiB: WRITEs whose data travels in Read chunks (the server's RDMA Reads), READs
# whose data comes back in Write chunks (its RDMA Writes).
ok=1
timeout $((300 * RPCRDMA_SLOW)) dd if=/tmp/src of=$MNT/f bs=1M oflag=direct status=none || ok=0
got=$(timeout $((300 * RPCRDMA_SLOW)) dd if=$MNT/f bs=1M iflag=direct status=none | md5sum)
[ "$got" = "$want" ] && [ "$(md5sum < $EXPORT/f)" = "$want" ] || ok=0
[ $mounted = 1 ] && [ $ok = 1 ] &&
	ktap_test_pass "4 MiB + 3 written and read back with O_DIRECT (md5 via the mount and on the server)" ||
	ktap_test_fail "4 MiB + 3 written and read back with O_DIRECT (md5 via the mount and on the server)"
sh $SCRIPT diff $OUT/show1 > $OUT/diff 2>&1
rc=$?
sed 's/^/# /' $OUT/diff
bad=""
for s in rdma_stat_recv rdma_stat_read rdma_stat_write; do
	d=$(awk -v k=sunrpc.svc_rdma.$s '$1 == k { print $2 }' $OUT/diff)
	[[ "$d" =~ ^\+[1-9][0-9]*$ ]] || bad="$bad $s:${d:-missing}"
done
for s in $UNUSED; do
	d=$(awk -v k=sunrpc.svc_rdma.$s '$1 == k { print $2 }' $OUT/diff)
	[ "$d" = +0 ] || bad="$bad $s:${d:-missing}"
done
[ $rc = 0 ] && [ -z "$bad" ] &&
	ktap_test_pass "script diff: Receives, RDMA Reads and RDMA Writes counted, the unused stay 0" ||
	ktap_test_fail "script diff: Receives, RDMA Reads and RDMA Writes counted, the unused stay 0 (exit $rc:$bad)"
sh $SCRIPT show > $OUT/show2 2>&1
ml1=$(grep "^mount $MNT:" $OUT/show1)
ml2=$(grep "^mount $MNT:" $OUT/show2)
ktap_print_msg "$ml2"
field() { echo "$1" | tr ' ' '\n' | awk -F= -v k="$2" '$1 == k { print $2 }'; }
bad=""
[ "$(echo "$ml2" | wc -w)" = $((2 + 27)) ] || bad="$bad fields:$(echo "$ml2" | wc -w)"
[ "$(field "$ml2" connect_count)" -ge 1 ] 2>/dev/null || bad="$bad connect_count"
for f in read_chunk_count write_chunk_count sends recvs; do
	[ "$(field "$ml2" $f)" -gt "$(field "$ml1" $f)" ] 2>/dev/null || bad="$bad $f"
done
[ $mounted = 1 ] && [ -z "$bad" ] &&
	ktap_test_pass "script: the mount's xprt counters named, Read and Write chunks grew" ||
	ktap_test_fail "script: the mount's xprt counters named, Read and Write chunks grew (not:$bad)"

# --- umount, reset ----------------------------------------------------------------------------
timeout $((120 * RPCRDMA_SLOW)) umount $MNT && ! grep -q "^mount $MNT:" <(sh $SCRIPT show 2>/dev/null) &&
	ktap_test_pass "umount (the script lists no RDMA mount)" || ktap_test_fail "umount"
sh $SCRIPT reset > $OUT/reset 2>&1
rc=$?
bad=""
for s in $STATS; do
	v=$(value sunrpc.svc_rdma.$s $OUT/reset)
	[ "$v" = 0 ] || bad="$bad $s=${v:-missing}"
done
[ $rc = 0 ] && [ -z "$bad" ] && ktap_test_pass "script reset: every statistic back to 0" ||
	ktap_test_fail "script reset: every statistic back to 0 (exit $rc:$bad)"

# --- nothing left once the mount and nfsd are gone ---------------------------------------------
nfsd_stop
left=""
for i in $(seq 1 $((30 * RPCRDMA_SLOW))); do
	left=""
	for t in $RES_TYPES; do
		n=$(res_count $t)
		[ "$n" = 0 ] || left="$left $t:$n"
	done
	[ -z "$left" ] && break
	sleep 1
done
[ -n "$left" ] && for t in $RES_TYPES; do res_of $t | sed "s/^/# left $t: /"; done
[ -z "$left" ] && rdma res show qp >/dev/null 2>&1 &&
	ktap_test_pass "after umount and rpc.nfsd 0: no cm id, QP, CQ, PD or MR under [$MODNAME]" ||
	ktap_test_fail "after umount and rpc.nfsd 0: no cm id, QP, CQ, PD or MR under [$MODNAME] (left:$left)"

case $MODULE in
rs) rpcrdma_rs_unload && ok=1 || ok=0 ;;
c) rmmod rpcrdma && ok=1 || ok=0 ;;
esac
[ $ok = 1 ] && ktap_test_pass "rmmod $MODNAME" || ktap_test_fail "rmmod $MODNAME"
sh $SCRIPT show > /dev/null 2>&1
rc=$?
[ ! -e /proc/sys/sunrpc/svc_rdma ] && [ ! -e /proc/sys/sunrpc/rdma_max_inline_read ] && [ $rc = 2 ] &&
	ktap_test_pass "after unload the sysctls are gone (the script exits 2)" ||
	ktap_test_fail "after unload the sysctls are gone (the script exits $rc)"
ktap_finished
