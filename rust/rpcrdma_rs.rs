// SPDX-License-Identifier: GPL-2.0

//! rpcrdma_rs: RPC-over-RDMA transport for the kernel's sunrpc, in Rust.
//!
//! The module registers the client transport selected by `mount -o proto=rdma` (ident
//! `XPRT_TRANSPORT_RDMA`, netids `rdma` and `rdma6`) and the server transport class `rdma`
//! that nfsd listens on. It takes the place of the C `rpcrdma.ko`; the two cannot be loaded
//! together, since sunrpc allows one transport per ident and one svc class per name.
//!
//! Layout:
//! - [`proto`]: the wire protocol, pure Rust, shared with the host crate (`rust/proto`).
//! - `sunrpc` and `rdma`: abstractions over the C APIs; every `unsafe` block lives there.
//! - `trace`: the tracepoints of both transports (the `rpcrdma` trace system), an abstraction
//!   over the shim's events on top of `rdma`, `sunrpc` and `proto`, so that `rdma` imports neither.
//! - `client` and `server`: transport logic, `#![forbid(unsafe_code)]`.

use kernel::{
    debugfs,
    prelude::*,
    sync::atomic::{
        Atomic,
        Relaxed, //
    }, //
};

mod bindings;
mod client;
#[path = "proto/mod.rs"]
pub mod proto;
mod rdma;
mod reasm;
mod server;
mod sunrpc;
mod trace;

module! {
    type: RpcRdma,
    name: "rpcrdma_rs",
    authors: ["The rpcrdma-rs authors"],
    description: "RPC-over-RDMA transport (client and server) in Rust",
    license: "GPL",
    params: {
        max_version: u32 {
            default: 1,
            description: "Highest RPC-over-RDMA version (1 or 2): the client offers it on each new connection and falls back to 1 with a version 1 server; the server accepts versions 1 to it",
        },
        keepalive: u32 {
            default: 30,
            description: "Keep-alive interval of version 2 connections in seconds (0: none, at most 3600): an end that sent nothing for that long sends a credit refresh, and a peer that keeps alive too but is silent for 3 of its intervals is declared dead",
        },
    },
}

/// The `max_version` module parameter: the highest RPC-over-RDMA version the client offers
/// and the server accepts, 1 or 2 (checked at load).
pub(crate) fn max_version() -> u32 {
    module_parameters::max_version.value()
}

/// The most seconds the `keepalive` module parameter takes.
const KEEPALIVE_MAX: u32 = 3600;

/// The `keepalive` module parameter: the keep-alive interval of version 2 connections in
/// seconds, 0 for none (checked at load; see `proto::keepalive`).
pub(crate) fn keepalive() -> u32 {
    module_parameters::keepalive.value()
}

/// The keep-alive interval as a work item's delay.
pub(crate) fn keepalive_interval() -> kernel::time::Jiffies {
    kernel::time::msecs_to_jiffies(keepalive().saturating_mul(1000))
}

/// The loaded module: the three transport registrations (client, server, the server's
/// backchannel), released in reverse order on unload, the
/// `ib_client` that tells connections about device removal (released after the transports),
/// the debugfs file of the RDMA object counters, and the sysctls (released last: the
/// transports read them and count the server's statistics there).
struct RpcRdma {
    /// The server's backchannel class (RFC 8167); unregistered first.
    _bc_class: sunrpc::svc::BcRegistration<server::SvcRdmaXprt>,
    server: sunrpc::svc::Registration<server::SvcRdmaXprt>,
    client: sunrpc::xprt::Registration<client::RpcRdmaXprt>,
    _ib_client: rdma::removal::Client,
    /// `/sys/kernel/debug/rpcrdma_rs/counters`; removed before its directory.
    _counters: Pin<KBox<debugfs::File<()>>>,
    /// `/sys/kernel/debug/rpcrdma_rs/backchannel`: the client's backchannel counters
    /// ([`client::BC_STATS`]), then the server's ([`server::backchannel::write_stats`]).
    _backchannel: Pin<KBox<debugfs::File<()>>>,
    /// `/sys/kernel/debug/rpcrdma_rs/versions`: the client's messages by protocol version
    /// ([`client::VERS_STATS`]), then the server's ([`server::VERS_STATS`]).
    _versions: Pin<KBox<debugfs::File<()>>>,
    /// `/sys/kernel/debug/rpcrdma_rs/fail_local_inv` ([`client::FAIL_LOCAL_INV`]).
    _fail_local_inv: Pin<KBox<debugfs::File<Knob>>>,
    /// `/sys/kernel/debug/rpcrdma_rs/fail_retry_send` ([`client::FAIL_RETRY_SEND`]).
    _fail_retry_send: Pin<KBox<debugfs::File<Knob>>>,
    /// `/sys/kernel/debug/rpcrdma_rs/client_mrs` ([`client::POOL_MRS`]).
    _client_mrs: Pin<KBox<debugfs::File<Knob>>>,
    _debugfs: debugfs::Dir,
    /// `/proc/sys/sunrpc/rdma_*` and `/proc/sys/sunrpc/svc_rdma/`; the last field, so
    /// unregistered after the transports.
    _sysctl: sunrpc::sysctl::Registration,
}

