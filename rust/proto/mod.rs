// SPDX-License-Identifier: GPL-2.0

//! RPC-over-RDMA wire protocol: pure Rust, no allocation, `#![forbid(unsafe_code)]`.
//!
//! Every byte rpcrdma_rs puts on the wire or accepts from a peer goes through this module. It
//! holds no kernel types, so it builds both into `rpcrdma_rs.ko` (as `crate::proto`) and as the
//! host crate `rpcrdma_proto` (see `lib.rs`). Sibling modules refer to each other with `super::`
//! so the same paths resolve in both builds.
//!
//! A remote peer controls every byte that is decoded here: decoders never panic, never index out
//! of bounds and never loop more than the input length allows.

#![forbid(unsafe_code)]

pub mod backchannel;
pub mod continuation;
pub mod credits;
pub mod echo;
pub mod keepalive;
pub mod marshal;
pub mod negotiate;
pub mod placement;
pub mod private_data;
pub mod v1;
pub mod v2;
pub mod v2msg;
pub mod xdr;
