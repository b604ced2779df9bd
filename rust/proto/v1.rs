// SPDX-License-Identifier: GPL-2.0

//! RPC-over-RDMA version 1 (RFC 8166) transport headers.
