#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build rpcrdma_rs.ko against the kernel built by scripts/build-kernel.sh (or KDIR), with the
# kernel's toolchain. Extra arguments go to make (e.g. CLIPPY=1). Fails on any compiler warning.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
KDIR=${KDIR:-$(kernel_build_dir)}
cd "$RPCRDMA_TOP"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"${KMAKE[@]}" -C "$KDIR" M="$RPCRDMA_TOP" -j"$JOBS" "$@" modules 2>&1 | tee "$log" >&2
[ "${PIPESTATUS[0]}" = 0 ] || die "module build failed"
if grep -qiE '(^|[^a-z])warning' "$log"; then
	die "module build produced warnings (see above)"
fi
log "built $RPCRDMA_TOP/rpcrdma_rs.ko"
