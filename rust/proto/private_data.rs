// SPDX-License-Identifier: GPL-2.0

//! RFC 8797 RDMA-CM private data.
