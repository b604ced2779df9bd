#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# pair_server_nfs.sh over siw (iWARP: RDMA Reads go through MRs) instead of rxe.
exec bash "$(dirname "$0")/pair_server_nfs.sh" "${1:?usage: $0 server|client}" siw
