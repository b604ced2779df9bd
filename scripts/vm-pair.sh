#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Two guests joined by a virtual link (a QEMU UDP socket netdev on 127.0.0.1), for interop runs
# where the C rpcrdma.ko and rpcrdma_rs.ko must live in different kernels. Inside, the link is
# the first en*/eth* interface; by convention the server takes 192.0.2.1 and the client
# 192.0.2.2. Both commands run to completion; exits 0 only if both exit 0.
#
#   scripts/vm-pair.sh [--kvm] [--no-udev] [--timeout SEC] [--port PORT] SERVER_CMD CLIENT_CMD
#
# Each command is a shell command line (run by bash inside its guest); guest names are srv and
# cli. VM options as in scripts/vm.sh; each guest gets 1 vCPU (the host has 2 cores).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

opts=() port=$((20000 + RANDOM % 20000)) timeout=900
while [ $# -gt 2 ]; do
	case "$1" in
	--kvm) opts+=(--kvm) ;;
	--no-udev) opts+=(--no-udev) ;;
	--timeout) timeout=$2; shift ;;
	--port) port=$2; shift ;;
	*) die "unknown option $1" ;;
	esac
	shift
done
[ $# = 2 ] || die "usage: $0 [options] SERVER_CMD CLIENT_CMD"

# The link's UDP sockets take the host's default receive buffer (QEMU sets none): with 208 KiB a
# burst of frames overflows it while the receiving guest is busy, and rxe's go-back-N
# retransmissions cut bulk transfers by 2-3x (1 MiB reads 7.7 vs 13.3 MiB/s). Raise it (never
# lower it) for sockets created from now on.
rmem=$(cat /proc/sys/net/core/rmem_default 2>/dev/null || echo 0)
if [ "$rmem" -lt 4194304 ] && echo 4194304 >/proc/sys/net/core/rmem_default 2>/dev/null; then
	log "net.core.rmem_default raised from $rmem to 4194304 for the guests' link"
fi

vm=$RPCRDMA_TOP/scripts/vm.sh
srv_log=$(mktemp) cli_log=$(mktemp)
trap 'rm -f "$srv_log" "$cli_log"' EXIT
"$vm" "${opts[@]}" --name srv --cpus 1 --memory 1536M --timeout "$timeout" \
	--link "listen:$port" --mac 52:54:00:12:34:01 -- bash -c "$1" >"$srv_log" 2>&1 &
srv=$!
sleep 3
rc_cli=0 rc_srv=0
"$vm" "${opts[@]}" --name cli --cpus 1 --memory 1536M --timeout "$timeout" \
	--link "connect:$port" --mac 52:54:00:12:34:02 -- bash -c "$2" >"$cli_log" 2>&1 || rc_cli=$?
wait $srv || rc_srv=$?
sed 's/^/srv| /' "$srv_log"
sed 's/^/cli| /' "$cli_log"
log "server exit $rc_srv, client exit $rc_cli"
[ $rc_srv = 0 ] && [ $rc_cli = 0 ]
