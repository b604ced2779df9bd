// SPDX-License-Identifier: GPL-2.0

//! Host build of the RPC-over-RDMA wire protocol.
//!
//! The kernel module includes `mod.rs` as its `proto` module; this file only makes the very same
//! source files a `no_std` host crate, so `cargo test`, property tests and fuzzing run without a
//! VM. Nothing here may differ from what the kernel compiles.

#![no_std]
#![forbid(unsafe_code)]

#[cfg(test)]
extern crate std;

#[path = "mod.rs"]
mod proto;

pub use proto::*;
