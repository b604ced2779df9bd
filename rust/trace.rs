// SPDX-License-Identifier: GPL-2.0

//! Tracepoints of the transports, in the `rpcrdma` trace system of the C module.
//!
//! The events are defined in C (`include/rpcrdma_trace.h`, instantiated by `shim/trace.c`)
//! with the names and fields of `include/trace/events/rpcrdma.h`, so that the tools and
//! scripts written for `rpcrdma.ko` work unchanged; the differences are listed in that header
//! and in `Documentation/design.md`. Each function here raises one event (or one of a family:
//! the completion functions pick `*_flush` and `*_err` by status).
//!
//! # Cost when disabled
//!
//! As the kernel's `declare_trace!`, every function checks the event's static key first with
//! [`kernel::static_branch_unlikely!`] and builds its arguments only behind it: a disabled
//! event formats, allocates and copies nothing (with `CONFIG_JUMP_LABEL` the check is a
//! patched-out jump; without it, a read of the key's count). The C side
//! (`rust_do_trace_<event>`, made by `CREATE_RUST_TRACE_POINTS`) goes straight to the probes.
//!
//! # Why not `kernel::declare_trace!`
//!
//! That macro resolves `__tracepoint_<event>` and `rust_do_trace_<event>` in
//! `kernel::bindings`, which only covers the tracepoints of the kernel tree (its
//! `bindings_helper.h` includes their headers); an out-of-tree module's events are not there.
//! This module does the same with the module's own symbols: bindgen declares the
//! `rust_do_trace_*` functions from the event definitions themselves (Kbuild,
//! `include/rpcrdma_shim.h`), so their arguments cannot drift from the C side, and each key is
//! declared where it is checked, of the kernel crate's `struct tracepoint` (which
//! `static_branch_unlikely!` expects; bindgen's own copy would pull half the kernel's types in
//! with it), so a misspelt event name fails to link.
//!
//! C header: [`include/linux/tracepoint.h`](srctree/include/linux/tracepoint.h)

use kernel::{
    error::Error,
    time::Jiffies, //
};

use crate::{
    proto::v1::Fixed,
    rdma::{
        cm::{
            RawSockAddr,
            SockAddr, //
        },
        verbs::Wc, //
    },
    sunrpc::xprt::{
        RpcRqst,
        RpcXprt, //
    },
};

/// Raises the event `$name` with the arguments `$arg`, which are evaluated only if the event
/// is enabled. Pointer arguments must be references, or pointers to objects alive for the
/// statement, that the event only reads.
macro_rules! trace {
    ($name:ident($($arg:expr),* $(,)?)) => {{
        #[cfg(CONFIG_TRACEPOINTS)]
        ::kernel::macros::paste! {
            #[expect(
                improper_ctypes,
                reason = "only the static key of the tracepoint is read, as by declare_trace!"
            )]
            extern "C" {
                // Defined by `shim/trace.c` (`DEFINE_TRACE`): a misspelt event does not link.
                static [<__tracepoint_ $name>]: ::kernel::bindings::tracepoint;
            }
            // SAFETY: `__tracepoint_<event>` is a tracepoint defined in C (`shim/trace.c`),
            // whose static key may always be read.
            let enabled = unsafe {
                ::kernel::static_branch_unlikely!(
                    [<__tracepoint_ $name>],
                    ::kernel::bindings::tracepoint,
                    key
                )
            };
            if enabled {
                // SAFETY: The function only reads its arguments during the call; pointer
                // arguments are valid for it (this macro's contract).
                unsafe { crate::bindings::[<rust_do_trace_ $name>]($($arg),*) };
            }
        }
        #[cfg(not(CONFIG_TRACEPOINTS))]
        {
            // Uses the arguments' variables without evaluating anything.
            let _ = || ($($arg),*);
        }
    }};
}

/// A peer's address for an event, or null if unknown (printed as "unknown").
fn raw_ptr(peer: &Option<RawSockAddr>) -> *const crate::bindings::sockaddr {
    peer.as_ref().map_or(core::ptr::null(), RawSockAddr::as_ptr)
}

/// The errno of a result, 0 for success.
fn errno<T>(r: &Result<T, Error>) -> i32 {
    match r {
        Ok(_) => 0,
        Err(e) => e.to_errno(),
    }
}

