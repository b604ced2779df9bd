#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The demo: from a fresh Debian 12 machine, install what is needed, build the kernel (cached) and
# rpcrdma_rs.ko, boot two guests joined by a virtual link, each with a soft RoCE device: "srv"
# serves NFS over RDMA with the kernel's C rpcrdma.ko, "cli" mounts it over rpcrdma_rs, writes
# and reads back a file and prints the checksums and the mountstats line.
#   scripts/demo.sh [--kvm]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$RPCRDMA_TOP"
scripts/install-deps.sh
export KDIR=$(scripts/build-kernel.sh | tail -n 1)
scripts/build-module.sh
ksft_dir=$(readlink -f "$KDIR/source")/tools/testing/selftests
cmd="env KSFT_DIR=$ksft_dir RPCRDMA_KO=$RPCRDMA_TOP/rpcrdma_rs.ko bash $RPCRDMA_TOP/scripts/guest/demo.sh"
exec scripts/vm-pair.sh "$@" --timeout 600 "$cmd server" "$cmd client"
