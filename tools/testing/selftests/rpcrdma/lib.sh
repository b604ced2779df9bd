# SPDX-License-Identifier: GPL-2.0
# Shared helpers of the rpcrdma-rs kselftests. Sourced by each test; runs inside a guest.

RPCRDMA_SELFTEST_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The kernel's KTAP helpers: in-tree they are next door; out of tree the runner sets KSFT_DIR.
KSFT_DIR=${KSFT_DIR:-$RPCRDMA_SELFTEST_DIR/..}
# shellcheck source=/dev/null
. "$KSFT_DIR/kselftest/ktap_helpers.sh"

# The module under test: built at the top of the repository unless told otherwise.
RPCRDMA_KO=${RPCRDMA_KO:-$RPCRDMA_SELFTEST_DIR/../../../../rpcrdma_rs.ko}

SRV_ADDR=192.0.2.1
CLI_ADDR=192.0.2.2

# Load rpcrdma_rs.ko: it needs sunrpc and the RDMA core (ib_core, rdma_cm) loaded first, since
# insmod does not resolve dependencies. Extra arguments go to insmod.
rpcrdma_rs_load() {
	modprobe sunrpc && modprobe ib_core && modprobe rdma_cm && insmod "$RPCRDMA_KO" "$@"
}
# How much slower than on the normal kernel this guest runs (scripts/run-tests.sh sets 5 for the
# debug kernel: KASAN, lockdep and SLUB debugging under TCG); tests multiply their per-case
# timeouts by it.
RPCRDMA_SLOW=${RPCRDMA_SLOW:-1}
export RPCRDMA_SLOW
# The two-guest NFS tests' largest file (64 MiB), and their mounts' timeo in deciseconds (600,
# the default for RDMA, times RPCRDMA_SLOW). On the debug kernel siw carries ~170 KB/s between
# two TCG guests (rxe ~900 KB/s): a 64 MiB copy queues 64 one-MiB WRITEs at the server for over
# six minutes, past the default timeo, and the C client answers every timeout with a disconnect
# and a retransmission of all it has in flight; the copy's close() then waits on writeback past
# the hung-task detector's 120 s. There scripts/run-tests.sh sets NFS_BIG to 16 MiB (the least:
# pair_server_nfs.sh's O_DIRECT case copies the first 16 MiB of that file).
NFS_BIG=${NFS_BIG:-$((64 * 1048576))}
NFS_TIMEO=$((600 * RPCRDMA_SLOW))
EXPORT=/tmp/export
MNT=/tmp/mnt

# rmmod rpcrdma_rs: succeeds only if the module is gone and the line it logged on its way out
# says that no RDMA object is live ("rdma objects still live: 0"; an over-release shows too).
rpcrdma_rs_unload() {
	local before line bc
	before=$(dmesg | grep -c 'rpcrdma_rs: unregistering transports')
	# For the diagnosis of a failure: the module's debugfs files go with it.
	bc=$(cat /sys/kernel/debug/rpcrdma_rs/backchannel 2>/dev/null)
	rmmod rpcrdma_rs 2>/dev/null || return 1
	[ ! -d /sys/module/rpcrdma_rs ] || return 1
	[ "$(dmesg | grep -c 'rpcrdma_rs: unregistering transports')" -gt "$before" ] || {
		echo "# rmmod rpcrdma_rs: no unload line in the kernel log"; return 1; }
	line=$(dmesg | grep 'rpcrdma_rs: unregistering transports' | tail -n 1)
	echo "$line" | grep -q 'still live: 0$' || {
		echo "# $line"
		# The kinds still live, logged just before that line.
		dmesg | grep -E 'rpcrdma_rs: ([a-z_]+: -?[0-9]+ live \(|client objects still live)' |
			tail -n 14 | sed 's/^/# /'
		echo "$bc" | sed 's/^/# backchannel before rmmod: /'
		# What the module logged otherwise (a connection's troubles), the latest first.
		dmesg | grep 'rpcrdma_rs: ' | grep -vE ' live(:| \()' | tail -n 25 | tac |
			sed 's/^/# log: /'
		return 1
	}
}

# Run a command quietly; its output goes to the test log as KTAP diagnostics on failure.
quiet() {
	local out rc=0
	out=$("$@" 2>&1) || rc=$?
	[ $rc = 0 ] || { echo "$out" | sed 's/^/# /'; echo "# command failed ($rc): $*"; }
	return $rc
}