// ---- Client: connections -----------------------------------------------------------------

/// `xprtrdma_connect`: a connect attempt to `peer` ended with `r` (the errno sunrpc gets);
/// `connect_status` is 1 when connected, else the errno the connection failed with.
#[inline]
pub(crate) fn xprtrdma_connect(peer: &SockAddr, r: &Result<(), Error>, connect_status: i32) {
    trace!(xprtrdma_connect(
        peer.to_raw().as_ptr(),
        errno(r),
        connect_status
    ));
}

/// `xprtrdma_disconnect`: the connection to `peer` is being closed; `rc` is what
/// `rdma_disconnect` returned, `connect_status` 1 if it was still up, else the errno it had
/// ended with (the reason).
#[inline]
pub(crate) fn xprtrdma_disconnect(peer: &SockAddr, rc: i32, connect_status: i32) {
    trace!(xprtrdma_disconnect(
        peer.to_raw().as_ptr(),
        rc,
        connect_status
    ));
}

/// `xprtrdma_op_connect`: sunrpc asked for a (re)connect of `xprt` after `delay` jiffies.
#[inline]
pub(crate) fn xprtrdma_op_connect(xprt: &RpcXprt, delay: Jiffies) {
    trace!(xprtrdma_op_connect(
        raw_ptr(&xprt.peer().ok().map(|p| p.to_raw())),
        delay
    ));
}

/// `xprtrdma_op_inject_dsc`: a disconnect of the connection to `peer` was injected.
#[inline]
pub(crate) fn xprtrdma_op_inject_dsc(peer: &SockAddr) {
    trace!(xprtrdma_op_inject_dsc(peer.to_raw().as_ptr()));
}

// ---- Client: completions -----------------------------------------------------------------

/// `xprtrdma_wc_receive`: a Receive completed (successfully or not).
#[inline]
pub(crate) fn xprtrdma_wc_receive(wc: &Wc) {
    trace!(xprtrdma_wc_receive(&wc.to_shim()));
}

/// `xprtrdma_wc_send`: a Send completed.
#[inline]
pub(crate) fn xprtrdma_wc_send(wc: &Wc) {
    trace!(xprtrdma_wc_send(&wc.to_shim()));
}

/// `xprtrdma_wc_fastreg`: an MR's unsignaled `REG_MR` or `LOCAL_INV` completed, which it does
/// only in error.
#[inline]
pub(crate) fn xprtrdma_wc_fastreg(wc: &Wc) {
    trace!(xprtrdma_wc_fastreg(&wc.to_shim()));
}

/// `xprtrdma_wc_li_wake`: a LOCAL_INV chain that `buf_free` waits for completed.
#[inline]
pub(crate) fn xprtrdma_wc_li_wake(wc: &Wc) {
    trace!(xprtrdma_wc_li_wake(&wc.to_shim()));
}

/// `xprtrdma_wc_li_done`: a LOCAL_INV chain that completes a reply completed.
#[inline]
pub(crate) fn xprtrdma_wc_li_done(wc: &Wc) {
    trace!(xprtrdma_wc_li_done(&wc.to_shim()));
}

// ---- Client: memory registration ----------------------------------------------------------

/// `xprtrdma_frwr_alloc`: allocating an MR failed with `err` (`mr_id` is 0: there is none).
#[inline]
pub(crate) fn xprtrdma_frwr_alloc(mr_id: u32, err: Error) {
    trace!(xprtrdma_frwr_alloc(mr_id, err.to_errno()));
}

/// `xprtrdma_frwr_dereg`: deregistering the MR `mr_id` (last registered as `handle`, `length`
/// bytes at `offset`, DMA direction `dir`) failed with `rc`.
#[inline]
pub(crate) fn xprtrdma_frwr_dereg(
    mr_id: u32,
    nents: i32,
    handle: u32,
    length: u32,
    offset: u64,
    dir: u32,
    rc: i32,
) {
    trace!(xprtrdma_frwr_dereg(
        mr_id, nents, handle, length, offset, dir, rc
    ));
}

