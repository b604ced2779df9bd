#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The bench itself: each soft RDMA device (rxe, siw) comes up on a veth and carries an RDMA CM
# connection (rping: connect, RDMA Read/Write and Send round trips, disconnect).
set -u
. "$(dirname "$0")/lib.sh"

ktap_print_header
ktap_set_plan 4

for type in rxe siw; do
	if quiet rdma_link_up $type && rdma_wait_active ${type}0; then
		ktap_test_pass "$type: ${type}0 on veth0 is ACTIVE"
	else
		ktap_test_fail "$type: ${type}0 on veth0 is ACTIVE"
	fi
	# The server is bounded too: a client that never reaches it must not leave the test
	# waiting forever. Under load the server may not listen yet: the client retries.
	timeout 90 rping -s -a $SRV_ADDR -C 3 >/dev/null 2>&1 &
	server=$!
	for try in 1 2 3 4 5 6 7 8 9 10; do
		sleep 1
		out=$(timeout 30 rping -c -a $SRV_ADDR -C 3 -S 64 -v 2>&1)
		rc=$?
		n=$(echo "$out" | grep -c 'ping data:')
		[ $rc = 0 ] && break
	done
	[ $rc = 0 ] || kill $server 2>/dev/null
	wait $server 2>/dev/null
	if [ $rc = 0 ] && [ "$n" = 3 ]; then
		ktap_test_pass "$type: rping completes 3 round trips"
	else
		ktap_print_msg "rping rc=$rc, $n round trips: $out"
		ktap_test_fail "$type: rping completes 3 round trips"
	fi
	rdma_link_down $type
done

ktap_finished
