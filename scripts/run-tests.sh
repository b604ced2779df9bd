#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The whole test suite, from a fresh Debian 12 machine: installs what it needs, runs the host
# tests of the protocol core, builds the kernel (cached) and the module (no warnings, clippy and
# rustfmt clean), then runs every kselftest of tools/testing/selftests/rpcrdma, each in its own
# guest. Prints KTAP as it goes and ends with one line "N passed, N failed".
#
#   scripts/run-tests.sh [--kvm] [--only TEST.sh[:VAR=value,...]]... [--no-vm]
#
# --only takes a kselftest, or a two-guest entry with its environment, e.g.
#   --only pair_nfs.sh:RPCRDMA_SERVER=c,RPCRDMA_CLIENT=rs,RPCRDMA_DEV=siw
set -uo pipefail
. "$(dirname "$0")/lib.sh"

vm_opts=() only=() no_vm=0
# Wall-clock limit of one two-guest run (both guests): the longest, pair_nfs.sh (with 5000
# mkdirs per NFS version), takes ~8 minutes under TCG on the 2-core CI machine, 13 with other
# guests beside it; a hang must not eat the suite's 90 minutes.
pair_timeout=${RPCRDMA_PAIR_TIMEOUT:-1200}
while [ $# -gt 0 ]; do
	case "$1" in
	--kvm) vm_opts+=(--kvm) ;;
	--only) only+=("$2"); shift ;;
	--no-vm) no_vm=1 ;;
	*) die "unknown option $1" ;;
	esac
	shift
done

cd "$RPCRDMA_TOP"
passed=0 failed=0 n=0
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
finish() {
	echo "# totals: $passed passed, $failed failed"
	echo "$passed passed, $failed failed"
	exit $(( failed > 0 ))
}

echo "TAP version 13"
scripts/install-deps.sh >&2 || { result FAIL "host dependencies install"; finish; }

# 1. Host tests of rust/proto: every cargo test counts as one test case.
out=$(cd rust/proto && cargo test --locked 2>&1)
rc=$?
p=$(echo "$out" | grep -oE 'test result: [a-zA-Z]+\. [0-9]+ passed' | awk '{s+=$4} END {print s+0}')
f=$(echo "$out" | grep -oE '[0-9]+ failed' | awk '{s+=$1} END {print s+0}')
echo "# rust/proto: cargo test: $p passed, $f failed"
echo "$out" | grep -E '^test .* FAILED|panicked' | sed 's/^/# /'
passed=$((passed + p)) failed=$((failed + f))
if [ $rc != 0 ] && [ "$f" = 0 ]; then
	echo "$out" | tail -n 30 | sed 's/^/# /'; result FAIL "rust/proto: cargo test builds and runs"
fi
check "rust/proto: cargo clippy --all-targets is clean" \
	bash -c 'cd rust/proto && cargo clippy --locked --all-targets -q -- -D warnings'
check "rustfmt (kernel .rustfmt.toml) is clean" make -s rustfmtcheck

# 2. Kernel (cached) and module.
if ! kdir=$(scripts/build-kernel.sh 2>&1 | tee /dev/stderr | tail -n 1) || [ ! -d "$kdir" ]; then
	result FAIL "kernel build"; finish
fi
result PASS "kernel build ($(basename "$kdir"))"
export KDIR=$kdir
check "module builds with CLIPPY=1 and no warnings" scripts/build-module.sh CLIPPY=1
"${KMAKE[@]}" -C "$KDIR" M="$RPCRDMA_TOP" clean >/dev/null 2>&1
check "module builds with no warnings" scripts/build-module.sh
[ -f rpcrdma_rs.ko ] || { result FAIL "rpcrdma_rs.ko exists"; finish; }
[ $no_vm = 1 ] && finish

# 3. The VM runner itself: a guest that panics, or that hangs, must be reported as a failure.
expect_vm_failure() { # expect_vm_failure WHAT TIMEOUT COMMAND...
	local what=$1 t=$2 out rc=0; shift 2
	out=$(scripts/vm.sh "${vm_opts[@]}" --name selftest --timeout "$t" -- "$@" 2>&1) || rc=$?
	[ $rc != 0 ] && echo "$out" | grep -q "FAILED (selftest): $what"
}
check "vm runner reports a guest kernel panic" \
	expect_vm_failure "guest kernel crashed" 120 sh -c 'echo c > /proc/sysrq-trigger'