/// `xprtrdma_frwr_sgerr`: DMA-mapping the `sg_nents` entries of the scatterlist of the MR
/// `mr_id` (the first at DMA address `addr`) in direction `dir` failed.
#[inline]
pub(crate) fn xprtrdma_frwr_sgerr(mr_id: u32, addr: u64, dir: u32, sg_nents: i32) {
    trace!(xprtrdma_frwr_sgerr(mr_id, addr, dir, sg_nents));
}

/// `xprtrdma_frwr_maperr`: `ib_map_mr_sg` mapped `num_mapped` of the `nents` DMA-mapped
/// entries of the MR `mr_id` (the first at DMA address `addr`, direction `dir`).
#[inline]
pub(crate) fn xprtrdma_frwr_maperr(mr_id: u32, addr: u64, dir: u32, num_mapped: i32, nents: i32) {
    trace!(xprtrdma_frwr_maperr(mr_id, addr, dir, num_mapped, nents));
}

// ---- Client: calls and replies ----------------------------------------------------------

/// `xprtrdma_marshal_failed`: the call `xid` of `rqst` could not be marshaled (`err`).
#[inline]
pub(crate) fn xprtrdma_marshal_failed(rqst: &RpcRqst, xid: u32, err: Error) {
    trace!(xprtrdma_marshal_failed(rqst.as_ptr(), xid, err.to_errno()));
}

/// `xprtrdma_post_send_err`: the Send of `rqst` could not be posted (`err`).
#[inline]
pub(crate) fn xprtrdma_post_send_err(rqst: &RpcRqst, err: Error) {
    trace!(xprtrdma_post_send_err(rqst.as_ptr(), err.to_errno()));
}

/// `xprtrdma_nomrs_err`: no free memory region for a chunk of `rqst` (to `peer`).
#[inline]
pub(crate) fn xprtrdma_nomrs_err(peer: &SockAddr, rqst: &RpcRqst) {
    trace!(xprtrdma_nomrs_err(peer.to_raw().as_ptr(), rqst.as_ptr()));
}

/// `xprtrdma_reply`: the reply `xid` matched `rqst`; the server grants `credits`.
#[inline]
pub(crate) fn xprtrdma_reply(rqst: &RpcRqst, xid: u32, credits: u32) {
    trace!(xprtrdma_reply(rqst.as_ptr(), xid, credits));
}

/// `xprtrdma_cb_call`: the backward Call `xid` from `peer` goes to the callback service.
#[inline]
pub(crate) fn xprtrdma_cb_call(peer: &SockAddr, xid: u32) {
    trace!(xprtrdma_cb_call(peer.to_raw().as_ptr(), xid));
}

/// `xprtrdma_cb_reply`: the Reply to the backward Call `xid` is sent to `peer`.
#[inline]
pub(crate) fn xprtrdma_cb_reply(peer: &SockAddr, xid: u32) {
    trace!(xprtrdma_cb_reply(peer.to_raw().as_ptr(), xid));
}

/// Why the client dropped or failed a reply (`xprtrdma_reply_<kind>_err`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum BadReply {
    /// `xprtrdma_reply_short_err`: too short for a transport header.
    Short,
    /// `xprtrdma_reply_vers_err`: not version 1.
    Vers,
    /// `xprtrdma_reply_rqst_err`: no request waits for its XID.
    Rqst,
    /// `xprtrdma_reply_hdr_err`: its header or chunks are malformed.
    Hdr,
}

/// `xprtrdma_reply_<kind>_err` for a reply from `peer` with header `fixed` (`None`: too short
/// to have one).
#[inline]
pub(crate) fn xprtrdma_reply_err(kind: BadReply, peer: &SockAddr, fixed: Option<&Fixed>) {
    let (xid, vers, proc) = fixed.map_or((0, 0, 0), |f| (f.xid, f.vers, f.proc));
    match kind {
        BadReply::Short => trace!(xprtrdma_reply_short_err(
            peer.to_raw().as_ptr(),
            xid,
            vers,
            proc
        )),
        BadReply::Vers => trace!(xprtrdma_reply_vers_err(
            peer.to_raw().as_ptr(),
            xid,
            vers,
            proc
        )),
        BadReply::Rqst => trace!(xprtrdma_reply_rqst_err(
            peer.to_raw().as_ptr(),
            xid,
            vers,
            proc
        )),
        BadReply::Hdr => trace!(xprtrdma_reply_hdr_err(
            peer.to_raw().as_ptr(),
            xid,
            vers,
            proc
        )),
    }
}

