#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Boot the test kernel in QEMU (virtme-ng, host root over 9p, read-only) and run one command in
# it. Exits with the command's exit code; a guest that panics, oopses or outlives --timeout is
# killed and reported as a failure with the tail of its console, and so is a guest whose
# console shows any report of the kernel's checkers (WARNING, BUG, KASAN, UBSAN, lockdep,
# kmemleak, DMA-API debugging, hung task, RCU stall, refcount_t), whatever the command said.
# On a kernel with kmemleak, the guest scans for leaks after the command and logs the result.
#
#   scripts/vm.sh [options] -- COMMAND [ARGS...]
#
#   --kvm              use KVM (default: software emulation; nested KVM hangs on our machines)
#   --timeout SEC      wall-clock limit for the whole guest (default 900)
#   --memory SIZE      guest memory (default 2G)
#   --cpus N           guest CPUs (default 2)
#   --name NAME        guest host name (default rpcrdma)
#   --rwdir DIR        host directory the guest may write (repeatable)
#   --link MODE:PORT   add a virtio-net NIC joined to another guest through a QEMU socket
#                      netdev carrying its frames as UDP datagrams on 127.0.0.1; MODE listen
#                      binds PORT and sends to PORT+1, MODE connect the reverse
#   --mac MAC          MAC address of that NIC (default 52:54:00:12:34:01)
#   --disk FILE        attach FILE as a virtio disk (/dev/vda in the guest)
#   --log FILE         keep the full console log there (default: a temporary file, kept in
#                      $RPCRDMA_CACHE/failed/ when the guest fails)
#   --verbose          print the whole console, kernel messages included
#   --no-udev          boot the guest without udev (see below)
#
# --no-udev: udev's coldplug costs 4 of the 10 seconds of a boot on the normal kernel and most of
# a boot on the debug kernel. virtme-ng starts udev when it finds systemd-udevd, so QEMU then runs
# in a mount namespace of its own where udevadm (systemd-udevd is a link to it) is /bin/true
# (root only). Without udev the guest's PID 1 does not reap orphans: a killed daemon stays a
# zombie (the selftests' lib.sh counts only live ones). The default run keeps udev, as a guest
# normally has it; run-tests.sh --debug-kernel boots without it.
#
# RPCRDMA_GUEST_APPEND adds to the guest kernel's command line (e.g. swiotlb=force).
# RPCRDMA_NIC_OPTS adds properties to the --link NIC (virtio-net-pci), comma-separated.
#
# Guests boot with no5lvl: 4-level paging. QEMU's CPU model offers LA57, and under KASAN an
# interrupt taken early in boot, while identify_cpu() rebuilds the boot CPU's feature bits,
# saw the 5-level direct map (0xff11...) as a wild address: "BUG: KASAN: wild-memory-access in
# do_raw_spin_lock" from handle_edge_irq over identify_cpu, 3 ms into boot, before any module
# (twice in some hundred debug-kernel boots; the guest's verdict fails on any report). The
# 4-level direct map (0xffff888...) is inside KASAN's range either way.
#
# Topologies: one guest (rxe or siw on a veth pair inside it) is a plain call; two guests joined
# by a virtual link are two calls, one with --link listen:PORT and one with --link connect:PORT
# (scripts/vm-pair.sh does that).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kvm=0 timeout=900 memory=2G cpus=2 name=rpcrdma link= mac=52:54:00:12:34:01 log= verbose=0 udev=1
rwdirs=() disks=() qemu_opts=
while [ $# -gt 0 ]; do
	case "$1" in
	--kvm) kvm=1 ;;
	--timeout) timeout=$2; shift ;;
	--memory) memory=$2; shift ;;
	--cpus) cpus=$2; shift ;;
	--name) name=$2; shift ;;
	--rwdir) rwdirs+=("--rwdir=$2"); shift ;;
	--link) link=$2; shift ;;
	--mac) mac=$2; shift ;;
	--disk) disks+=("$2"); shift ;;
	--log) log=$2; shift ;;
	--verbose) verbose=1 ;;
	--no-udev) udev=0 ;;
	--) shift; break ;;
	*) die "unknown option $1 (see the header of $0)" ;;
	esac
	shift
