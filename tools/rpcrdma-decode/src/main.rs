// SPDX-License-Identifier: GPL-2.0

//! `rpcrdma-decode CAPTURE`: prints the RPC-over-RDMA messages (versions 1 and 2) of a pcap or
//! pcapng capture of RoCEv2 (rxe) or iWARP (siw) traffic, one line each, and the totals on the
//! last line.
//!
//! Exit status: 0 when every Send message decoded, 1 when any did not (the last line counts
//! them as "N undecodable"), 2 when the capture cannot be read.

#![forbid(unsafe_code)]

use std::{
    io::{
        self,
        BufWriter,
        Write, //
    },
    process::ExitCode,
};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, path] = args.as_slice() else {
        eprintln!("usage: rpcrdma-decode CAPTURE.pcap|CAPTURE.pcapng");
        return ExitCode::from(2);
    };
    let file = match std::fs::read(path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("rpcrdma-decode: {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let r = rpcrdma_decode::decode(&file, &mut out);
    let _ = out.flush();
    match r {
        Ok(t) if t.undecodable == 0 => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        Err(e) => {
            eprintln!("rpcrdma-decode: {path}: {e}");
            ExitCode::from(2)
        }
    }
}
