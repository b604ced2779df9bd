#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# rpcrdma_admin_stats.sh: the NFS/RDMA transport's tunables and statistics, as an administrator
# of the kernel's rpcrdma.ko would look at them. It reads only the interfaces of the C module
# (sysctls under /proc/sys/sunrpc, /proc/self/mountstats) and runs unchanged against
# rpcrdma_rs.ko, which offers the same ones (see Documentation/admin-guide.md).
#
# usage: rpcrdma_admin_stats.sh [show]     print the client tunables, the server tunables and
#                                          statistics, and each RDMA mount's transport counters
#        rpcrdma_admin_stats.sh reset      zero the server statistics, then show
#        rpcrdma_admin_stats.sh diff FILE  how much each server statistic grew since FILE (the
#                                          saved output of an earlier "show"); exit status 3 if
#                                          none grew
#
# Output: one "name = value" line per setting or statistic (the sysctl(8) name), and per RDMA
# mount one "mount DIR: field=value ..." line. Exit status 2 if a file is missing (no RPC-over-RDMA
# transport module loaded, or a kernel without CONFIG_SUNRPC_DEBUG for the client's tunables).

SYS=/proc/sys/sunrpc
CLIENT="rdma_slot_table_entries rdma_max_inline_read rdma_max_inline_write
	rdma_inline_write_padding rdma_memreg_strategy rdma_pad_optimize"
SERVER="max_requests max_req_size max_outbound_read_requests"
STATS="rdma_stat_read rdma_stat_recv rdma_stat_write rdma_stat_sq_starve rdma_stat_rq_starve
	rdma_stat_rq_poll rdma_stat_rq_prod rdma_stat_sq_poll rdma_stat_sq_prod"
# The fields of the "xprt: rdma" line of /proc/self/mountstats after "rdma", in order
# (net/sunrpc/xprtrdma/transport.c, xprt_rdma_print_stats()).
XPRT_FIELDS="srcport bind_count connect_count connect_time idle_time sends recvs bad_xids
	req_u bklog_u read_chunk_count write_chunk_count reply_chunk_count total_rdma_request
	total_rdma_reply pullup_copy_count fixup_copy_count hardway_register_count
	failed_marshal_count bad_reply_count nomsg_call_count mrs_recycled mrs_orphaned
	mrs_allocated local_inv_needed empty_sendctx_q reply_waits_for_send"

missing=0

# "sunrpc.NAME = VALUE" for each file NAME of directory $1 (relative to $SYS).
show_files() {
	dir=$1
	shift
	for f in "$@"; do
		p=$SYS/$dir$f
		if [ -r "$p" ]; then
			printf '%s = %s\n' "sunrpc.$(echo "$dir" | tr / .)$f" "$(cat "$p")"
		else
			echo "$p: missing" >&2
			missing=1
		fi
	done
}

show() {
	mods=$(cd /sys/module 2>/dev/null && ls -d rpcrdma* 2>/dev/null | tr '\n' ' ')
	echo "# transport module: ${mods:-none}"
	ev=/sys/kernel/tracing/events/rpcrdma
	[ -d $ev ] && echo "# tracepoints: $(ls -d $ev/*/ 2>/dev/null | wc -l) in $ev"
	echo "# client tunables"
	# shellcheck disable=SC2086 # word lists
	show_files "" $CLIENT
	echo "# server tunables"
	# shellcheck disable=SC2086
	show_files svc_rdma/ $SERVER
	echo "# server statistics"
	# shellcheck disable=SC2086
	show_files svc_rdma/ $STATS
	echo "# RDMA mounts"
	awk -v names="$XPRT_FIELDS" '
		BEGIN { n = split(names, name, /[ \t\n]+/) }
		$1 == "device" { mnt = $5 }
		$1 == "xprt:" && $2 == "rdma" {
			line = "mount " mnt ":"
			for (i = 1; i <= n && i + 2 <= NF; i++)
				line = line " " name[i] "=" $(i + 2)
			print line
		}' /proc/self/mountstats
	[ $missing = 0 ] || exit 2
}

case ${1:-show} in
show)
	show
	;;
reset)
	for f in $STATS; do
		p=$SYS/svc_rdma/$f
		[ -w "$p" ] || { echo "$p: missing" >&2; exit 2; }
		# Any write zeroes a statistic (svcrdma_counter_handler); the five that are always 0
		# accept only 0.
		echo 0 > "$p" || exit 1
	done
	show
	;;
diff)
	[ -r "${2:-}" ] || { echo "usage: $0 diff FILE (a saved 'show')" >&2; exit 1; }
	grew=0
	for f in $STATS; do
		p=$SYS/svc_rdma/$f
		[ -r "$p" ] || { echo "$p: missing" >&2; exit 2; }
		old=$(awk -v k="sunrpc.svc_rdma.$f" '$1 == k && $2 == "=" { print $3 }' "$2")
		new=$(cat "$p")
		d=$((new - ${old:-0}))
		echo "sunrpc.svc_rdma.$f +$d"
		[ $d -le 0 ] || grew=1
	done
	[ $grew = 1 ] || exit 3
	;;
*)
	echo "usage: $0 [show | reset | diff FILE]" >&2
	exit 1
	;;
esac
