// SPDX-License-Identifier: GPL-2.0

//! Abstractions over the kernel's sunrpc transport switch.
//!
//! - [`xprt`]: the client side (`struct xprt_class`, `struct rpc_xprt`).
//! - [`svc`]: the server side (`struct svc_xprt_class`, `struct svc_xprt`).
//! - [`xdr`]: the bytes of a `struct xdr_buf`, page by page.
//! - [`sysctl`]: the C module's sysctls (`/proc/sys/sunrpc`) and the server's statistics.
//!
//! These modules hold the `unsafe` code that talks to C; the transport logic built on them does
//! not need any.

pub(crate) mod svc;
pub(crate) mod sysctl;
pub(crate) mod xdr;
pub(crate) mod xprt;
