#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Install everything rpcrdma-rs needs on a Debian 12 host. Idempotent: a second run only checks.
# It never edits the machine's apt sources; the kernel source comes through a private list
# (scripts/fetch-kernel.sh).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PKGS=(
	# Kernel Rust toolchain.
	rustc-web rust-web-src rust-web-clippy rustfmt-web clang-19 lld-19 llvm-19 libclang-19-dev
	# Kernel build.
	make bc bison flex libelf-dev libssl-dev dwarves cpio kmod xz-utils zstd python3 python3-venv
	rsync
	# VMs.
	qemu-system-x86 busybox-static
	# Guest userspace (the guests run on the host's root file system).
	iproute2 nfs-kernel-server nfs-common rpcbind rdma-core ibverbs-utils rdmacm-utils
	perftest fio procps e2fsprogs
	# The hostile RPC-over-RDMA peer of server_hostile.sh.
	python3-pyverbs
	# dumpcap, which pair_v2_capture.sh records the link with, and tshark for a look at v1.
	tshark
)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	log "installing: ${missing[*]}"
	SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
	$SUDO apt-get update -qq
	# A package's maintainer script can fail once on a machine without init (seen with
	# nfs-kernel-server); finish configuring and try once more before giving up.
	for try in 1 2; do
		DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
			"${missing[@]}" >/dev/null && break
		[ $try = 2 ] && die "apt-get install failed"
		DEBIAN_FRONTEND=noninteractive $SUDO dpkg --configure -a || true
	done
fi

# bindgen for the kernel build, from crates.io, into the cache (not the user's cargo home).
if [ ! -x "$BINDGEN" ]; then
	log "installing bindgen-cli"
	CARGO_TARGET_DIR=$RPCRDMA_CACHE/cargo-target \
		cargo install --locked --root "$RPCRDMA_CACHE/cargo" bindgen-cli >/dev/null
fi

# virtme-ng from PyPI into a private virtualenv.
if [ ! -x "$RPCRDMA_CACHE/venv/bin/vng" ]; then
	log "installing virtme-ng"
	python3 -m venv "$RPCRDMA_CACHE/venv"
	"$RPCRDMA_CACHE/venv/bin/pip" install -q virtme-ng
fi
log "host dependencies ready"
