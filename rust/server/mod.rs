// SPDX-License-Identifier: GPL-2.0

//! Server transport logic (the responder side of RPC-over-RDMA).
//!
//! Not implemented yet: creating a listener fails cleanly, so writing `rdma 20049` to
//! `/proc/fs/nfsd/portlist` reports "Protocol not supported".

#![forbid(unsafe_code)]

use kernel::prelude::*;

use crate::sunrpc::svc::{
    self,
    CreateArgs, //
};

/// The RPC-over-RDMA server transport.
pub(crate) struct Transport;

impl svc::Transport for Transport {
    fn create(args: &CreateArgs<'_>) -> Result<core::convert::Infallible> {
        pr_warn!(
            "server transport not implemented yet: refusing {:?} listener, flags {:#x} (EPROTONOSUPPORT)\n",
            args.family(),
            args.flags()
        );
        Err(EPROTONOSUPPORT)
    }
}