/// `xprtrdma_err_vers`: the server answered `rqst` (`xid`) with `RDMA_ERROR`/`ERR_VERS`,
/// supporting versions `min..=max`.
#[inline]
pub(crate) fn xprtrdma_err_vers(rqst: &RpcRqst, xid: u32, min: u32, max: u32) {
    trace!(xprtrdma_err_vers(rqst.as_ptr(), xid, min, max));
}

/// `xprtrdma_err_chunk`: the server answered `rqst` (`xid`) with `RDMA_ERROR`/`ERR_CHUNK`.
#[inline]
pub(crate) fn xprtrdma_err_chunk(rqst: &RpcRqst, xid: u32) {
    trace!(xprtrdma_err_chunk(rqst.as_ptr(), xid));
}

// ---- Server ------------------------------------------------------------------------------

/// The step of `svc_rdma_accept` that failed (`svcrdma_<step>_err`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum AcceptStep {
    /// `svcrdma_pd_err`: the protection domain.
    Pd,
    /// `svcrdma_qp_err`: the CQs or the QP.
    Qp,
    /// `svcrdma_fabric_err`: the device is not iWARP, IB or RoCE.
    Fabric,
    /// `svcrdma_initdepth_err`: the client allows no RDMA Read.
    InitDepth,
    /// `svcrdma_accept_err`: anything else (`rdma_accept`, Receives, the `svc_xprt`).
    Accept,
}

/// `svcrdma_<step>_err`: a connection from `peer` could not be accepted (`err`).
#[inline]
pub(crate) fn svcrdma_accept_err(step: AcceptStep, peer: Option<&SockAddr>, err: Error) {
    let peer = peer.map(|p| p.to_raw());
    let peer = || raw_ptr(&peer);
    let status = || err.to_errno() as kernel::ffi::c_long;
    match step {
        AcceptStep::Pd => trace!(svcrdma_pd_err(peer(), status())),
        AcceptStep::Qp => trace!(svcrdma_qp_err(peer(), status())),
        AcceptStep::Fabric => trace!(svcrdma_fabric_err(peer(), status())),
        AcceptStep::InitDepth => trace!(svcrdma_initdepth_err(peer(), status())),
        AcceptStep::Accept => trace!(svcrdma_accept_err(peer(), status())),
    }
}

/// Why the server rejected a Call's transport header (`svcrdma_decode_<kind>_err`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum BadReq {
    /// `svcrdma_decode_badvers_err`: not version 1 (answered `ERR_VERS`).
    BadVers,
    /// `svcrdma_decode_drop_err`: dropped without an answer (`RDMA_DONE`, `RDMA_ERROR`).
    Drop,
    /// `svcrdma_decode_badproc_err`: an undefined or reserved procedure.
    BadProc,
    /// `svcrdma_decode_parse_err`: malformed or unusable chunk lists.
    Parse,
}

/// `svcrdma_decode_short_err`: a Call of `hdrlen` bytes, too short for a header, received on
/// the CQ `cq_id`.
#[inline]
pub(crate) fn svcrdma_decode_short_err(cq_id: u32, hdrlen: u32) {
    trace!(svcrdma_decode_short_err(cq_id, hdrlen));
}

/// `svcrdma_decode_<kind>_err`: a Call with header `f`, received on the CQ `cq_id`, rejected.
#[inline]
pub(crate) fn svcrdma_decode_err(kind: BadReq, cq_id: u32, f: &Fixed) {
    match kind {
        BadReq::BadVers => trace!(svcrdma_decode_badvers_err(
            cq_id, f.xid, f.vers, f.credits, f.proc
        )),
        BadReq::Drop => trace!(svcrdma_decode_drop_err(
            cq_id, f.xid, f.vers, f.credits, f.proc
        )),
        BadReq::BadProc => trace!(svcrdma_decode_badproc_err(
            cq_id, f.xid, f.vers, f.credits, f.proc
        )),
        BadReq::Parse => trace!(svcrdma_decode_parse_err(
            cq_id, f.xid, f.vers, f.credits, f.proc
        )),
    }
}

