#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rs_nfs_loopback.sh over siw (soft iWARP): both ends on rpcrdma_rs in one guest.
RPCRDMA_DEV=siw exec bash "$(dirname "$0")/rs_nfs_loopback.sh"
