#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The whole test suite, from a fresh Debian 12 machine: installs what it needs, runs the host
# tests of the protocol core, builds the kernel (cached) and the module (no warnings, clippy and
# rustfmt clean), then runs every kselftest of tools/testing/selftests/rpcrdma, each in its own
# guest. Prints KTAP as it goes and ends with one line "N passed, N failed, N skipped".
#
#   scripts/run-tests.sh [--kvm] [--only TEST.sh[:VAR=value,...]]... [--no-vm] [--debug-kernel]
#                        [--swiotlb] [--udev | --no-udev] [--resume DIR]
#
# Every verdict is counted: each KTAP case; each case a plan announced but never reported; each
# guest's own verdict (its exit status, a crash, a timeout, or a report of the kernel's checkers
# on its console: see scripts/vm.sh), for single-guest tests and for both guests of a pair. A
# "# SKIP" case is a skip, not a pass, and fails the run unless it is on the allow-list below.
#
# --debug-kernel runs the suite on the debug kernel (scripts/build-kernel.sh --debug: KASAN,
# lockdep, kmemleak, DMA-API debugging, UBSAN, ...), with larger guest timeouts, then runs
# rs_nfs_loopback.sh and our client's pair_nfs entry once more with swiotlb=force on the guests'
# command line (every DMA mapping bounced: a copy made while a buffer is mapped is undone).
# --swiotlb boots every guest of the run with swiotlb=force.
# --resume DIR keeps every guest run's output, status and time in DIR/KEY/, KEY naming what the
# guests ran (see below), and, run again with the same DIR, reports the kept runs of this KEY
# instead of booting them again: a run longer than a session (the debug kernel's takes hours on
# the 2-core machine) completes in parts and still ends with one total. The debug kernel's kept
# runs are committed under Documentation/debug-runs/ (a fresh machine each session keeps
# nothing else): scripts/run-tests.sh --debug-kernel --resume Documentation/debug-runs.
# A kept run whose test files (its script and the helpers it names) changed since runs again;
# delete a test's files in DIR/KEY to run it again anyway.
# --no-udev boots the guests without udev (scripts/vm.sh), the default: udev's coldplug takes
# half of a boot on the debug kernel (117 s against 63 s) and 4 of the normal kernel's 10 s (over
# 40 boots in a run); no test needs it (every one has passed without it on the debug kernel since
# 2026-11-25). --udev keeps it.
#
# RPCRDMA_JOBS (default 1) is how many single-guest kselftests run at once (for machines with
# more cores; on the 2-core CI machine two at once took as long as one: TCG guests are CPU-bound).
# Two-guest tests run one pair at a time, beside the single-guest tests (RPCRDMA_BESIDE=0: after
# them; see section 5); the stream of pairs, once through, takes single-guest tests from the
# end of the list.
#
# --only takes a kselftest, or a two-guest entry with its environment, e.g.
#   --only pair_nfs.sh:RPCRDMA_SERVER=c,RPCRDMA_CLIENT=rs,RPCRDMA_DEV=siw
set -uo pipefail
. "$(dirname "$0")/lib.sh"

vm_opts=() only=() no_vm=0 debug=0 udev= resume=
# Wall-clock limit of one two-guest run (both guests): the longest, pair_nfs.sh (with 5000
# mkdirs per NFS version), takes ~8 minutes under TCG on the 2-core CI machine, 13 with other
# guests beside it; a hang must not eat the suite's 90 minutes.
pair_timeout=${RPCRDMA_PAIR_TIMEOUT:-1200}
while [ $# -gt 0 ]; do
	case "$1" in
	--kvm) vm_opts+=(--kvm) ;;
	--only) only+=("$2"); shift ;;
	--no-vm) no_vm=1 ;;
	--debug-kernel) debug=1 ;;
	--udev) udev=1 ;;
	--no-udev) udev=0 ;;
	--resume) resume=$(mkdir -p "$2" && cd "$2" && pwd) || die "--resume: cannot use $2"; shift ;;
	--swiotlb) export RPCRDMA_GUEST_APPEND="${RPCRDMA_GUEST_APPEND:-} swiotlb=force" ;;
	*) die "unknown option $1" ;;
	esac
	shift
done

