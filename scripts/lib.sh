# SPDX-License-Identifier: GPL-2.0
# Common settings for rpcrdma-rs scripts. Source it; do not run it.
#
# Everything expensive (Debian packages' downloads, the kernel source, the kernel build, the
# virtme-ng virtualenv) lives under $RPCRDMA_CACHE, outside the work tree, so a fresh clone reuses
# it and a second run is a no-op.

RPCRDMA_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RPCRDMA_CACHE=${RPCRDMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rpcrdma-rs}
KERNEL_PKG=${KERNEL_PKG:-linux-source-7.3}
KERNEL_SUITE=${KERNEL_SUITE:-trixie-backports}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
JOBS=${JOBS:-$(($(nproc) + 1))}

# The kernel's Rust toolchain: Debian's rustc-web (never rustup's, which has no rust-src).
# RUSTC is passed to make only: host cargo builds keep the rustup toolchain.
export RUST_LIB_SRC=/usr/lib/rustlib/src/rust/library
export LIBCLANG_PATH=/usr/lib/llvm-19/lib
export BINDGEN=$RPCRDMA_CACHE/cargo/bin/bindgen
export PATH=/usr/bin:$RPCRDMA_CACHE/cargo/bin:$RPCRDMA_CACHE/venv/bin:$PATH
KMAKE=(make LLVM=-19 RUSTC=/usr/bin/rustc BINDGEN="$BINDGEN" RUST_LIB_SRC="$RUST_LIB_SRC")

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# File (in $RPCRDMA_CACHE) naming the current build of kernel variant $1 (normal, debug or perf).
kernel_pointer() {
	case $1 in
	normal) echo kernel-current ;;
	debug) echo kernel-debug-current ;;
	perf) echo kernel-perf-current ;;
	*) die "unknown kernel variant $1" ;;
	esac
}

# Path of the current kernel build: set by scripts/build-kernel.sh, read by everything else.
# RPCRDMA_KERNEL=debug selects the debug variant (scripts/build-kernel.sh --debug), perf the
# benchmark's (--perf).
kernel_build_dir() {
	local f
	f=$RPCRDMA_CACHE/$(kernel_pointer "${RPCRDMA_KERNEL:-normal}")
	[ -f "$f" ] || die "no ${RPCRDMA_KERNEL:-normal} kernel built yet: run scripts/build-kernel.sh"
	cat "$f"
}
