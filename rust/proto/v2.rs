// SPDX-License-Identifier: GPL-2.0

//! RPC-over-RDMA version 2 transport headers.