# Skips that do not fail the run, as "TEST-REGEX<TAB>CASE-REGEX", each with the reason.
skip_allow=(
	# A race the test reports rather than hides: over rxe the server may notice the dead client
	# (its RDMA operations run out of retries) before rpc.nfsd 0 runs; the entry with
	# RPCRDMA_VANISH_CLOSE=server tests that path on purpose.
	$'^pair_server_client_vanish\\.sh\tconnection is still up for rpc.nfsd 0'
	# The normal kernel has no hung-task detector; the debug kernel (--debug-kernel) runs it.
	$'^runner\tdetects a hung task'
)
skip_allowed() { # skip_allowed TEST CASE-LINE
	local e
	for e in "${skip_allow[@]}"; do
		[[ $1 =~ ${e%%$'\t'*} ]] && [[ $2 =~ ${e#*$'\t'} ]] && return 0
	done
	return 1
}

if [ $debug = 1 ]; then
	export RPCRDMA_KERNEL=debug
	# KASAN, lockdep and SLUB debugging slow guests down several times under TCG.
	pair_timeout=${RPCRDMA_PAIR_TIMEOUT:-4800}
	# The two guests' NIC in virtio-net's "big packets" mode, whose receive buffers are plain
	# pages, not a page pool: rxe frees received packets with interrupts off (its receiver
	# and completer, under spin_lock_irqsave(&qp->state_lock), when a QP is in error), and
	# for page-pool pages lockdep then warns (page_pool.c:843, softirq.c:453), an upstream
	# rxe bug that failed a guest of pair_nfs.sh's disconnect cases twice (Documentation/
	# testing.md). Big packets needs mergeable buffers off and an MTU above 1500; 1501 keeps
	# rxe's path MTU (1024) and siw's MSS (one byte more) as they are.
	export RPCRDMA_NIC_OPTS=${RPCRDMA_NIC_OPTS-mrg_rxbuf=off,host_mtu=1501}
fi
udev=${udev:-0}
[ "$udev" = 1 ] || vm_opts+=(--no-udev)
# The longest single-guest tests on the normal kernel, client_hostile.sh (60 cases) and
# rs_nfs_v2.sh, take 336 s and 289 s on a machine that builds the kernel in 10 minutes, and
# machines of the same type have been twice as slow and more (CI's cold runs: 65 to 88
# minutes): 900 s left too little margin. client_hostile.sh did not finish in 40 minutes on
# the debug kernel beside other guests (44 of 53 cases done).
single_timeout=$(( debug ? 4800 : 1800 ))
# The runner self-tests' guests only boot and end; the debug kernel boots several times slower.
boot_timeout=$(( debug ? 1200 : 120 ))
# Told to the guests (RPCRDMA_SLOW): how much longer than on the normal kernel a test should
# wait for a peer (its per-case timeouts are multiplied by it).
export RPCRDMA_SLOW=$(( debug ? 5 : 1 ))
# On the debug kernel the volume tests do less of the same (the code paths are the same; the
# checkers look at every one): the leak check's RPCs of rs_nfs_loopback*.sh, pair_nfs.sh's
# big directory and mkdirs (1000 entries still come in Reply chunks), and the two-guest NFS
# tests' largest file (16 MiB: still 16 one-MiB WRITEs in flight; see NFS_BIG in lib.sh). Given
# to every guest before an entry's own variables, which win.
# On the normal kernel the client of the two-guest NFS tests makes 1000 subdirectories per NFS
# version rather than pair_nfs.sh's 5000 (--only can give more): at 35-60 s per 5000 under
# TCG, the eight runs of the default suite spent 5-8 minutes of a cold CI run's 60 on one
# small call repeated; 1000, four at a time, still keep calls overlapping on the wire for
# several seconds, and the 5000-entry directory read back in Reply chunks stays. The leak check
# of rs_nfs_loopback*.sh makes 2000 registering RPCs, not 10000 (~25 s each of its three
# runs): an object leaked per RPC shows as 2000 as it would as 10000, and the MR pool is
# cycled many times over either way.
guest_env="NFS_CREATE_ENTRIES=1000 LEAK_RPCS=2000 "
[ $debug = 1 ] && guest_env="LEAK_RPCS=2000 NFS_DIR_ENTRIES=1000 NFS_CREATE_ENTRIES=500 NFS_BIG=16777216 "

cd "$RPCRDMA_TOP"
passed=0 failed=0 skipped=0 n=0
result() { # result PASS|FAIL description
	n=$((n + 1))
	if [ "$1" = PASS ]; then passed=$((passed + 1)); echo "ok $n $2"
	else failed=$((failed + 1)); echo "not ok $n $2"; fi
}
check() { # check description command...: one test case from a command's exit status
	local desc=$1 out; shift
	if out=$("$@" 2>&1); then result PASS "$desc"
	else echo "$out" | tail -n 30 | sed 's/^/# /'; result FAIL "$desc"; fi
}
# Every run appends where its time went to $RPCRDMA_CACHE/run-times.log, one line per stage
# and per guest run: when the run began, its commit, the kernel variant, what, seconds. A run
# whose output is gone (CI's, on a machine kept for the next session) still tells it.
run_id="$(date -u +%FT%TZ) $(git -C "$RPCRDMA_TOP" rev-parse --short HEAD 2>/dev/null)"
run_id+=" $([ $debug = 1 ] && echo debug || echo normal)"
stage_t0=$SECONDS
mkdir -p "$RPCRDMA_CACHE" 2>/dev/null
stamp() { # stamp WHAT SECONDS
	echo "$run_id $1 $2" >>"$RPCRDMA_CACHE/run-times.log" 2>/dev/null || true
}
stage() { # stage WHAT: the time since the last stage
	stamp "$1" $((SECONDS - stage_t0))
	stage_t0=$SECONDS
}
finish() {
	stamp "total:${passed}_passed,${failed}_failed,${skipped}_skipped" $SECONDS
	echo "# totals: $passed passed, $failed failed, $skipped skipped"
	echo "$passed passed, $failed failed, $skipped skipped"
	exit $(( failed > 0 ))
}

echo "TAP version 13"
scripts/install-deps.sh >&2 || { result FAIL "host dependencies install"; finish; }
stage install-deps

# 2a. The kernel (cached after the first run) builds while the host tests run: on a fresh
# machine its ~10 minutes leave a core idle for long stretches (the source's unpacking, the
# single rustc of its kernel crate, the final link), which the host tests' cold cargo builds
# fill. Its output goes to stderr once it is done; its last line names the build directory.
kernel_opts=()
[ $debug = 1 ] && kernel_opts=(--debug)
kernel_out=$(mktemp)
{ scripts/build-kernel.sh "${kernel_opts[@]}" >"$kernel_out" 2>&1; echo $? >"$kernel_out.rc"; } &
kernel_pid=$!

# 1. Host tests of rust/proto and of tools/rpcrdma-decode (the capture decoder built on it):
# every cargo test counts as one test case (an ignored one is a skip, and no skip is allowed
# there).
cargo_tests() { # cargo_tests dir: the crate's tests as counted cases, then clippy
	local dir=$1 out rc p f ig
	out=$(cd "$dir" && cargo test --locked 2>&1)
	rc=$?
	p=$(echo "$out" | grep -oE 'test result: [a-zA-Z]+\. [0-9]+ passed' | awk '{s+=$4} END {print s+0}')
	f=$(echo "$out" | grep -oE '[0-9]+ failed' | awk '{s+=$1} END {print s+0}')
	ig=$(echo "$out" | grep -oE '[0-9]+ ignored' | awk '{s+=$1} END {print s+0}')
	echo "# $dir: cargo test: $p passed, $f failed, $ig ignored"
	echo "$out" | grep -E '^test .* FAILED|panicked' | sed 's/^/# /'
	passed=$((passed + p)) failed=$((failed + f + ig)) skipped=$((skipped + ig))
	if [ $rc != 0 ] && [ "$f" = 0 ]; then
		echo "$out" | tail -n 30 | sed 's/^/# /'; result FAIL "$dir: cargo test builds and runs"
	fi
	check "$dir: cargo clippy --all-targets is clean" \
		bash -c 'cd "$1" && cargo clippy --locked --all-targets -q -- -D warnings' - "$dir"
}
cargo_tests rust/proto
cargo_tests tools/rpcrdma-decode
# The benchmark is no test, but its tables are what the notes quote: its renderer, on a
# checked-in two-round result (medians, the rounds' ratio range, switches and rxe packets per
# RPC, an RNR NAK).
bench_renders() {
	local out
	out=$(scripts/bench.sh --render scripts/testdata/bench-two-rounds.results) || return 1
	grep -qF '| 890 IOPS (x1.00; x0.90-1.10) |' <<<"$out" &&
		grep -qF '| 575 + 575 us (x0.87, x0.87) |' <<<"$out" &&
		grep -qF '| 2.6 + 3.0 (x1.00, x1.00) |' <<<"$out" &&
		grep -qF '| 3.0 + 6.0 (x1.00, x1.00); RNR NAKs 1 + 0 |' <<<"$out" ||
		{ echo "$out"; return 1; }
}
check "bench: renders a two-round result (medians, ratio ranges, switches, packets)" bench_renders
# The guests' profile summary counts each module's samples by address (/proc/modules), also
# those perf resolved under another module or left as bare addresses: on fixed inputs, 3 of 10
# samples are ours (one that perf put under sunrpc), 1 is sunrpc's.
perf_summary_attributes() {
	local d=scripts/testdata/perf-summary
	python3 scripts/guest/perf_summary.py client 3 randread-4k-qd16 $d/p $d/proc |
		python3 -c 'import json, sys
j = json.load(sys.stdin)
ok = (j["ours_pct"] == 30.0 and j["sunrpc_pct"] == 10.0 and j["ips"] == 10
      and j["dso"] == ["50.00% [kernel.vmlinux]", "30.00% [rpcrdma_rs]", "10.00% user space",
                       "10.00% [sunrpc]"]
      and j["ours"][1] == "10.00% [rpcrdma_rs] [k] rpcrdma_shim_sg_set_page")
sys.exit(0 if ok else print(j) or 1)'
}
check "bench: a guest profile counts each module's samples by address" perf_summary_attributes
# The phases of --phases: per XID (rpc_xdr_sendto's through its task), on three WRITEs of a real
# one-guest trace; and their table.
bench_phases() {
	local out
	out=$(python3 scripts/guest/phases.py guest 3 synclat-4k scripts/testdata/phases-trace.txt) &&
		grep -qF '["WRITE", "encode-transmit", 3, 33, 33], ["WRITE", "transmit-recvfrom", 3, 282, 327], ["WRITE", "process", 3, 49, 465], ["WRITE", "sendto", 3, 24, 32], ["WRITE", "send-reply", 3, 73, 99], ["WRITE", "reply-done", 3, 49, 59]' <<<"$out" ||
		{ echo "$out"; return 1; }
	out=$(scripts/bench.sh --render scripts/testdata/bench-phases.results) || return 1
	grep -qF '| WRITE, sendto (server) | 26 / 72 (n 920) | 24 / 32 (n 3) |' <<<"$out" ||
		{ echo "$out"; return 1; }
}
check "bench: --phases times each step of an RPC from the trace events" bench_phases
check "rustfmt (kernel .rustfmt.toml) is clean" make -s rustfmtcheck
# The fuzz targets build (on the stable toolchain: libFuzzer runs inputs given as files without
# coverage instrumentation) and replay their checked-in corpora, one case per target.
if out=$(cd rust/proto/fuzz && cargo build --locked --bins -q 2>&1); then
	for tgt in rust/proto/fuzz/fuzz_targets/*.rs; do
		tgt=$(basename "$tgt" .rs)
		check "fuzz: $tgt replays its $(find "rust/proto/fuzz/corpus/$tgt" -type f | wc -l) corpus inputs" \
			bash -c 'f=("$2"/*); [ -e "${f[0]}" ] && "$1" "${f[@]}"' - \
			"rust/proto/fuzz/target/debug/$tgt" "rust/proto/fuzz/corpus/$tgt"
	done
else
	echo "$out" | tail -n 30 | sed 's/^/# /'; result FAIL "fuzz targets build"
fi

stage host-tests

# 2b. The kernel (the "kernel" stage is the wait for it after the host tests) and the module.
wait "$kernel_pid"
cat "$kernel_out" >&2
kdir=$(tail -n 1 "$kernel_out") kernel_rc=$(cat "$kernel_out.rc" 2>/dev/null)
rm -f "$kernel_out" "$kernel_out.rc"
if [ "$kernel_rc" != 0 ] || [ ! -d "$kdir" ]; then
	result FAIL "kernel build"; finish
fi
result PASS "kernel build ($(basename "$kdir"))"
stage kernel
export KDIR=$kdir
# The module, twice: clippy's build, then the one the guests load (with --no-vm, here; else
# beside the runner's self-tests of section 3, whose guests mostly wait).
build_module() {
	check "module builds with CLIPPY=1 and no warnings" scripts/build-module.sh CLIPPY=1
	"${KMAKE[@]}" -C "$KDIR" M="$RPCRDMA_TOP" clean >/dev/null 2>&1
	check "module builds with no warnings" scripts/build-module.sh
	stage module
}
if [ $no_vm = 1 ]; then
	build_module
	[ -f rpcrdma_rs.ko ] || result FAIL "rpcrdma_rs.ko exists"
	finish
fi

# --resume: what the kept runs were made of must be what this run would run. The KEY hashes
# what every guest run builds or executes (the module's sources, the capture decoder, the VM
# runner, the kernel's scripts and fragments, the host packages the guests boot with),
# uncommitted changes included, and the parameters this script gives the guests. The tests'
# own scripts and helpers are not in it: each kept run carries its own hash of them
# (NAME.inputs: see test_key), so that changing one test runs that test again, not the whole
# debug suite. (The selftests' Makefile, config and settings are for kselftest's own runner:
# no guest here reads them.) This script's counting, the documentation, the
# benchmark and the host-only tests are in neither: changing them keeps the runs, which are
# replayed through the counting of the day.
test_dir=tools/testing/selftests/rpcrdma
# test_files SCRIPT: the files of test_dir a test uses: its script and, transitively, every
# one of them that a file of the set names outside comment lines (by its file name; a Python
# helper also by its module name, which its file name contains). Naming a file it does not use
# only makes a test run again more often than it must.
test_files() {
	local todo=("$1") seen=" " f n names
	names=$(cd "$test_dir" && for n in *; do echo "${n%.py}"; done)
	while [ ${#todo[@]} -gt 0 ]; do
		f=${todo[0]} todo=("${todo[@]:1}")
		[[ $seen == *" $f "* ]] && continue
		seen+="$f "
		echo "$test_dir/$f"
		for n in $(grep -v '^[[:space:]]*#' "$test_dir/$f" | grep -owF "$names" | sort -u); do
			[ -f "$test_dir/$n" ] || n=$n.py
			[ -f "$test_dir/$n" ] && todo+=("$n")
		done
	done
}
# test_key KEY: the hash of the test files of a guest run's KEY ("-" for the runner's own
# self-tests, which run no test file), uncommitted changes included.
test_key() {
	local script files
	script=${1%%.sh*}.sh
	if [[ $1 != *.sh* ]] || [ ! -f "$test_dir/$script" ]; then echo -; return; fi
	mapfile -t files < <(test_files "$script" | sort)
	{ git ls-files -s -- "${files[@]}"; git diff HEAD -- "${files[@]}"; } | sha256sum | cut -c1-16
}
if [ -n "$resume" ]; then
	guest_inputs=(rust ':!rust/proto/tests' ':!rust/proto/fuzz' shim include Kbuild Makefile tools
		':!*.md' ":!$test_dir" scripts/vm.sh scripts/vm-pair.sh
		scripts/lib.sh scripts/kernel scripts/build-kernel.sh scripts/build-module.sh
		scripts/fetch-kernel.sh scripts/install-deps.sh)
	sources=$({ git ls-files -s -- "${guest_inputs[@]}"; git diff HEAD -- "${guest_inputs[@]}"
		echo "kernel $(basename "$kdir") debug $debug udev ${udev:-default} ${vm_opts[*]}"
		echo "guest_env $guest_env slow $RPCRDMA_SLOW nic ${RPCRDMA_NIC_OPTS:-}"
		echo "timeouts $single_timeout $pair_timeout $boot_timeout"; } |
		sha256sum | cut -c1-16)
	resume=$resume/$sources
	mkdir -p "$resume" || { result FAIL "--resume: cannot create $resume"; finish; }
	[ -f "$resume/sources" ] ||
		echo "$sources $(git rev-parse --short HEAD) $(date -u +%FT%TZ)" >"$resume/sources"
	echo "# --resume $resume: runs of $(cut -d' ' -f2- "$resume/sources"), $(find "$resume" -name '*.rc' | wc -l) kept"
fi
# recorded KEY COMMAND...: runs COMMAND (a guest run), printing its output (stdout and stderr)
# and returning its status; with --resume, keeps both under KEY (the guests' command line
# additions appended), or replays them when already kept.
recorded() {
	local f rc tk key=$1
	shift
	if [ -z "$resume" ]; then "$@" 2>&1; return; fi
	f=$resume/$(printf '%s' "$key${RPCRDMA_GUEST_APPEND:+ $RPCRDMA_GUEST_APPEND}" | tr -c 'A-Za-z0-9._=,-' _)
	tk=$(test_key "$key")
	if [ -f "$f.rc" ] && [ "$(cat "$f.inputs" 2>/dev/null)" != "$tk" ]; then
		echo "# --resume: $(basename "$f"): its test files changed since its run; running it again"
		rm -f "$f.rc" "$f.at" "$f.out" "$f.inputs"
	fi
	if [ -f "$f.rc" ]; then
		echo "# kept by --resume: $(basename "$f"), run at $(cat "$f.at" 2>/dev/null ||
			date -u -r "$f.rc" +%FT%TZ)"
		cat "$f.out"
		return "$(cat "$f.rc")"
	fi
	"$@" >"$f.out" 2>&1
	rc=$?
	# A run cut short (the session ending under it: vm.sh and vm-pair.sh exit 143 on SIGTERM
	# or SIGINT) is not kept.
	[ $rc = 143 ] || { echo "$tk" >"$f.inputs"; echo $rc >"$f.rc"; date -u +%FT%TZ >"$f.at"; }
	cat "$f.out"
	return $rc
}

# 3. The VM runner itself: a guest that panics, or that hangs, must be reported as a failure.
# Its guests run in the background while the module builds (the hung one idles until its
# timeout); their results are counted afterwards, in order (replay_results).
expect_vm_failure() { # expect_vm_failure WHAT TIMEOUT COMMAND...
	local what=$1 t=$2 out rc=0; shift 2
	out=$(recorded "runner $what" scripts/vm.sh "${vm_opts[@]}" --name selftest --timeout "$t" -- "$@") || rc=$?
	[ $rc != 0 ] && echo "$out" | grep -q "FAILED (selftest): $what"
}
# QEMU itself must be gone, not only the launcher (a leftover guest would eat a core for an hour).
no_guest_left() { # no launcher of this checkout's self-test guests still runs
	local p
	for p in $(pgrep -f "virtme-run --name selftest"); do
		[ "$(readlink /proc/$p/cwd)" = "$PWD" ] && return 1
	done
	return 0
}
# A guest whose every KTAP case passed and whose command succeeded still fails when its kernel
# reports a problem after the last case: here a WARNING line on the console (written to
# /dev/kmsg in the kernel's format: the bench kernel has no way to raise a real WARN from user
# space; the runner reads the console either way).
warn_after_ktap() {
	local out rc=0
	# One line: the guest's command line does not carry newlines.
	out=$(recorded "runner warn after ktap" scripts/vm.sh "${vm_opts[@]}" --name selftest --timeout "$boot_timeout" -- sh -c 'echo "TAP version 13"; echo "1..1"; echo "ok 1 all good"; echo "WARNING: CPU: 0 PID: 1 at runner_selftest.c:1 runner_selftest+0x0/0x10" >/dev/kmsg; exit 0') || rc=$?
	[ $rc != 0 ] && echo "$out" | grep -q '^ok 1 all good' &&
		echo "$out" | grep -q 'FAILED (selftest): guest kernel report: WARNING: CPU: 0'
}
# The same for a task stuck in D state: a writer to a frozen file system, reported by the
# hung-task detector (debug kernel only: CONFIG_DETECT_HUNG_TASK).
hung_task_report() {
	local out rc=0 img
	# On a fresh machine whose earlier guest runs were all replayed (--resume), nothing has
	# made the VM cache directory yet.
	mkdir -p "$RPCRDMA_CACHE/vm" && img=$(mktemp "$RPCRDMA_CACHE/vm/disk.XXXXXX") &&
		truncate -s 64M "$img" &&
		mkfs.ext4 -q -F "$img" || return 1
	out=$(recorded "runner hung task" scripts/vm.sh "${vm_opts[@]}" --name selftest --timeout 900 --disk "$img" -- sh -c 'echo "TAP version 13"; echo "1..1"; echo "ok 1 all good"; mount -t ext4 /dev/vda /mnt || exit 0; echo 3 >/proc/sys/kernel/hung_task_timeout_secs; fsfreeze -f /mnt && { echo x >/mnt/f & } && sleep 20; fsfreeze -u /mnt; wait; exit 0') || rc=$?
	rm -f "$img"
	[ $rc != 0 ] && echo "$out" | grep -q 'FAILED (selftest): guest kernel report: INFO: task'
}
runner_self_tests() {
	check "vm runner reports a guest kernel panic" \
		expect_vm_failure "guest kernel crashed" "$boot_timeout" sh -c 'echo c > /proc/sysrq-trigger'
	check "vm runner kills a hung guest at its timeout" \
		expect_vm_failure "guest did not finish within 45s" 45 sleep 3600
	check "vm runner leaves no guest process behind" no_guest_left
	check "vm runner fails a guest whose kernel warns after its last KTAP case" warn_after_ktap
	if grep -q '^CONFIG_DETECT_HUNG_TASK=y' "$kdir/.config"; then
		check "vm runner detects a hung task" hung_task_report
	elif skip_allowed runner "ok 0 vm runner detects a hung task"; then
		echo "ok 0 vm runner detects a hung task # SKIP no CONFIG_DETECT_HUNG_TASK in this kernel"
	else
		result FAIL "vm runner detects a hung task: no CONFIG_DETECT_HUNG_TASK, and no skip allowed"
	fi
}
# replay_results FILE: counts and prints, renumbered, the results a background stage printed
# (a "# SKIP" there is one the allow-list let through).
replay_results() {
	local line
	while IFS= read -r line; do
		case "$line" in
		"not ok "*) line=${line#not ok }; result FAIL "${line#* }" ;;
		"ok "*" # SKIP"*) line=${line#ok }; skipped=$((skipped + 1)) n=$((n + 1))
			echo "ok $n ${line#* }" ;;
		"ok "*) line=${line#ok }; result PASS "${line#* }" ;;
		*) echo "$line" ;;
		esac
	done <"$1"
}
selftests_out=$(mktemp)
runner_self_tests >"$selftests_out" &
selftests_pid=$!
build_module
wait "$selftests_pid"
replay_results "$selftests_out"
rm -f "$selftests_out"
stage runner-self-tests
[ -f rpcrdma_rs.ko ] || { result FAIL "rpcrdma_rs.ko exists"; finish; }

# Adds the KTAP test cases of one kselftest's output ($1, test $2) to the totals: "ok N" and
# "not ok N" lines, "# SKIP" cases (a failure unless skip_allowed), and as failures the cases
# its plan announced but it never reported (crash, timeout). Sets p, f, sk and missing for the
# caller's summary line.
tally() {
	local plan line bad=0
	plan=$(echo "$1" | sed -n 's/^1\.\.\([0-9]*\).*/\1/p' | head -1)
	p=$(echo "$1" | grep -E '^ok [0-9]+' | grep -cvE '# SKIP')
	f=$(echo "$1" | grep -cE '^not ok [0-9]+')
	sk=0
	while IFS= read -r line; do
		[ -n "$line" ] || continue
		if skip_allowed "$2" "$line"; then
			sk=$((sk + 1))
		else
			echo "# $2: a skip that is not on the allow-list counts as a failure: $line"
			bad=$((bad + 1))
		fi
	done < <(echo "$1" | grep -E '^ok [0-9]+.*# SKIP')
	missing=$(( ${plan:-1} - p - f - sk - bad ))
	[ $missing -lt 0 ] && missing=0
	f=$((f + bad))
	passed=$((passed + p)) failed=$((failed + f + missing)) skipped=$((skipped + sk))
}

# The verdict of one guest, from scripts/vm.sh's output ($1) for guest NAME ($2) and the exit
# status ($3): one counted case. A guest that the test resets on purpose ($4 = vanish) must
# end without an exit status and without any kernel report.
guest_verdict() {
	local out=$1 name=$2 rc=$3 why
	why=$(echo "$out" | sed -n "s/.*FAILED ($name): \(.*\); console tail:.*/\1/p" | head -n 1)
	if [ "${4:-}" = vanish ]; then
		case "$why" in
		"guest ended without the command's exit status"*)
			result PASS "$5: guest $name vanished as the test intends" ;;
		*) result FAIL "$5: guest $name vanished as the test intends (${why:-exit $rc})" ;;
		esac
	elif [ "$rc" = 0 ] && [ -z "$why" ]; then
		result PASS "$5: guest $name ends cleanly"
	else
		result FAIL "$5: guest $name ends cleanly (exit $rc${why:+: $why})"
	fi
}

