#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# RPC-over-RDMA version 2 with rpcrdma_rs on both ends, in one guest (rxe loopback): the module
# refuses max_version=3 and keepalive=3601 at load and describes both parameters for modinfo; loaded with
# max_version=2, nfsd serves over our server transport and NFSv3, 4.0, 4.1 and 4.2 mounts go over
# our client, which offers version 2 on each new connection. Per mount: files below, at and well
# above the inline threshold round trip (md5 through the mount and on the exported file
# system); for NFSv3 and v4.2, O_DIRECT writes and reads of every size from 3300 to 3900 bytes (4-byte steps: XDR
# pads every message to 4 bytes) and within 256 bytes of 8192 and 12288 (32-byte steps), so
# that calls and replies just below, at and just above the client's inline limit (the threshold
# less the largest header), and of twice and three times the threshold, go on the wire, inline
# below it and above it continued (F_MORE: several Sends, no registration) or, when credits or
# Receives run short, with Read and Write chunks (mountstats), each read back through the
# mount and compared byte for byte, as the server stored it too; continued calls and replies
# were reassembled message for message as sent (debugfs), continued replies included through
# a second mount with rsize=8192
# whose 8 KiB READDIR replies come continued (a READ's data keeps its Write chunk: faster);
# Read, Write and Reply chunks are used (mountstats), calls too large
# for one message without a payload (ACLs, an xattr) go continued in place of Position-Zero Read
# chunks (none used), and the
# debugfs rpcrdma_rs/versions counters prove every call and reply went as version 2 on both
# sides: client and server calls in version 2, replies in version 2, connections settled on
# version 2, no call in version 1, no fallback, no ERR_VERS or other RDMA2_ERROR. Each end sent
# its transport properties (RDMA2_CONNPROP) once per connection and the other applied them
# (Receive Buffer Size 4096: the send thresholds stay 4096, as the kernel log says), and replies
# invalidated the handle their call named in rdma_inv_handle (remote invalidation of version 2:
# calls naming one, replies sent and received With Invalidate). (nfsd sends a 4.1+ client no
# CB_NULL probe, so callbacks here are by chance: pair_backchannel.sh with RPCRDMA_MAX_VERSION=2
# recalls delegations over version 2.) Then umount,
# `rpc.nfsd 0`, every object counter at zero and rmmod with "still live: 0".
#
#   RPCRDMA_DEV     rxe (default) or siw
#   NFS_VERSIONS    versions, in order (default "3 4.0 4.1 4.2")
#   SWEEP_VERSIONS  versions that also run the size sweep (default "3 4.2")
set -u
. "$(dirname "$0")/lib.sh"

DEV=${RPCRDMA_DEV:-rxe}
VERSIONS=${NFS_VERSIONS:-3 4.0 4.1 4.2}
SIZES="0 1 1023 1024 4095 4096 4097 65536 1048579 8388608"
V=/sys/kernel/debug/rpcrdma_rs/versions

ktap_print_header
# The size sweep runs for the versions of SWEEP_VERSIONS (default NFSv3 and v4.2: the two ends of
# the call header sizes; it costs about a minute per version under TCG).
SWEEP_VERSIONS=${SWEEP_VERSIONS:-3 4.2}
sweeps() { [[ " $SWEEP_VERSIONS " == *" $1 "* ]]; }
nsweep=0
for v in $VERSIONS; do sweeps $v && nsweep=$((nsweep + 1)); done
ktap_set_plan $((4 + 8 * $(echo $VERSIONS | wc -w) + nsweep + 2))

modprobe sunrpc
modprobe nfsv3
modprobe nfsv4
mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug

# max_version is 1 or 2: anything else refuses the load; modinfo describes it.
desc=$(modinfo -F parm "$RPCRDMA_KO" | grep '^max_version:')
if ! quiet rpcrdma_rs_load max_version=3 && [ ! -d /sys/module/rpcrdma_rs ] &&
	dmesg_has "max_version=3 is out of range" && [ -n "$desc" ]; then
	ktap_test_pass "max_version=3 refused at load; modinfo: ${desc:0:60}..."