done
[ $# -gt 0 ] || die "no command given"
kdir=${KDIR:-$(kernel_build_dir)}
command -v vng >/dev/null || die "vng missing: run scripts/install-deps.sh"

keep_log=1
if [ -z "$log" ]; then log=$(mktemp /tmp/rpcrdma-vm.XXXXXX); keep_log=0; fi
# The command's own output and exit code go to a host directory the guest may write, so they are
# not mixed with kernel messages on the console (which we keep, verbose, for crash detection).
mkdir -p "$RPCRDMA_CACHE/vm"
outdir=$(mktemp -d "$RPCRDMA_CACHE/vm/run.XXXXXX")
pid=
# Whatever ends this script, no guest outlives it.
cleanup() {
	[ -z "$pid" ] || kill -KILL -- -"$pid" 2>/dev/null || true
	rm -rf "$outdir"
	[ $keep_log = 1 ] || rm -f "$log"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

cmd=$(printf '%q ' "$@")
# After the command, a kernel with kmemleak scans twice (an object must stay unreferenced over
# two scans to count) and its report goes to the console, where the checks below see it.
kmemleak='f=/sys/kernel/debug/kmemleak; if [ -w $f ]; then echo scan >$f; sleep 5; echo scan >$f;
	while read -r l; do echo "kmemleak report: $l" >/dev/kmsg; done <$f; fi'
inner="{ $cmd; } >$outdir/out 2>&1 </dev/null; echo \$? >$outdir/rc; { $kmemleak; } >/dev/null 2>&1"
args=(--run "$kdir" --force-9p --name "$name" --memory "$memory" --cpus "$cpus" --verbose
	--cwd "$PWD" --rwdir="$outdir" "${rwdirs[@]}" --append "panic=-1 no5lvl ${RPCRDMA_GUEST_APPEND:-}"
	--exec "$inner")
[ $kvm = 1 ] || args+=(--disable-kvm)
if [ -n "$link" ]; then
	mode=${link%%:*} port=${link#*:}
	case "$mode" in listen|connect) ;; *) die "--link MODE must be listen or connect" ;; esac
	# Ethernet frames as UDP datagrams between two ports on 127.0.0.1 (listen takes PORT, connect
	# PORT+1). A TCP socket netdev (listen=/connect=) holds back the second frame of a burst
	# until the first is acknowledged: ~40 ms per multi-frame message.
	case "$mode" in
	listen) local_port=$port remote_port=$((port + 1)) ;;
	connect) local_port=$((port + 1)) remote_port=$port ;;
	esac
	qemu_opts+="-netdev socket,id=l0,udp=127.0.0.1:$remote_port,localaddr=127.0.0.1:$local_port -device virtio-net-pci,netdev=l0,mac=$mac${RPCRDMA_NIC_OPTS:+,$RPCRDMA_NIC_OPTS} "
