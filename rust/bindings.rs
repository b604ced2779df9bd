// SPDX-License-Identifier: GPL-2.0

//! Rust declarations of the C shim API (`include/rpcrdma_shim.h`).
//!
//! Generated at build time by Kbuild with the kernel's bindgen flags, so they always match the
//! header the C side is compiled against. Only the abstraction modules use them.

#![allow(
    dead_code,
    missing_docs,
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    unreachable_pub,
    clippy::all,
    clippy::cast_lossless,
    clippy::undocumented_unsafe_blocks,
    clippy::ptr_as_ptr,
    clippy::ref_as_ptr
)]

use kernel::ffi;

include!(env!("RPCRDMA_RS_BINDINGS"));