else
	ktap_test_fail "max_version=3 refused at load (module loaded: $([ -d /sys/module/rpcrdma_rs ] && echo yes || echo no), modinfo: ${desc:-none})"
	rmmod rpcrdma_rs 2>/dev/null
fi
# keepalive is 0 to 3600 seconds: 3601 refuses the load; modinfo describes it.
desc=$(modinfo -F parm "$RPCRDMA_KO" | grep '^keepalive:')
if ! quiet rpcrdma_rs_load max_version=2 keepalive=3601 && [ ! -d /sys/module/rpcrdma_rs ] &&
	dmesg_has "keepalive=3601 is out of range" && [ -n "$desc" ]; then
	ktap_test_pass "keepalive=3601 refused at load; modinfo: ${desc:0:60}..."
else
	ktap_test_fail "keepalive=3601 refused at load (module loaded: $([ -d /sys/module/rpcrdma_rs ] && echo yes || echo no), modinfo: ${desc:-none})"
	rmmod rpcrdma_rs 2>/dev/null
fi
if quiet rpcrdma_rs_load max_version=2 && quiet rdma_link_up $DEV && rdma_wait_active ${DEV}0 &&
	[ "$(awk '$1 == "max_version:" { print $2 }' $V)" = 2 ]; then
	ktap_test_pass "rpcrdma_rs.ko loaded with max_version=2, $DEV up"
else
	ktap_exit_fail_msg "setup failed"
fi
if quiet nfsd_start rdma && grep -q '^rdma 20049' /proc/fs/nfsd/portlist; then
	ktap_test_pass "nfsd listens on rdma 20049 through rpcrdma_rs"
else
	ktap_exit_fail_msg "nfsd rdma listener failed"
fi
mkdir -p $EXPORT/big
(cd $EXPORT/big && seq -f 'entry-with-a-longer-name-%05g' 1 2000 | xargs touch)
mkdir -p /tmp/src
for s in $SIZES; do head -c $s /dev/urandom > /tmp/src/f$s; done
head -c 12544 /dev/urandom > /tmp/src/b