# A veth pair (veth0 with $SRV_ADDR, veth1 its peer) and a soft RDMA device on veth0.
# $1: rxe or siw. The link never leaves the guest.
rdma_link_up() {
	local type=$1
	ip link set lo up
	ip link show veth0 >/dev/null 2>&1 || ip link add veth0 type veth peer name veth1
	ip addr replace $SRV_ADDR/24 dev veth0
	ip link set veth0 up
	ip link set veth1 up
	case $type in
	rxe) modprobe rdma_rxe ;;
	siw) modprobe siw ;;
	esac
	rdma_user_access
	rdma link add ${type}0 type $type netdev veth0
}

# The modules behind /dev/infiniband/uverbs* and /dev/infiniband/rdma_cm, which userspace peers
# (rping, pyverbs) open. udev's rdma-core rules load them when a device appears, but not before
# the device's first user may run, and the guests of scripts/vm.sh may run without udev.
rdma_user_access() {
	modprobe -a ib_uverbs rdma_ucm
}

rdma_link_down() {
	local type=$1
	rdma link delete ${type}0 2>/dev/null || true
}

# Two-guest topology: put address $1 on the guest's virtual link (its first en*/eth*
# interface, joined to the other guest by scripts/vm-pair.sh) and bring rxe0 up on it.
pair_link_up() {
	pair_rdma_link_up "$1" rxe
}

# Server side of a two-guest test: wait for the client to create $EXPORT/done through its mount.
# The bound, 20 minutes times RPCRDMA_SLOW, is above the runner's timeout for a pair (1200 s,
# 4800 s on the debug kernel), which is the real limit: the client's whole run, e.g.
# pair_server_nfs.sh's four NFS versions, takes 40 minutes and more on the debug kernel beside
# another guest, and a server that gives up first leaves its client hung.
pair_wait_client_done() {
	# A grace period once the file exists: the client's last RPCs and umount finish before
	# this guest stops serving.
	wait_file $EXPORT/done $((1200 * RPCRDMA_SLOW)) && { sleep 5; return 0; }
	echo "server: client never finished"
	return 1
}

# Wait until device $1 reports a port in state ACTIVE.
rdma_wait_active() {
	local i
	for i in $(seq 1 50); do
		rdma link show "$1/1" 2>/dev/null | grep -q 'state ACTIVE' && return 0
		sleep 0.1
	done
	return 1
}

# Writable state for nfs-utils: the guest's root is the host's, read-only.
nfs_state_setup() {
	mountpoint -q /var/lib/nfs || mount -t tmpfs tmpfs /var/lib/nfs
	mkdir -p /var/lib/nfs/rpc_pipefs /var/lib/nfs/v4recovery /var/lib/nfs/sm /run/rpcbind
	touch /var/lib/nfs/etab /var/lib/nfs/rmtab
}

# Start nfsd exporting a tmpfs at $EXPORT (fsid=0: also the NFSv4 pseudo-root) and listening on
# TCP and, when $1 is "rdma", on RDMA port 20049. Fails if the rdma listener cannot be created.
nfsd_start() {
	nfs_state_setup
	modprobe nfsd
	mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd
	mkdir -p $EXPORT $MNT
	mountpoint -q $EXPORT || mount -t tmpfs -o size=1200M tmpfs $EXPORT
	# A killed daemon can linger as a zombie: without udev (vm.sh --no-udev) the guest's PID 1
	# does not reap orphans. Only a live one counts.
	pgrep -r R,S,D -x rpcbind >/dev/null || rpcbind -w
	pgrep -r R,S,D -x rpc.mountd >/dev/null || rpc.mountd
	# "secure" (the default, no "insecure"): nfsd then serves only requests its transport marks
	# secure; an RDMA server transport must mark them as svcrdma does (RDMA has no privileged
	# ports), so every RDMA mount of these tests checks that.
	exportfs -i -o rw,no_root_squash,no_subtree_check,fsid=0,crossmnt "*:$EXPORT"
	echo 10 > /proc/fs/nfsd/nfsv4gracetime
	echo 10 > /proc/fs/nfsd/nfsv4leasetime
	# NFSD_MAX_BLOCK_SIZE: nfsd's largest READ/WRITE payload (its default follows the guest's
	# memory); settable only while nfsd has no threads.
	[ -z "${NFSD_MAX_BLOCK_SIZE:-}" ] || echo $NFSD_MAX_BLOCK_SIZE > /proc/fs/nfsd/max_block_size
	rpc.nfsd 4
	[ "${1:-}" = rdma ] || return 0
	echo "rdma 20049" > /proc/fs/nfsd/portlist
}

