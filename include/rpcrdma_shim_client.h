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
/* The request waiting for the reply @xid, pinned (xprt_pin_rqst), or NULL. */
struct rpc_rqst *rpcrdma_shim_xprt_lookup_rqst(struct rpc_xprt *xprt, u32 xid);
/*
 * Completes the pinned @rqst with a reply of @len bytes or, if @status is a -errno, fails it
 * with that status; then unpins it.
 */
void rpcrdma_shim_rqst_complete(struct rpc_rqst *rqst, int status, u32 len);
/* Unpins @rqst without completing it. */
void rpcrdma_shim_rqst_unpin(struct rpc_rqst *rqst);
/* Sets the congestion window to @credits requests. */
void rpcrdma_shim_xprt_set_credits(struct rpc_xprt *xprt, u32 credits);

/* ---- the backchannel (RFC 8167) ---- */

/*
 * A backward request of @xprt (an rpc_rqst with a page for its Reply, as the C transport's
 * rpcrdma_bc_rqst_get()), or NULL. @atomic: allocate without sleeping.
 */
struct rpc_rqst *rpcrdma_shim_bc_rqst_alloc(struct rpc_xprt *xprt, bool atomic);
/* Frees a backward request that sunrpc does not hold. */
void rpcrdma_shim_bc_rqst_free(struct rpc_rqst *rqst);
/*
 * Lends the backward request @rqst to the callback service with the Call @xid of @len bytes at
 * @call, which must stay put until the bc_free_rqst callback gives back @rqst and @hold
 * (rpcrdma_bc_receive_call(), xprt_enqueue_bc_request()). That callback may run before this
 * returns (when the callback service is gone).
 */
void rpcrdma_shim_bc_rqst_enqueue(struct rpc_rqst *rqst, u32 xid, void *call, u32 len,
				  void *hold);
/* Where the @hold of a lent backward request is kept, for the bc_* ops. */
void **rpcrdma_shim_bc_rqst_hold(struct rpc_rqst *rqst);

#endif /* RPCRDMA_SHIM_CLIENT_H */
