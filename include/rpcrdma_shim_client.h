/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The client's data path in the C shim (shim/client.c), included by rpcrdma_shim.h.
 *
 * Rust reads struct rpc_rqst and its xdr_bufs itself (rust/sunrpc, with the layout bindgen
 * derives); what is here takes sunrpc's locks: the reply queue (lookup, pin, complete) and the
 * congestion window. The walks over the xdr_bufs (every copy, every registration) are Rust's
 * (rust/sunrpc/xdr.rs), and so is FRWR (rust/rdma/mr.rs: the MR, its scatterlist and its
 * REG_MR and LOCAL_INV work requests). Every decision (how a call travels, what to register,
 * when to invalidate) is made in Rust (rust/client).
 */
#ifndef RPCRDMA_SHIM_CLIENT_H
#define RPCRDMA_SHIM_CLIENT_H

/* ---- requests and replies ---- */

/* The page of the kernel virtual address @p (vmalloc_to_page() or virt_to_page()). */
struct page *rpcrdma_shim_virt_to_page(const void *p);

#endif /* RPCRDMA_SHIM_CLIENT_H */