# 4. kselftests: single-guest tests, one guest each, and two-guest tests (section 5), the two
# streams side by side.
ksft_dir=$(readlink -f "$kdir/source")/tools/testing/selftests
# TEST_PROGS of the kselftest Makefile, continuation lines joined.
tests=$(sed -e ':a' -e '/\\$/N; s/\\\n//; ta' tools/testing/selftests/rpcrdma/Makefile |
	sed -n 's/^TEST_PROGS := //p')
[ ${#only[@]} -gt 0 ] && tests=$(printf '%s\n' "${only[@]}" | grep -v '^pair_' || true)
# Single-guest tests run $jobs at a time (RPCRDMA_JOBS, default 1); each writes its output and
# exit status to files, and they are reported and counted in the order of the list.
jobs=${RPCRDMA_JOBS:-1}
single_dir=$(mktemp -d "${TMPDIR:-/tmp}/rpcrdma-tests.XXXXXX")
pairs_pid=
# kill_tree PID: PID and its descendants (the pairs' stream and its guests, if the run ends early).
kill_tree() {
	local c
	for c in $(pgrep -P "$1" 2>/dev/null); do kill_tree "$c"; done
	kill "$1" 2>/dev/null
}
trap '[ -z "$pairs_pid" ] || kill_tree "$pairs_pid"; rm -rf "$single_dir"' EXIT
# wait_rc FILE: until FILE (a finished guest run's exit status) exists.
wait_rc() {
	while [ ! -f "$1" ]; do sleep 1; done
}
start_single() { # start_single TEST.sh: boot its guest in the background
	local t=$1
	rm -f "$single_dir/$t.rc"
	{
		local t0=$SECONDS
		recorded "$t" scripts/vm.sh "${vm_opts[@]}" --name "${t%.sh}" --timeout "$single_timeout" -- \
			env $guest_env KSFT_DIR="$ksft_dir" RPCRDMA_KO="$RPCRDMA_TOP/rpcrdma_rs.ko" \
			RPCRDMA_SLOW=$RPCRDMA_SLOW bash "tools/testing/selftests/rpcrdma/$t" \
			>"$single_dir/$t.out" 2>&1
		local rc=$?
		echo $((SECONDS - t0)) >"$single_dir/$t.secs"
		echo $rc >"$single_dir/$t.rc"
	} &
}
report_single() { # report_single TEST.sh: print and count the verdicts of its finished guest
	local t=$1 out rc secs
	out=$(cat "$single_dir/$t.out") rc=$(cat "$single_dir/$t.rc") secs=$(cat "$single_dir/$t.secs")
	echo "# selftests: rpcrdma: $t${RPCRDMA_GUEST_APPEND:+ (guests booted with $RPCRDMA_GUEST_APPEND)}"
	echo "$out" | sed 's/^/# /'
	tally "$out" "$t"
	echo "# $t: $p passed, $f failed, $sk skipped, $missing not run, ${secs}s"
	stamp "$t${RPCRDMA_GUEST_APPEND:+_$RPCRDMA_GUEST_APPEND}" "$secs"
	guest_verdict "$out" "${t%.sh}" $rc "" "$t${RPCRDMA_GUEST_APPEND:+ ($RPCRDMA_GUEST_APPEND)}"
}
run_single() { # run_single TEST.sh: one kselftest in its own guest, alone
	start_single "$1"
	wait_rc "$single_dir/$1.rc"
	report_single "$1"
}

# Two-guest tests: "<script> server" in guest srv, "<script> client" in guest cli, joined by
# a virtual link; the client prints KTAP and the server's exit status is one more case. A test
# whose client is meant to die (pair_server_client_vanish.sh) has the server print the KTAP:
# the cases of each side that prints a KTAP header count, and the client's output counts
# (as one failure if empty) when the server prints none. An entry
# "<script>:VAR=value,VAR=value" runs the script with that environment in both guests (the same
# script serves several pairings, e.g. pair_nfs.sh's RPCRDMA_SERVER/RPCRDMA_CLIENT/RPCRDMA_DEV).
# The C/C reference pairing and the rest of the matrix run with --only: see
# Documentation/testing.md.
pairs="pair_client_connect.sh
pair_nfs.sh:RPCRDMA_SERVER=c,RPCRDMA_CLIENT=rs,RPCRDMA_DEV=rxe
pair_nfs.sh:RPCRDMA_SERVER=c,RPCRDMA_CLIENT=rs,RPCRDMA_DEV=siw pair_client_device_removal.sh
pair_nfs.sh:RPCRDMA_SERVER=c,RPCRDMA_CLIENT=rs,RPCRDMA_DEV=rxe,RPCRDMA_MAX_VERSION=2,NFS_VERSIONS=3,4.2,NFS_DIR_ENTRIES=1000,NFS_CREATE_ENTRIES=500
pair_server_nfs.sh pair_server_nfs_siw.sh pair_server_client_vanish.sh
pair_server_client_vanish.sh:RPCRDMA_VANISH_CLOSE=server pair_server_client_vanish.sh:RPCRDMA_DEV=siw
pair_server_link_bounce.sh pair_server_backchannel.sh
pair_backchannel.sh:RPCRDMA_SERVER=c,RPCRDMA_CLIENT=rs,RPCRDMA_DEV=rxe
pair_backchannel.sh:RPCRDMA_SERVER=c,RPCRDMA_CLIENT=rs,RPCRDMA_DEV=siw
pair_backchannel.sh:RPCRDMA_SERVER=rs,RPCRDMA_CLIENT=rs,RPCRDMA_DEV=rxe,RPCRDMA_MAX_VERSION=2
pair_backchannel.sh:RPCRDMA_SERVER=rs,RPCRDMA_CLIENT=c,RPCRDMA_DEV=rxe
pair_v2_capture.sh
pair_keepalive.sh"
# "A=1,B=x,y" -> the shell words A=1 B=x\ y: a piece without "=" continues the previous value
# with a space, so that lists fit (NFS_VERSIONS=3,4.2).
pair_env() {
	local IFS=, piece words=()
	for piece in $1; do
		if [[ $piece == *=* ]] || [ ${#words[@]} = 0 ]; then words+=("$piece")
		else words[-1]+=" $piece"; fi
	done
	[ ${#words[@]} = 0 ] || printf '%q ' "${words[@]}"
}
[ ${#only[@]} -gt 0 ] && pairs=$(printf '%s\n' "${only[@]}" | grep '^pair_' || true)
# pair_guests ENTRY BASE: runs one two-guest test (both guests), its output into BASE.out, its
# wall-clock seconds into BASE.secs and vm-pair.sh's status into BASE.rc (written last).
pair_guests() {
	local t=$1 base=$2 script vars env_cmd t0=$SECONDS rc
	script=${t%%:*} vars=
	[ "$script" = "$t" ] || vars=$(pair_env "${t#*:}")
	env_cmd="env ${guest_env}${vars}KSFT_DIR=$ksft_dir RPCRDMA_KO=$RPCRDMA_TOP/rpcrdma_rs.ko RPCRDMA_SLOW=$RPCRDMA_SLOW bash $RPCRDMA_TOP/tools/testing/selftests/rpcrdma/$script"
	recorded "$t${RPCRDMA_GUEST_APPEND:+ ($RPCRDMA_GUEST_APPEND)}" scripts/vm-pair.sh "${vm_opts[@]}" \
		--timeout "$pair_timeout" "$env_cmd server" "$env_cmd client" >"$base.out" 2>&1
	rc=$?
	echo $((SECONDS - t0)) >"$base.secs"
	echo $rc >"$base.rc"
}
report_pair() { # report_pair ENTRY BASE: print and count the verdicts of a finished pair_guests
	local t=$1 base=$2 script out rc tp tf ts tm srv_ktap side ktap rc_srv rc_cli cli_mode secs
	script=${t%%:*}
	echo "# selftests: rpcrdma: $t (two guests)${RPCRDMA_GUEST_APPEND:+ (guests booted with $RPCRDMA_GUEST_APPEND)}"
	t+=${RPCRDMA_GUEST_APPEND:+ ($RPCRDMA_GUEST_APPEND)}
	out=$(cat "$base.out") rc=$(cat "$base.rc") secs=$(cat "$base.secs")
	echo "$out" | sed 's/^/# /'
	tp=0 tf=0 ts=0 tm=0 srv_ktap=0
	for side in srv cli; do
		ktap=$(echo "$out" | sed -n "s/^$side| //p")
		if echo "$ktap" | grep -q '^TAP version'; then
			[ $side = srv ] && srv_ktap=1
		elif [ $side = srv ] || [ $srv_ktap = 1 ]; then
			continue
		fi
		tally "$ktap" "$script"
		tp=$((tp + p)) tf=$((tf + f)) ts=$((ts + sk)) tm=$((tm + missing))
	done
	echo "# $t: $tp passed, $tf failed, $ts skipped, $tm not run, ${secs}s"
	stamp "${t// /_}" "$secs"
	# Both guests' own verdicts (vm-pair.sh logs "server exit N, client exit N"; vm.sh the
	# reason of a failed guest). The client of pair_server_client_vanish.sh resets itself.
	rc_srv=$(echo "$out" | sed -n 's/.*server exit \([0-9]*\), client exit \([0-9]*\).*/\1/p' | tail -n 1)
	rc_cli=$(echo "$out" | sed -n 's/.*server exit \([0-9]*\), client exit \([0-9]*\).*/\2/p' | tail -n 1)
	guest_verdict "$out" srv "${rc_srv:-none}" "" "$t"
	cli_mode=
	[ "$script" = pair_server_client_vanish.sh ] && cli_mode=vanish
	guest_verdict "$out" cli "${rc_cli:-none}" "$cli_mode" "$t"
	[ $rc = 0 ] || echo "# $t: vm-pair exit $rc"
}
run_pair() { # run_pair ENTRY: one two-guest test, alone
	rm -f "$single_dir/pair.rc"
	pair_guests "$1" "$single_dir/pair"
	report_pair "$1" "$single_dir/pair"
}

# With RPCRDMA_BESIDE=1 (the default) the two-guest tests run one after another beside the
# single-guest tests, instead of after them, as two runners did by hand at each debug key: a
# pair's two 1-vCPU guests wait on each other's packets and on their handshakes much of the
# time, and a single-guest test's CPU-bound guest fills it. They are reported after the
# single-guest tests, in the order of the list. Measured on the 2-core machine, normal kernel,
# 2026-12-07: the whole suite in 2382 s, 991 passed, 0 failed, 1 skipped (the single-guest tests
# about twice as slow as alone, the pairs 1.3 times), where its guests one after the other
# would take ~2800 s (the pairs 1560 s alone that morning, the others ~1150 s, estimated).
# RPCRDMA_BESIDE=0 runs each pair after the single-guest tests and reports it as
# it ends.
beside=${RPCRDMA_BESIDE:-1}
pair_files=()
i=0
for t in $pairs; do
	pair_files+=("$single_dir/pair$i")
	i=$((i + 1))
done
# claim TEST.sh: whether this stream is the one to run TEST.sh (the first to ask; mkdir is atomic).
claim() {
	mkdir "$single_dir/$1.claim" 2>/dev/null
}
# The stream of pairs, when it gets through them before the single-guest tests end, runs the
# single-guest tests not yet started, from the end of the list (the main stream claims from its
# head, so that the tests it runs stay a prefix of the list and those run here the rest).
run_pairs() {
	local t i=0 rev=()
	for t in $pairs; do
		pair_guests "$t" "${pair_files[i]}"
		i=$((i + 1))
	done
	for t in $tests; do rev=("$t" "${rev[@]}"); done
	for t in "${rev[@]}"; do
		claim "$t" || break
		start_single "$t"
		wait_rc "$single_dir/$t.rc"
	done
}
if [ "$beside" = 1 ] && [ -n "$pairs" ]; then
	run_pairs &
	pairs_pid=$!
fi

# Single-guest tests.
started=() reported=0
report_finished() { # reports the finished tests at the head of the list, in order
	while [ $reported -lt ${#started[@]} ] && [ -f "$single_dir/${started[reported]}.rc" ]; do
		report_single "${started[reported]}"
		reported=$((reported + 1))
	done
}
running_singles() { # how many started single-guest tests have not finished
	local t n=0
	for t in "${started[@]}"; do
		[ -f "$single_dir/$t.rc" ] || n=$((n + 1))
	done
	echo $n
}
for t in $tests; do
	while [ "$(running_singles)" -ge "$jobs" ]; do
		sleep 1
		report_finished
	done
	[ "$beside" = 1 ] && [ -n "$pairs" ] && { claim "$t" || break; }
	start_single "$t"
	started+=("$t")
done
# Those the stream of pairs took, if any, are the rest of the list.
started=($tests)
for t in "${started[@]}"; do
	wait_rc "$single_dir/$t.rc"
done
report_finished

# 5. Two-guest tests, reported in order: each as it ends, or, if they ran beside the others,
# as the stream beside gets through them.
i=0
for t in $pairs; do
	if [ "$beside" = 1 ]; then
		wait_rc "${pair_files[i]}.rc"
	else
		pair_guests "$t" "${pair_files[i]}"
	fi
	report_pair "$t" "${pair_files[i]}"
	i=$((i + 1))
done
# The stream of pairs ends once it finds the next single-guest test taken: it must find its
# last one's status before the exit removes $single_dir, or it waits for it forever.
[ -z "$pairs_pid" ] || wait "$pairs_pid"
pairs_pid=

# 6. The debug kernel's extra pass: every DMA mapping bounced (swiotlb=force), for both ends of
# rpcrdma_rs in one guest and for our client against the C server.
if [ $debug = 1 ] && [ ${#only[@]} = 0 ]; then
	export RPCRDMA_GUEST_APPEND=swiotlb=force
	run_single rs_nfs_loopback.sh
	run_pair pair_nfs.sh:RPCRDMA_SERVER=c,RPCRDMA_CLIENT=rs,RPCRDMA_DEV=rxe,NFS_VERSIONS=3,4.2
fi
finish