# The versions counter $1 (e.g. client_calls_v2).
vc() { awk -v k="$1" '$1 == k { print $2 }' $V; }
VERS_KEYS="client_calls_v1 client_calls_v2 client_replies_v1 client_replies_v2 client_offers_v2
client_conns_v1 client_conns_v2 client_fallbacks server_calls_v1 server_calls_v2 server_conns_v1
server_conns_v2 server_err_vers server_errors_v2 client_inv_handles client_reminv_v2
client_connprops_sent client_connprops_received client_connprops_bad server_reminv_v2
server_connprops_sent server_connprops_received server_connprops_bad client_backward_v2
server_backward_v2 client_continued client_continued_msgs client_continuation_dropped
client_continued_asked client_continued_short server_sent_continued server_sent_continued_msgs
client_sent_continued client_sent_continued_msgs server_continued server_continued_msgs"
# "key=value ..." of every versions counter. Both helpers are shell builtins only: a process
# costs tens of milliseconds in a TCG guest, and they run some 500 times per NFS version.
vsnap() {
	local k v out=
	local -A m
	while read -r k v; do m[$k]=$v; done <$V
	for k in $VERS_KEYS; do out+="$k=${m[$k]-} "; done
	printf '%s' "$out"
}
# The growth of counter $1 between the snapshots $2 and $3.
vdelta() {
	local a= b= p
	for p in $2; do [[ $p == "$1="* ]] && a=${p#*=}; done
	for p in $3; do [[ $p == "$1="* ]] && b=${p#*=}; done
	echo $((${b:-0} - ${a:-0}))
}

for v in $VERSIONS; do
	path=$EXPORT
	[ $v = 3 ] || path=/
	before=$(vsnap)
	if ! timeout 120 mount -t nfs -o vers=$v,proto=rdma,port=20049 $SRV_ADDR:$path $MNT; then
		ktap_test_fail "v$v: mount with max_version=2"
		for t in files $(sweeps $v && echo boundaries) chunks no-position-zero versions properties continued umount; do
			ktap_test_fail "v$v: $t (not mounted)"
		done
		continue
	fi
	ktap_test_pass "v$v: mount with max_version=2"
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
	n=$(timeout 300 ls $d/big | wc -l)
	[ "$n" = 2000 ] || bad="$bad readdir:$n"
	lt=$(printf 'v%s/%03997d' "$v" 0 | head -c 4000)
	ln -s "$lt" $d/v$v/longlink
	echo 3 > /proc/sys/vm/drop_caches
	[ "$(readlink $d/v$v/longlink)" = "$lt" ] || bad="$bad longlink"
	[ -z "$bad" ] && ktap_test_pass "v$v: $(echo $SIZES | wc -w) files, a 2000-entry readdir and a 4000-byte symlink (md5 via the mount and on the server)" ||
		ktap_test_fail "v$v: files, readdir, symlink:$bad"
	# Sizes around the inline threshold (4096 both ways between our ends), twice and three
	# times it: one O_DIRECT WRITE and one READ each, whose calls and replies straddle the
	# threshold by their headers' few hundred bytes.
	line=$(grep -m1 'xprt:' /proc/self/mountstats)
	if sweeps $v; then
		bsizes="$(seq 3300 4 3900) $(seq 7936 32 8448) $(seq 12032 32 12544)"
		bad="" sweep0=$(vsnap)
		# Per size, as dd oflag=direct and iflag=direct would (one write(2), one read(2) of
		# the whole size on an O_DIRECT file: one WRITE and one READ), in one process (a
		# process costs tens of milliseconds here): the first s bytes of the source written
		# through the mount, read back through it, and both that and the server's file byte
		# for byte the source.
		bad+=$(python3 - /tmp/src/b $d/v$v $EXPORT/v$v $bsizes <<-'PY'
			import os
			import sys
			src = open(sys.argv[1], "rb").read()
			def io(path, flags, op):
			    """op(fd) on path opened with flags; False if it fails."""
			    try:
			        fd = os.open(path, flags, 0o644)
			        try:
			            return op(fd)
			        finally:
			            os.close(fd)
			    except OSError:
			        return False
			for s in map(int, sys.argv[4:]):
			    path, want = f"{sys.argv[2]}/b{s}", src[:s]
			    if not io(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DIRECT,
			              lambda fd: os.write(fd, want) == s):
			        print(f" write:{s}", end="")
			        continue
			    if not io(path, os.O_RDONLY | os.O_DIRECT, lambda fd: os.read(fd, s) == want):
			        print(f" read:{s}", end="")
			    if not io(f"{sys.argv[3]}/b{s}", os.O_RDONLY, lambda fd: os.read(fd, s + 1) == want):
			        print(f" server:{s}", end="")
			PY
		) || bad="$bad sweep-failed"
		line2=$(grep -m1 'xprt:' /proc/self/mountstats)
		rw=$(echo "$line $line2" | awk '{ n = NF / 2; print $(n + 13) - $13, $(n + 14) - $14 }')
		nb=$(echo $bsizes | wc -w)
		# WRITE calls and READ replies above the threshold go continued (F_MORE) rather than
		# in a Read or Write chunk while the server's credits and the client's Receives allow.
		sweep1=$(vsnap)
		cw=$(vdelta client_sent_continued "$sweep0" "$sweep1")
		cr=$(vdelta client_continued "$sweep0" "$sweep1")
		w=$((${rw% *} + cw)) r=$((${rw#* } + cr))
		# Both sides of the threshold: some writes and reads inline, some chunked or continued.
		[ -z "$bad" ] && [ $w -gt 0 ] && [ $w -lt $nb ] && [ $r -gt 0 ] && [ $r -lt $nb ] &&
			ktap_test_pass "v$v: $nb O_DIRECT writes and reads around 1, 2 and 3 times the inline threshold, inline and chunked or continued (byte for byte via the mount and on the server; Read and Write chunks +$rw, continued calls +$cw, replies +$cr)" ||
			ktap_test_fail "v$v: $nb O_DIRECT writes and reads around the inline threshold, inline and chunked or continued:${bad:- none bad} (Read and Write chunks +$rw, continued calls +$cw, replies +$cr)"
	fi
	line=$(grep -m1 'xprt:' /proc/self/mountstats)
	ktap_print_msg "v$v $line"
	echo "$line" | awk '$2 == "rdma" && $13 > 0 && $14 > 0 && $15 > 0 { ok = 1 } END { exit !ok }' &&
		ktap_test_pass "v$v: mountstats: read, write and reply chunks used" ||
		ktap_test_fail "v$v: mountstats: read, write and reply chunks used"
	# Calls larger than one message with no DDP-eligible payload (ACLs, an xattr), which take
	# a Position-Zero Read chunk in version 1, go continued (F_MORE) in its place.
	touch $d/v$v/nomsg
	nomsg0=$(vsnap)
	ktap_print_msg "v$v: $(rpcrdma_nomsg_calls $d/v$v/nomsg)"
	cc=$(vdelta client_sent_continued "$nomsg0" "$(vsnap)")
	pz=$(mountstats_rdma_grew "$line" "$(grep -m1 'xprt:' /proc/self/mountstats)" $MOUNTSTATS_NOMSG)
	# (The helper reports a counter that did not grow as "NOT ALL USED": here that is the aim.)
	pz=${pz%: NOT ALL USED}
	[ "$cc" -gt 0 ] && [ "$pz" = "position-zero +0" ] &&
		ktap_test_pass "v$v: calls too large for one message without a payload went continued in place of position-zero Read chunks (continued calls +$cc, $pz)" ||
		ktap_test_fail "v$v: calls too large for one message without a payload went continued in place of position-zero Read chunks (continued calls +$cc, $pz)"
	# READDIR replies of 8 KiB: rsize caps the client's directory reads, so a second mount
	# with rsize=8192 (the same transport) lists the 2000 entries in replies too large for one
	# message and without a DDP-eligible payload, which come continued.
	mkdir -p /tmp/mnt8k
	n8k=none
	if timeout 120 mount -t nfs -o vers=$v,proto=rdma,port=20049,rsize=8192 $SRV_ADDR:$path /tmp/mnt8k; then
		d8k=/tmp/mnt8k
		[ -d $d8k$EXPORT/big ] && d8k=$d8k$EXPORT
		n8k=$(timeout 300 ls $d8k/big | wc -l)
		timeout 120 umount /tmp/mnt8k || n8k="$n8k, umount failed"
	fi
	after=$(vsnap)
	ktap_print_msg "v$v versions: $(for k in $VERS_KEYS; do printf '%s+%s ' $k $(vdelta $k "$before" "$after"); done)"
	ok=1
	for k in client_calls_v2 client_replies_v2 client_offers_v2 client_conns_v2 server_calls_v2 server_conns_v2; do
		[ "$(vdelta $k "$before" "$after")" -gt 0 ] || { ktap_print_msg "$k did not grow"; ok=0; }
	done
	for k in client_calls_v1 client_replies_v1 client_conns_v1 client_fallbacks server_calls_v1 \
		server_conns_v1 server_err_vers server_errors_v2; do
		[ "$(vdelta $k "$before" "$after")" = 0 ] || { ktap_print_msg "$k grew"; ok=0; }
	done
	# Every call went as version 2 and was answered in version 2; the server served each.
	c=$(vdelta client_calls_v2 "$before" "$after") r=$(vdelta client_replies_v2 "$before" "$after")
	s=$(vdelta server_calls_v2 "$before" "$after")
	[ "$c" -ge "$r" ] && [ "$r" -gt 100 ] && [ "$s" -ge "$r" ] || { ktap_print_msg "calls $c replies $r served $s"; ok=0; }
	[ $ok = 1 ] && ktap_test_pass "v$v: version 2 on both ends: $c calls, $r replies, $s served, no version 1, no fallback, no error" ||
		ktap_test_fail "v$v: version 2 on both ends (calls $c, replies $r, served $s)"
	# Transport properties, each way once per connection, and remote invalidation.
	dv() { vdelta $1 "$before" "$after"; }
	cs=$(dv client_connprops_sent) cr=$(dv client_connprops_received)
	ss=$(dv server_connprops_sent) sr=$(dv server_connprops_received)
	got="connprops client sent $cs got $cr, server sent $ss got $sr, bad $(dv client_connprops_bad)+$(dv server_connprops_bad); inv handles $(dv client_inv_handles), remote invalidations sent $(dv server_reminv_v2) seen $(dv client_reminv_v2)"
	ok=1
	[ "$cs" -ge 1 ] && [ "$cs" = "$sr" ] && [ "$ss" -ge 1 ] && [ "$ss" = "$cr" ] &&
		[ "$(dv client_connprops_bad)" = 0 ] && [ "$(dv server_connprops_bad)" = 0 ] || ok=0
	[ "$(dv client_inv_handles)" -gt 100 ] && [ "$(dv server_reminv_v2)" -gt 100 ] &&
		[ "$(dv client_reminv_v2)" -gt 100 ] || ok=0
	dmesg_has "server's transport properties: send 4096, receive 4096, .*our send threshold 4096 (was 4096)" &&
		dmesg_has "client .*: transport properties: send 4096, receive 4096, .*our send threshold 4096 (was 4096)" || ok=0
	[ $ok = 1 ] && ktap_test_pass "v$v: transport properties exchanged and applied, rdma_inv_handle honoured: $got" ||
		ktap_test_fail "v$v: transport properties and rdma_inv_handle: $got"
	# Continued calls and replies (F_MORE, no chunk): each receiver reassembled as many,
	# message for message, as the other end sent; every continued reply was asked for; none
	# broke the rules.
	got="calls: client sent $(dv client_sent_continued) in $(dv client_sent_continued_msgs) messages, server reassembled $(dv server_continued) in $(dv server_continued_msgs); replies: client asked $(dv client_continued_asked) (short $(dv client_continued_short)), server sent $(dv server_sent_continued) in $(dv server_sent_continued_msgs) messages, client reassembled $(dv client_continued) in $(dv client_continued_msgs), dropped $(dv client_continuation_dropped)"
	ok=1
	for side in "client_sent_continued server_continued" "server_sent_continued client_continued"; do
		set -- $side
		[ "$(dv $1)" -gt 0 ] && [ "$(dv $1)" = "$(dv $2)" ] &&
			[ "$(dv ${1}_msgs)" = "$(dv ${2}_msgs)" ] &&
			[ "$(dv ${1}_msgs)" -ge $((2 * $(dv $1))) ] || ok=0
	done
	[ "$(dv client_continued_asked)" -ge "$(dv client_continued)" ] &&
		[ "$(dv client_continuation_dropped)" = 0 ] && [ "$n8k" = 2000 ] || ok=0
	got="$got; the rsize=8192 mount listed ${n8k} entries"
	[ $ok = 1 ] && ktap_test_pass "v$v: calls and replies sent continued and reassembled: $got" ||
		ktap_test_fail "v$v: continued calls and replies: $got"
	timeout 120 umount $MNT && ktap_test_pass "v$v: umount" || ktap_test_fail "v$v: umount"
done

rpc.nfsd 0
exportfs -ua
rpcrdma_counters_zero 30 && ktap_test_pass "after rpc.nfsd 0: every debugfs counter back to zero" ||
	ktap_test_fail "after rpc.nfsd 0: every debugfs counter back to zero"
rpcrdma_rs_unload &&
	dmesg_has "rpcrdma_rs: unregistering transports; rdma objects still live: 0$" &&
	ktap_test_pass "rmmod rpcrdma_rs (still live: 0)" || ktap_test_fail "rmmod rpcrdma_rs (still live: 0)"
ktap_finished