nfsd_stop() {
	rpc.nfsd 0 2>/dev/null || true
	exportfs -ua 2>/dev/null || true
}

# mount(8)'s arguments for the export over RDMA at $MNT: NFS version $1 (3, 4.0, 4.1, 4.2), more
# options in $2 (comma-separated, no spaces). timeo=$NFS_TIMEO; for NFSv3 the export's path, for
# v4 the pseudo-root. For a caller that runs mount under timeout(1): mount $(nfs_rdma_args ...).
nfs_rdma_args() {
	local path=/
	[ "$1" = 3 ] && path=$EXPORT
	echo "-t nfs -o vers=$1,proto=rdma,port=20049,timeo=$NFS_TIMEO${2:+,$2} $SRV_ADDR:$path $MNT"
}

# Mount the export over RDMA (nfs_rdma_args). $1: NFS version; more options in $2.
nfs_mount_rdma() {
	# shellcheck disable=SC2046 # the arguments are words without spaces
	mount $(nfs_rdma_args "$@")
}

# Message in the kernel log since the test started (dmesg is cleared by the test).
dmesg_has() {
	dmesg | grep -q -- "$1"
}

# The guest's link to the other guest of a pair (scripts/vm-pair.sh): its first en*/eth*.
pair_ifname() {
	ls /sys/class/net | grep -E '^(en|eth)' | head -n 1
}

# Like pair_link_up, with a choice of soft RDMA device: address $1 on the pair link and device
# $2 (rxe or siw, named rxe0 or siw0) on it, waited for until ACTIVE.
pair_rdma_link_up() {
	local addr=$1 type=$2 ifname
	ifname=$(pair_ifname)
	[ -n "$ifname" ] || return 1
	ip link set lo up
	ip addr add "$addr"/24 dev "$ifname"
	ip link set "$ifname" up
	case $type in
	rxe) modprobe rdma_rxe ;;
	siw) modprobe siw ;;
	*) echo "unknown RDMA device type $type"; return 1 ;;
	esac
	rdma_user_access
	rdma link add ${type}0 type "$type" netdev "$ifname" && rdma_wait_active ${type}0
}

# Wait up to $2 seconds for file $1 to exist (through an NFS mount: use noac,lookupcache=none).
wait_file() {
	local i
	for i in $(seq 1 "$2"); do
		[ -e "$1" ] && return 0
		sleep 1
	done
	return 1
}

# The "xprt:" line of /proc/self/mountstats for the NFS mount at $1 (empty if none).
mountstats_xprt() {
	awk -v m="$1" '$1 == "device" { on = ($5 == m) } on && $1 == "xprt:" { print; exit }' \
		/proc/self/mountstats
}

# Compare two "xprt: rdma" lines of mountstats, $1 before and $2 after some I/O, on the fields
# named by the other arguments, "FIELD:NAME" each (awk's numbering: "xprt:" is 1, "rdma" 2).
# The fields are those of net/sunrpc/xprtrdma/transport.c, xprt_rdma_print_stats(): 13
# read_chunk_count, 14 write_chunk_count, 15 reply_chunk_count, 23 nomsg_call_count (calls sent
# whole in a position-zero Read chunk, RDMA_NOMSG). Prints how much each grew; fails unless both
# lines are complete rdma lines and each named field grew.
mountstats_rdma_grew() {
	local a=$1 b=$2
	shift 2
	printf '%s\n%s\n' "$a" "$b" | awk -v spec="$*" '
		$2 == "rdma" && NF == 29 { ok++; for (i = 3; i <= NF; i++) v[NR, i] = $i }
		END {
			if (ok != 2) { print "no complete rdma line"; exit 1 }
			n = split(spec, f, " ")
			for (j = 1; j <= n; j++) {
				split(f[j], p, ":")
				d = v[2, p[1]] - v[1, p[1]]
				printf "%s%s +%d", (j > 1 ? ", " : ""), p[2], d
				if (d <= 0) bad = 1
			}
			print (bad ? ": NOT ALL USED" : "")
			exit bad
		}'
}
# Read, Write and Reply chunks.
MOUNTSTATS_CHUNKS="13:read 14:write 15:reply"
# Position-zero Read chunks (RDMA_NOMSG calls).
MOUNTSTATS_NOMSG="23:position-zero"

