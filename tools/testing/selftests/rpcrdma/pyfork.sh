# SPDX-License-Identifier: GPL-2.0
# The hostile tests' pyverbs peers, run by pyfork.py: python3 and pyverbs start once per test,
# not once per case (seconds each in a TCG guest), and each case still runs in a process of
# its own (see pyfork.py). Sourced by the tests after lib.sh.

# pyfork_start PEER.py: start the fork server for PEER (in the background, until the test ends).
pyfork_start() {
	PYFORK_DIR=$(mktemp -d)
	mkfifo "$PYFORK_DIR/req" "$PYFORK_DIR/reply" || return 1
	/usr/bin/python3 "$RPCRDMA_SELFTEST_DIR/pyfork.py" "$1" "$PYFORK_DIR/req" \
		</dev/null 2>"$PYFORK_DIR/err" &
	PYFORK_PID=$!
	# Both FIFOs held open for reading and writing: no open ever waits for the other end.
	exec {PYFORK_REQ}<>"$PYFORK_DIR/req" {PYFORK_REPLY}<>"$PYFORK_DIR/reply"
}

# pyfork_run SECONDS ARG...: as `timeout -s KILL SECONDS python3 PEER ARG...` (0: no limit),
# with the caller's standard output and error; returns the peer's status (124: killed at the
# limit). One at a time. The peer's pid is in $PYFORK_DIR/pid while it runs.
pyfork_run() {
	local secs=$1 l rc
	shift
	kill -0 "$PYFORK_PID" 2>/dev/null || { echo "pyfork: the fork server is gone" >&2; return 1; }
	rm -f "$PYFORK_DIR/pid"
	echo "$secs $PYFORK_DIR/pid $PYFORK_DIR/reply /proc/$BASHPID/fd/1 /proc/$BASHPID/fd/2 $*" >&$PYFORK_REQ
	read -r l rc <&$PYFORK_REPLY
	[ "$l" = rc ] || return 1
	return "$rc"
}

# pyfork_kill: end the peer pyfork_run is running (in the background), as kill(1) would.
pyfork_kill() {
	local i
	for i in 1 2 3 4 5 6 7 8 9 10; do
		[ -s "$PYFORK_DIR/pid" ] && break
		sleep 0.1
	done
	kill "$(cat "$PYFORK_DIR/pid" 2>/dev/null)" 2>/dev/null
}

# pyfork_stop: end the fork server.
pyfork_stop() {
	kill "$PYFORK_PID" 2>/dev/null
	wait "$PYFORK_PID" 2>/dev/null
	rm -rf "$PYFORK_DIR"
}