fi
# Disks as virtio-blk (vng's --disk is virtio-scsi, which the bench kernel does not have).
for ((i = 0; i < ${#disks[@]}; i++)); do
	qemu_opts+="-drive file=${disks[i]},if=none,id=d$i,format=raw -device virtio-blk-pci,drive=d$i "
done
[ -z "$qemu_opts" ] || args+=(--qemu-opts="$qemu_opts")

# vng runs in a session (and process group) of its own: a timeout kills that whole group, QEMU
# included (killing vng alone would leave QEMU running).
launcher=()
if [ $udev = 0 ] && [ "$(id -u)" = 0 ] && udevadm=$(readlink -f "$(command -v udevadm)"); then
	launcher=(unshare --mount --propagation private -- sh -c \
		'mount --bind /bin/true "$0" && shift && exec "$@"' "$udevadm" -)
fi
setsid "${launcher[@]}" vng "${args[@]}" </dev/null >"$log" 2>&1 &
pid=$!
(
	for ((i = 0; i < timeout; i++)); do
		sleep 1
		kill -0 "$pid" 2>/dev/null || exit 0
	done
	touch "$outdir/timedout"
	kill -TERM -- -"$pid" 2>/dev/null
	for ((i = 0; i < 15; i++)); do
		sleep 1
		kill -0 -- -"$pid" 2>/dev/null || exit 0
	done
	kill -KILL -- -"$pid" 2>/dev/null
) &
watchdog=$!
rc=0
wait "$pid" || rc=$?
wait "$watchdog" || true
# Anything the guest's launcher left behind goes too.
kill -KILL -- -"$pid" 2>/dev/null || true
pid=

# Reports of the kernel's checkers, as they start a console line (after the printk time stamp).
# A crash is told apart from the reports a kernel survives.
crash_re='Kernel panic|Oops: |general protection fault'
report_re='WARNING:|BUG:|Call Trace:|INFO: task .* blocked for more than|(rcu: )?INFO: rcu_.* detected stall|rcu: INFO: .* detected stall|UBSAN:|kmemleak: .*new suspected memory leak|kmemleak report: unreferenced object|.*DMA-API: .*(device driver|out of memory|exceeded)|refcount_t: |ODEBUG: |list_(add|del) corruption'
console_lines() { # console_lines REGEX: the console's kernel lines starting so, at most 8
	sed -n 's/^\[ *[0-9.]*\] //p' "$log" | grep -E "^ *($1)" | head -n 8
}
failed=
if [ -e "$outdir/timedout" ]; then
	rc=124
	failed="guest did not finish within ${timeout}s"
elif [ -n "$(console_lines "$crash_re")" ]; then
	failed="guest kernel crashed: $(console_lines "$crash_re" | head -n 1)"
elif reports=$(console_lines "$report_re") && [ -n "$reports" ]; then
	failed="guest kernel report: $(echo "$reports" | head -n 3 | tr '\n' '|')"
elif [ ! -s "$outdir/rc" ]; then
	failed="guest ended without the command's exit status (vng exit $rc)"
else
	rc=$(cat "$outdir/rc")
fi
[ -n "$failed" ] && [ $rc = 0 ] && rc=1

[ $verbose = 1 ] && cat "$log"
cat "$outdir/out" 2>/dev/null || true
if [ -n "$failed" ]; then
	# A report far from the end (a KASAN splat before a clean shutdown) is shown from its first
	# line, with what follows it; the tail shows how the guest ended.
	first=$(grep -n -E "^\[ *[0-9.]*\] *($report_re|$crash_re)" "$log" | head -n 1 | cut -d: -f1) ||
		true
	total=$(wc -l <"$log")
	if [ -n "$first" ] && [ "$first" -lt $((total - 40)) ]; then
		log "FAILED ($name): $failed; console from the first report:"
		sed -n "$((first > 5 ? first - 5 : 1)),$((first + 80))p" "$log" | sed 's/^/  | /' >&2
		log "console tail:"
	else
		log "FAILED ($name): $failed; console tail:"
	fi
	tail -n 40 "$log" | sed 's/^/  | /' >&2
fi
# The whole console of a failed guest, or of one whose command failed, is kept for a
# post-mortem (a mount killed at its timeout leaves the kernel's side only there).
if { [ -n "$failed" ] || [ $rc != 0 ]; } && [ $keep_log = 0 ]; then
	mkdir -p "$RPCRDMA_CACHE/failed"
	kept=$RPCRDMA_CACHE/failed/$name.$(date +%Y%m%d-%H%M%S).$$.log
	[ -n "$failed" ] || log "($name) command exit $rc"
	cp "$log" "$kept" && log "full console kept in $kept"
	# The newest 50 are enough.
	ls -t "$RPCRDMA_CACHE/failed/"*.log | tail -n +51 | xargs -r rm -f || true
fi
exit $rc