impl kernel::Module for RpcRdma {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let v = max_version();
        if !(proto::negotiate::LOWEST..=proto::negotiate::HIGHEST).contains(&v) {
            pr_err!(
                "max_version={} is out of range: 1 (RPC-over-RDMA version 1) or 2 (version 2)\n",
                v
            );
            return Err(EINVAL);
        }
        let k = keepalive();
        if k > KEEPALIVE_MAX {
            pr_err!(
                "keepalive={} is out of range: 0 (none) to {} seconds\n",
                k,
                KEEPALIVE_MAX
            );
            return Err(EINVAL);
        }
        // Before the transports: their connections register removal notifications with it.
        let ib_client = rdma::removal::Client::register()?;
        let client = sunrpc::xprt::Registration::new().inspect_err(|e| {
            if *e == EEXIST {
                pr_err!(
                    "the rdma client transport is already registered (is rpcrdma.ko loaded?)\n"
                );
            }
        })?;
        // On failure `client` is dropped here, so nothing stays registered.
        let server = sunrpc::svc::Registration::new().inspect_err(|e| {
            if *e == EEXIST {
                pr_err!(
                    "the rdma server transport is already registered (is rpcrdma.ko loaded?)\n"
                );
            }
        })?;
        // The backchannel's transports are made over the server's connections.
        let bc_class = sunrpc::svc::BcRegistration::new().inspect_err(|e| {
            if *e == EEXIST {
                pr_err!("the rdma backchannel transport is already registered (is rpcrdma.ko loaded?)\n");
            }
        })?;
        // After the transports, which fail cleanly if rpcrdma.ko is loaded (its sysctls have the
        // same names); until then they read the defaults.
        let sysctl = sunrpc::sysctl::Registration::new()?;
        pr_info!(
            "registered client transport rdma/rdma6 (ident {}) and server transport rdma, with its backchannel\n",
            sunrpc::xprt::ident()
        );
        let dir = debugfs::Dir::new(c"rpcrdma_rs");
        let counters = KBox::pin_init(
            dir.read_callback_file(c"counters", (), &|(): &(), f| rdma::COUNTERS.write(f)),
            GFP_KERNEL,
        )?;
        let backchannel = KBox::pin_init(
            dir.read_callback_file(c"backchannel", (), &|(): &(), f| {
                client::BC_STATS.write(f)?;
                server::backchannel::write_stats(f)
            }),
            GFP_KERNEL,
        )?;
        let versions = KBox::pin_init(
            dir.read_callback_file(c"versions", (), &|(): &(), f| {
                writeln!(f, "max_version: {}", max_version())?;
                writeln!(f, "keepalive: {}", keepalive())?;
                client::VERS_STATS.write(f)?;
                server::VERS_STATS.write(f)
            }),
            GFP_KERNEL,
        )?;
        let fail_local_inv = KBox::pin_init(
            dir.read_write_callback_file(
                c"fail_local_inv",
                &client::FAIL_LOCAL_INV,
                &read_knob,
                &write_knob,
            ),
            GFP_KERNEL,
        )?;
        let fail_retry_send = KBox::pin_init(
            dir.read_write_callback_file(
                c"fail_retry_send",
                &client::FAIL_RETRY_SEND,
                &read_knob,
                &write_knob,
            ),
            GFP_KERNEL,
        )?;
        let client_mrs = KBox::pin_init(
            dir.read_write_callback_file(c"client_mrs", &client::POOL_MRS, &read_knob, &write_knob),
            GFP_KERNEL,
        )?;
        Ok(Self {
            _bc_class: bc_class,
            server,
            client,
            _ib_client: ib_client,
            _counters: counters,
            _backchannel: backchannel,
            _versions: versions,
            _fail_local_inv: fail_local_inv,
            _fail_retry_send: fail_retry_send,
            _client_mrs: client_mrs,
            _debugfs: dir,
            _sysctl: sysctl,
        })
    }
}

/// A debugfs test knob: a number the client reads (`fail_local_inv`, `fail_retry_send`,
/// `client_mrs`).
type Knob = &'static Atomic<u32>;

/// Shows a [`Knob`]'s value.
fn read_knob(k: &Knob, f: &mut kernel::fmt::Formatter<'_>) -> kernel::fmt::Result {
    writeln!(f, "{}", k.load(Relaxed))
}

/// Sets a [`Knob`] from a decimal number written to its file.
fn write_knob(k: &Knob, r: &mut kernel::uaccess::UserSliceReader) -> Result {
    let mut buf = [0u8; 16];
    let n = r.len().min(buf.len());
    r.read_slice(&mut buf[..n])?;
    let s = core::str::from_utf8(&buf[..n]).map_err(|_| EINVAL)?;
    let v = s.trim().parse::<u32>().map_err(|_| EINVAL)?;
    k.store(v, Relaxed);
    Ok(())
}

impl Drop for RpcRdma {
    fn drop(&mut self) {
        // Connection teardowns the server deferred (past `xpo_free`) release their objects, and
        // so does client work still queued for transports already destroyed.
        self.server.flush();
        self.client.flush();
        // The breakdown first: tests key on the summary line being the last.
        client::warn_live();
        rdma::COUNTERS.warn_live();
        pr_info!(
            "unregistering transports; rdma objects still live: {}\n",
            rdma::COUNTERS.live()
        );
    }
}