# Try to make the NFS client send calls larger than the inline threshold that carry no data
# payload, which RPC-over-RDMA sends whole in a position-zero Read chunk (RDMA_NOMSG,
# mountstats' nomsg_call_count). A long symlink target does not do it: SYMLINK marks its target
# as a payload (XDRBUF_WRITE), so it travels in an ordinary Read chunk. What does: NFSv4.2
# SETXATTR of a 5000-byte user xattr, NFSv4 SETATTR of a 200-entry ACL (system.nfs4_acl), NFSv3
# SETACL of a 330-entry POSIX ACL (system.posix_acl_access: about 4 KB on the wire, just above
# the 4096-byte inline threshold; from 340 entries, 4 KB of encoded ACL, Linux's NFSv3 ACL code
# fails the call with EIO whatever the transport, TCP included); each only if the server's exported
# file system supports it (for tmpfs: CONFIG_TMPFS_XATTR, CONFIG_TMPFS_POSIX_ACL, and for NFSv3
# CONFIG_NFS_V3_ACL and CONFIG_NFSD_V3_ACL), else the client refuses without an RPC. $1: a
# file on the mount. Prints what each attempt returned.
rpcrdma_nomsg_calls() {
	python3 - "$1" <<'PY'
import os, struct, sys
f = sys.argv[1]
who = b"EVERYONE@"
ace = struct.pack(">IIII", 0, 0, 0x1, len(who)) + who + b"\0" * (-len(who) % 4)
attempts = [
    ("user xattr (NFSv4.2 SETXATTR)", "user.rpcrdma_nomsg", b"x" * 5000),
    ("nfs4 ACL (SETATTR)", "system.nfs4_acl", struct.pack(">I", 200) + ace * 200),
    ("POSIX ACL (NFSv3 SETACL)", "system.posix_acl_access",
     struct.pack("<I", 2) + struct.pack("<HHI", 1, 6, 0xffffffff)
     + b"".join(struct.pack("<HHI", 2, 4, 1000 + i) for i in range(330))
     + struct.pack("<HHI", 4, 4, 0xffffffff) + struct.pack("<HHI", 0x10, 4, 0xffffffff)
     + struct.pack("<HHI", 0x20, 4, 0xffffffff)),
]
out = []
for name, attr, value in attempts:
    try:
        os.setxattr(f, attr, value)
        out.append(f"{name}: set")
    except OSError as e:
        out.append(f"{name}: {os.strerror(e.errno)}")
print("; ".join(out))
PY
}

# Load an RPC-over-RDMA transport: $1 c (the kernel's rpcrdma.ko), rs (rpcrdma_rs.ko, with
# the insmod parameters in $2, a space-separated list), rs2 (rs with max_version=2) or rsi (rs
# with the inline thresholds of both ends raised to $RPCRDMA_INLINE bytes, default 36864,
# through the C module's sysctls: rdma_max_inline_read and rdma_max_inline_write for the
# client, svc_rdma/max_req_size for the server; they apply to the next connection).
rpcrdma_transport_load() {
	case $1 in
	c) modprobe rpcrdma ;;
	# shellcheck disable=SC2086 # a list of parameters
	rs) rpcrdma_rs_load ${2:-} ;;
	# shellcheck disable=SC2086 # a list of parameters
	rs2) rpcrdma_rs_load max_version=2 ${2:-} ;;
	# shellcheck disable=SC2086 # a list of parameters
	rsi)
		rpcrdma_rs_load ${2:-} &&
			sysctl -qw sunrpc.rdma_max_inline_read="${RPCRDMA_INLINE:-36864}" \
				sunrpc.rdma_max_inline_write="${RPCRDMA_INLINE:-36864}" \
				sunrpc.svc_rdma.max_req_size="${RPCRDMA_INLINE:-36864}"
		;;
	*) echo "unknown transport $1 (c, rs, rs2 or rsi)"; return 1 ;;
	esac
}

