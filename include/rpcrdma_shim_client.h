/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The client's data path in the C shim (shim/client.c), included by rpcrdma_shim.h.
 *
 * Rust reads struct rpc_rqst and its xdr_bufs itself (rust/sunrpc, with the layout bindgen
 * derives); what is here takes sunrpc's locks: the reply queue (lookup, pin, complete) and the
 * congestion window. The walks over the xdr_bufs (every copy, every registration) are Rust's
 * (rust/sunrpc/xdr.rs). FRWR keeps its scatterlist, ib_map_mr_sg and the REG_MR and LOCAL_INV
 * work requests here. Every decision (how a call travels, what to register, when to
 * invalidate) is made in Rust (rust/client).
 */
#ifndef RPCRDMA_SHIM_CLIENT_H
#define RPCRDMA_SHIM_CLIENT_H

/* An RDMA segment (handle, length, offset) produced by a registration. */
struct rpcrdma_shim_segment {
	u32 handle;
	u32 length;
	u64 offset;
};

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

/* ---- FRWR ---- */

struct rpcrdma_shim_mr;

/* Allocates an MR of @depth pages on @pd (IB_MR_TYPE_SG_GAPS if @sg_gaps), or an ERR_PTR. */
struct rpcrdma_shim_mr *rpcrdma_shim_mr_alloc(struct ib_pd *pd, u32 depth, bool sg_gaps);
/* Frees an unmapped MR (ib_dereg_mr); no work request of it may be pending. */
void rpcrdma_shim_mr_free(struct rpcrdma_shim_mr *mr);
/* Sets entry @i (< the MR's depth) of @mr's scatterlist to @len bytes at @offset of @page. */
void rpcrdma_shim_mr_set_page(struct rpcrdma_shim_mr *mr, u32 i, struct page *page, u32 offset,
			      u32 len);
/*
 * DMA-maps the first @nsg entries (0 < @nsg <= the MR's depth) of the unmapped @mr's
 * scatterlist (set by rpcrdma_shim_mr_set_page()) for remote read or (with @remote_write)
 * remote write, and prepares its REG_MR with @key as the rkey's key byte
 * (ib_update_fast_reg_key()). Returns 0 and the registered region in @seg, or a -errno.
 */
int rpcrdma_shim_mr_map(struct rpcrdma_shim_mr *mr, u32 nsg, bool remote_write, u8 key,
			struct rpcrdma_shim_segment *seg);
/* Undoes the DMA mapping of rpcrdma_shim_mr_map() (no-op if not mapped). */
void rpcrdma_shim_mr_unmap(struct rpcrdma_shim_mr *mr);
/* The rkey of the last mapping. */
u32 rpcrdma_shim_mr_rkey(const struct rpcrdma_shim_mr *mr);
/*
 * Posts the REG_MRs of @mrs (unsignaled), then a signaled Send of @sges completing on @cqe,
 * as one chain. On failure the Send was not posted.
 */
int rpcrdma_shim_post_send_reg(struct ib_qp *qp, struct ib_cqe *cqe,
			       const struct ib_sge *sges, u32 num_sge,
			       struct rpcrdma_shim_mr *const *mrs, u32 nmrs);
/*
 * Posts a LOCAL_INV of each of @mrs as one chain, the last signaled and completing on @cqe.
 * On failure the last one was not posted.
 */
int rpcrdma_shim_post_local_inv(struct ib_qp *qp, struct ib_cqe *cqe,
				struct rpcrdma_shim_mr *const *mrs, u32 nmrs);

#endif /* RPCRDMA_SHIM_CLIENT_H */
