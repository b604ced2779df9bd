#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The rdma abstractions of rpcrdma_rs.ko (rust/rdma) on real verbs paths: loading the module
# runs its KUnit suite rpcrdma_rs_rdma, whose loopback_qp case creates a cm id, resolves
# 192.0.2.1 and its route, allocates a PD, a CQ and a QP, posts a Receive, drains and tears
# everything down with the leak counters back to zero. Once over rxe, once over siw. The
# module's other suites need no device: rpcrdma_rs_xdr (rust/sunrpc/xdr.rs) checks the xdr_buf
# walker against the planner's segment count (marshal::count_segments), rpcrdma_rs_verbs
# (rust/rdma/verbs.rs) the order in which the ledger of unsignaled Sends hands them back,
# rpcrdma_rs_reasm (rust/reasm.rs) that a reassembly buffer grows to no more than its limit.
set -u
. "$(dirname "$0")/lib.sh"

SUITE=rpcrdma_rs_rdma
CASES=7
# The suites that need no device, as SUITE:CASES.
DEVICELESS_SUITES="rpcrdma_rs_xdr:1 rpcrdma_rs_verbs:1 rpcrdma_rs_reasm:1"

ktap_print_header
ktap_set_plan 16

if [ -d /sys/module/rpcrdma ]; then
	ktap_exit_fail_msg "rpcrdma.ko is loaded: this test needs a fresh guest"
fi

# The KUnit report of suite $1 (default: $SUITE) from the kernel log, without timestamps.
suite_ktap() {
	local suite=${1:-$SUITE}
	dmesg | sed -E 's/^\[[ 0-9.]+\] ?//' |
		sed -n "/# Subtest: $suite\$/,/^ *\(not \)\?ok [0-9]\+ $suite\$/p"
}

run_on() {
	local type=$1 ktap
	quiet rdma_link_up "$type" && rdma_wait_active ${type}0 ||
		ktap_print_msg "$type: link not active"
	dmesg -C
	if quiet rpcrdma_rs_load; then
		ktap_test_pass "$type: rpcrdma_rs.ko loads with the RDMA core"
	else
		ktap_test_fail "$type: rpcrdma_rs.ko loads with the RDMA core"
	fi
	ktap=$(suite_ktap)
	echo "$ktap" | sed 's/^/# /'
	if echo "$ktap" | grep -qE "^ok [0-9]+ $SUITE\$" &&
		[ "$(echo "$ktap" | grep -cE '^ +ok [0-9]+ ')" = $CASES ]; then
		ktap_test_pass "$type: KUnit suite $SUITE: all $CASES cases ok"
	else
		ktap_test_fail "$type: KUnit suite $SUITE: all $CASES cases ok"
	fi
	if [ -n "$ktap" ] && ! echo "$ktap" | grep -q 'not ok'; then
		ktap_test_pass "$type: no case not ok"
	else
		ktap_test_fail "$type: no case not ok"
	fi
	for suite in $DEVICELESS_SUITES; do
		cases=${suite#*:} suite=${suite%:*}
		ktap=$(suite_ktap "$suite")
		echo "$ktap" | sed 's/^/# /'
		if echo "$ktap" | grep -qE "^ok [0-9]+ $suite\$" &&
			[ "$(echo "$ktap" | grep -cE '^ +ok [0-9]+ ')" = "$cases" ] &&
			! echo "$ktap" | grep -q 'not ok'; then
			ktap_test_pass "$type: KUnit suite $suite: all $cases cases ok"
		else
			ktap_test_fail "$type: KUnit suite $suite: all $cases cases ok"
		fi
	done
	ktap=$(suite_ktap)
	if echo "$ktap" | grep -qE '^ +ok [0-9]+ loopback_qp$'; then
		ktap_test_pass "$type: loopback_qp ran on the device (not skipped)"
	else
		ktap_test_fail "$type: loopback_qp ran on the device (not skipped)"
	fi
	if rpcrdma_rs_unload; then
		ktap_test_pass "$type: rmmod rpcrdma_rs (still live: 0)"
	else
		ktap_test_fail "$type: rmmod rpcrdma_rs (still live: 0)"
	fi
	rdma_link_down "$type"
}

run_on rxe
run_on siw

ktap_finished