/// `svcrdma_err_vers`: the server sends `RDMA_ERROR`/`ERR_VERS` for `xid`.
#[inline]
pub(crate) fn svcrdma_err_vers(xid: u32) {
    trace!(svcrdma_err_vers(xid));
}

/// `svcrdma_err_chunk`: the server sends `RDMA_ERROR`/`ERR_CHUNK` for `xid`.
#[inline]
pub(crate) fn svcrdma_err_chunk(xid: u32) {
    trace!(svcrdma_err_chunk(xid));
}

/// `svcrdma_send_err`: the reply to `xid` from the server to `peer` could not be sent (`err`).
#[inline]
pub(crate) fn svcrdma_send_err(peer: Option<&SockAddr>, xid: u32, err: Error) {
    trace!(svcrdma_send_err(
        raw_ptr(&peer.map(|p| p.to_raw())),
        xid,
        err.to_errno()
    ));
}

/// `svcrdma_rq_post_err`: a Receive of the connection with `peer` could not be posted (`err`).
#[inline]
pub(crate) fn svcrdma_rq_post_err(peer: Option<&SockAddr>, err: Error) {
    trace!(svcrdma_rq_post_err(
        raw_ptr(&peer.map(|p| p.to_raw())),
        err.to_errno()
    ));
}

/// The kind of a server completion (`svcrdma_wc_<kind>`, `_flush`, `_err`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum SvcWc {
    /// A Send (the end of a reply's chain).
    Send,
    /// A Receive.
    Recv,
    /// A chain of RDMA Reads.
    Read,
    /// A chain of RDMA Writes (without a Send).
    Write,
}

/// `svcrdma_wc_<kind>` on success, `svcrdma_wc_<kind>_flush` for a flushed request,
/// `svcrdma_wc_<kind>_err` otherwise.
#[inline]
pub(crate) fn svcrdma_wc(kind: SvcWc, wc: &Wc) {
    let w = || wc.to_shim();
    match (kind, wc.is_success(), wc.is_flush()) {
        (SvcWc::Send, true, _) => trace!(svcrdma_wc_send(&w())),
        (SvcWc::Send, false, true) => trace!(svcrdma_wc_send_flush(&w())),
        (SvcWc::Send, false, false) => trace!(svcrdma_wc_send_err(&w())),
        (SvcWc::Recv, true, _) => trace!(svcrdma_wc_recv(&w())),
        (SvcWc::Recv, false, true) => trace!(svcrdma_wc_recv_flush(&w())),
        (SvcWc::Recv, false, false) => trace!(svcrdma_wc_recv_err(&w())),
        (SvcWc::Read, true, _) => trace!(svcrdma_wc_read(&w())),
        (SvcWc::Read, false, true) => trace!(svcrdma_wc_read_flush(&w())),
        (SvcWc::Read, false, false) => trace!(svcrdma_wc_read_err(&w())),
        (SvcWc::Write, true, _) => trace!(svcrdma_wc_write(&w())),
        (SvcWc::Write, false, true) => trace!(svcrdma_wc_write_flush(&w())),
        (SvcWc::Write, false, false) => trace!(svcrdma_wc_write_err(&w())),
    }
}

/// Saturating conversion of a Send Queue count to the events' `int`.
fn sq_int(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// `svcrdma_sq_full`: a chain must wait for Send Queue entries (`avail` of `depth` free) on
/// the connection whose Send CQ is `cq_id`.
#[inline]
pub(crate) fn svcrdma_sq_full(cq_id: u32, avail: u32, depth: u32) {
    trace!(svcrdma_sq_full(cq_id, sq_int(avail), sq_int(depth)));
}

/// `svcrdma_sq_retry`: a waiting chain tries again (`avail` of `depth` entries free).
#[inline]
pub(crate) fn svcrdma_sq_retry(cq_id: u32, avail: u32, depth: u32) {
    trace!(svcrdma_sq_retry(cq_id, sq_int(avail), sq_int(depth)));
}

/// `svcrdma_sq_post_err`: a chain could not be posted (`err`).
#[inline]
pub(crate) fn svcrdma_sq_post_err(cq_id: u32, avail: u32, depth: u32, err: Error) {
    trace!(svcrdma_sq_post_err(
        cq_id,
        sq_int(avail),
        sq_int(depth),
        err.to_errno()
    ));
}
