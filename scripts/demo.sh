#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The demo: from a fresh Debian 12 machine, install what is needed, build the kernel (cached) and
# rpcrdma_rs.ko, boot a guest with a soft RoCE device, and run NFS over RDMA in it with both ends
# on rpcrdma_rs: nfsd serves over our server transport, the mount goes over our client transport.
#   scripts/demo.sh [--kvm]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$RPCRDMA_TOP"
scripts/install-deps.sh
export KDIR=$(scripts/build-kernel.sh | tail -n 1)
scripts/build-module.sh
ksft_dir=$(readlink -f "$KDIR/source")/tools/testing/selftests
exec scripts/vm.sh "$@" --name demo --timeout 600 -- env KSFT_DIR="$ksft_dir" \
	RPCRDMA_KO="$RPCRDMA_TOP/rpcrdma_rs.ko" bash scripts/guest/demo.sh
