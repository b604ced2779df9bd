#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rs_nfs_loopback.sh over IPv6 (2001:db8::1, proto=rdma6, rxe): both ends on rpcrdma_rs in one
# guest.
RPCRDMA_FAMILY=6 exec bash "$(dirname "$0")/rs_nfs_loopback.sh"
