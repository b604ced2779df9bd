// SPDX-License-Identifier: GPL-2.0

//! Client transport logic (the requester side of RPC-over-RDMA).
//!
//! Not implemented yet: setup fails cleanly, so `mount -o proto=rdma` reports
//! "Protocol not supported" instead of crashing or loading `rpcrdma.ko`.

#![forbid(unsafe_code)]

use kernel::prelude::*;

use crate::sunrpc::xprt::{
    self,
    CreateArgs, //
};

/// The RPC-over-RDMA client transport.
pub(crate) struct Transport;

impl xprt::Transport for Transport {
    fn setup(args: &CreateArgs<'_>) -> Result<core::convert::Infallible> {
        pr_warn!(
            "client transport not implemented yet: refusing {:?} setup (EPROTONOSUPPORT)\n",
            args.family()
        );
        Err(EPROTONOSUPPORT)
    }
}