# Two-guest control channel: the client mounts the server's export over NFSv3/TCP at $PAIR_CTL
# (never through the RDMA transport under test, so that a broken transport cannot hide results)
# without attribute or lookup caching, so that files the server writes are seen at once.
# Waits up to 240 s for the server's nfsd (both guests boot at the same time).
PAIR_CTL=/tmp/ctl
# Control mounts are soft: the server powers off once the client checked in, and a client RPC
# still in flight then must fail instead of hanging the guest's shutdown on a hard mount.
PAIR_CTL_OPTS=soft,timeo=30,retrans=2
pair_ctl_mount() {
	local i
	mkdir -p $PAIR_CTL
	for i in $(seq 1 120); do
		timeout 30 mount -t nfs -o vers=3,proto=tcp,nolock,noac,lookupcache=none,$PAIR_CTL_OPTS \
			$SRV_ADDR:$EXPORT $PAIR_CTL 2>/dev/null && return 0
		sleep 2
	done
	return 1
}

# Wait up to $1 seconds until every debugfs object counter of rpcrdma_rs has nothing alive;
# print the counters as KTAP diagnostics either way. Fails if some object is still alive.
# Fails closed: a missing or malformed counters file fails, and so does an over-release (a
# negative count of live objects).
rpcrdma_counters_zero() {
	local f=/sys/kernel/debug/rpcrdma_rs/counters i rc=1
	rpcrdma_counters_ok || { echo "# $f is missing or malformed"; return 1; }
	for i in $(seq 1 "$1"); do
		[ "$(awk '$4 != 0' $f | wc -l)" = 0 ] && { rc=0; break; }
		sleep 1
	done
	sed 's/^/# /' $f
	return $rc
}

# The value of the backchannel counter $1 (the client's calls, drop_*, ..., the server's
# srv_drop_reply) in debugfs rpcrdma_rs/backchannel; empty if the module has no such line.
rpcrdma_bc_counter() {
	awk -v n="$1" '$1 == n { print $2 }' /sys/kernel/debug/rpcrdma_rs/backchannel 2>/dev/null
}

# The debugfs counters file exists and has its 14 lines "name allocated freed live", with
# live = allocated - freed.
rpcrdma_counters_ok() {
	local f=/sys/kernel/debug/rpcrdma_rs/counters
	[ -r $f ] && [ "$(awk 'NF == 4 && $2 ~ /^[0-9]+$/ && $3 ~ /^[0-9]+$/ &&
		$4 ~ /^-?[0-9]+$/ && $2 - $3 == $4' $f | wc -l)" = 14 ] && [ "$(wc -l < $f)" = 14 ]
}

# Callback round trips, measured on the server with nfsd's own tracepoints: nfsd_cb_rpc_prepare
# and nfsd_cb_rpc_done bracket one callback RPC (CB_SEQUENCE and its operation, CB_RECALL say)
# from its encoding to its reply's decoding, whichever transport carries it, so the C pairing
# and ours are measured alike. cb_trace_start clears the trace and enables both events.
CB_TRACE=/sys/kernel/tracing
cb_trace_start() {
	local e
	mountpoint -q $CB_TRACE || mount -t tracefs nodev $CB_TRACE 2>/dev/null || return 1
	echo 0 > $CB_TRACE/tracing_on && : > $CB_TRACE/trace || return 1
	for e in prepare done; do
		echo 1 > $CB_TRACE/events/nfsd/nfsd_cb_rpc_$e/enable || return 1
	done
	echo 1 > $CB_TRACE/tracing_on
}

# cb_trace_rtt ADDR: stops the trace and prints the round trip, in microseconds, of each
# callback to the client at address ADDR since cb_trace_start (space-separated, in order).
cb_trace_rtt() {
	local e
	echo 0 > $CB_TRACE/tracing_on
	for e in prepare done; do
		echo 0 > $CB_TRACE/events/nfsd/nfsd_cb_rpc_$e/enable
	done
	grep -F "addr=$1:" $CB_TRACE/trace | awk '
		{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) ts = substr($i, 1, length($i) - 1) }
		/nfsd_cb_rpc_prepare:/ { p = ts }
		/nfsd_cb_rpc_done:/ && p != "" { printf "%s%d", sep, (ts - p) * 1e6; sep = " "; p = "" }'
}