check "vm runner kills a hung guest at its timeout" \
	expect_vm_failure "guest did not finish within 45s" 45 sleep 3600
# QEMU itself must be gone, not only the launcher (a leftover guest would eat a core for an hour).
no_guest_left() { # no launcher of this checkout's self-test guests still runs
	local p
	for p in $(pgrep -f "virtme-run --name selftest"); do
		[ "$(readlink /proc/$p/cwd)" = "$PWD" ] && return 1
	done
	return 0
}
check "vm runner leaves no guest process behind" no_guest_left

# Adds the KTAP test cases of one kselftest's output ($1) to the totals: "ok N" and "not ok N"
# lines, and as failures the cases its plan announced but it never reported (crash, timeout).
# Sets p, f and missing for the caller's summary line.
tally() {
	local plan
	plan=$(echo "$1" | sed -n 's/^1\.\.\([0-9]*\).*/\1/p' | head -1)
	p=$(echo "$1" | grep -cE '^ok [0-9]+')
	f=$(echo "$1" | grep -cE '^not ok [0-9]+')
	missing=$(( ${plan:-1} - p - f ))
	[ $missing -lt 0 ] && missing=0
	passed=$((passed + p)) failed=$((failed + f + missing))
}

# 4. kselftests, one guest each.
ksft_dir=$(readlink -f "$kdir/source")/tools/testing/selftests
# TEST_PROGS of the kselftest Makefile, continuation lines joined.
tests=$(sed -e ':a' -e '/\\$/N; s/\\\n//; ta' tools/testing/selftests/rpcrdma/Makefile |
	sed -n 's/^TEST_PROGS := //p')
[ ${#only[@]} -gt 0 ] && tests=$(printf '%s\n' "${only[@]}" | grep -v '^pair_' || true)
for t in $tests; do
	echo "# selftests: rpcrdma: $t"
	out=$(scripts/vm.sh "${vm_opts[@]}" --name "${t%.sh}" --timeout 900 -- \
		env KSFT_DIR="$ksft_dir" RPCRDMA_KO="$RPCRDMA_TOP/rpcrdma_rs.ko" \
		bash "tools/testing/selftests/rpcrdma/$t" 2>&1)
	rc=$?
	echo "$out" | sed 's/^/# /'
	tally "$out"
	if [ $rc = 0 ] && [ $f = 0 ] && [ $missing = 0 ]; then
		echo "ok selftests: rpcrdma: $t ($p cases)"
	else
		echo "not ok selftests: rpcrdma: $t (exit $rc, $f failed, $missing not run)"
	fi
done

# 5. Two-guest tests: "<script> server" in guest srv, "<script> client" in guest cli, joined by
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
pair_server_nfs.sh pair_server_nfs_siw.sh pair_server_client_vanish.sh
pair_server_client_vanish.sh:RPCRDMA_VANISH_CLOSE=server pair_server_client_vanish.sh:RPCRDMA_DEV=siw"
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
for t in $pairs; do
	script=${t%%:*} vars=
	[ "$script" = "$t" ] || vars=$(pair_env "${t#*:}")
	echo "# selftests: rpcrdma: $t (two guests)"
	env_cmd="env ${vars}KSFT_DIR=$ksft_dir RPCRDMA_KO=$RPCRDMA_TOP/rpcrdma_rs.ko bash $RPCRDMA_TOP/tools/testing/selftests/rpcrdma/$script"
	start=$SECONDS
	out=$(scripts/vm-pair.sh "${vm_opts[@]}" --timeout "$pair_timeout" "$env_cmd server" "$env_cmd client" 2>&1)
	rc=$?
	echo "$out" | sed 's/^/# /'
	tp=0 tf=0 tm=0 srv_ktap=0
	for side in srv cli; do
		ktap=$(echo "$out" | sed -n "s/^$side| //p")
		if echo "$ktap" | grep -q '^TAP version'; then
			[ $side = srv ] && srv_ktap=1
		elif [ $side = srv ] || [ $srv_ktap = 1 ]; then
			continue
		fi
		tally "$ktap"
		tp=$((tp + p)) tf=$((tf + f)) tm=$((tm + missing))
	done
	echo "# $t: $tp passed, $tf failed, $tm not run, $((SECONDS - start))s"
	if echo "$out" | grep -q 'server exit 0,'; then
		result PASS "$t: server side ends successfully"
	else
		result FAIL "$t: server side ends successfully"
	fi
	[ $rc = 0 ] || echo "# $t: vm-pair exit $rc"
done
finish
