/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The server half of the rpcrdma_rs shim (shim/svc.c, shim/svc_rdma.c, shim/rw.c): the
 * svc_xprt container and its flag helpers, svc_rqst field access, scatterlist primitives, and
 * the rdma_rw API. Included at the end of rpcrdma_shim.h, so bindgen sees it too.
 */
#ifndef RPCRDMA_SHIM_SVC_H
#define RPCRDMA_SHIM_SVC_H

struct svc_rqst;
struct rpc_rqst;
struct rpc_task;
struct rpc_xprt_ops;
struct seq_file;
struct sg_table;
struct scatterlist;
struct rpcrdma_shim_rw;
struct rdma_rw_ctx;

/* ---- svc_xprt (shim/svc.c) ---- */

/* The server's "rdma" svc_xprt_class (ops Rust's); a transport of ours points at it. */
extern struct svc_xprt_class rpcrdma_shim_svc_class;
/* svc_xprt_set_local() and svc_xprt_set_remote() (which also prints xpt_remotebuf). */
void rpcrdma_shim_svc_xprt_set_local(struct svc_xprt *xprt, const struct sockaddr *sa,
				     size_t len);
void rpcrdma_shim_svc_xprt_set_remote(struct svc_xprt *xprt, const struct sockaddr *sa,
				      size_t len);
/* rpc_set_port() on xpt_remote, leaving xpt_remotebuf as it is. */
void rpcrdma_shim_svc_xprt_set_remote_port(struct svc_xprt *xprt, u16 port);
/*
 * Frees a transport of ours that was never handed to sunrpc
 * (xpo_free runs; the module reference svc_xprt_free() drops is taken first).
 */
void rpcrdma_shim_svc_xprt_discard(struct svc_xprt *xprt);
/* svc_xprt_get() */
void rpcrdma_shim_svc_xprt_get(struct svc_xprt *xprt);
/* Pages of the largest RPC message of @xprt's service (svc_serv_maxpages()). */
u32 rpcrdma_shim_svc_xprt_maxpages(struct svc_xprt *xprt);

/* ---- the backchannel (shim/svc_bc.c) ---- */

/*
 * Registers the "rdma backchannel" xprt_class (XPRT_TRANSPORT_BC_RDMA) with @setup, Rust's:
 * register it after the server class and unregister it before.
 */
int rpcrdma_shim_bc_register(struct rpc_xprt *(*setup)(struct xprt_create *args));
void rpcrdma_shim_bc_unregister(void);
/* The server's backchannel struct xprt_class (its setup is Rust's). */
extern struct xprt_class rpcrdma_shim_bc_class;
/* xprt_free() of a destroyed transport, and its module reference put by a work item. */
void rpcrdma_shim_bc_free(struct rpc_xprt *xprt);
/* kref_read() of the transport's reference count. */
unsigned int rpcrdma_shim_bc_refs(struct rpc_xprt *xprt);
/* rpc_xprt_ops of the backchannel: buf_alloc, buf_free. */
int rpcrdma_shim_bc_buf_alloc(struct rpc_task *task);
void rpcrdma_shim_bc_buf_free(struct rpc_task *task);

/* ---- svc_rqst (shim/svc_rdma.c) ---- */

/* page_address() of rq_pages[@i] (@i below rq_maxpages). */
void *rpcrdma_shim_svc_rqst_page_address(const struct svc_rqst *rqstp, u32 i);
/* sg_set_page(), then the next entry (sg_next(); NULL after the last). */
struct scatterlist *rpcrdma_shim_sg_set_page(struct scatterlist *sg, struct page *page, u32 len,
					     u32 offset);
/*
 * Takes a reference on @page's folio (folio_try_get()); false if it has none to take (slab
 * memory, a large kmalloc, a folio being freed).
 */
bool rpcrdma_shim_page_try_get(struct page *page);
/* put_page() */
void rpcrdma_shim_page_put(struct page *page);

/* ---- rdma_cm and verbs additions (shim/rw.c) ---- */

/* rdma_set_afonly() */
int rpcrdma_shim_cm_set_afonly(struct rdma_cm_id *id, int afonly);
/* Whether the id's port is iWARP, IB or RoCE (the fabrics RPC-over-RDMA runs on). */
bool rpcrdma_shim_cm_id_fabric_ok(const struct rdma_cm_id *id);
/*
 * rdma_rw_mr_factor(): the rdma_rw contexts (MRs, or for devices without MRs Read/Write work
 * requests of max_sge_rd pages) that moving @maxpages pages takes on the id's port.
 */
u32 rpcrdma_shim_cm_id_rw_mr_factor(const struct rdma_cm_id *id, u32 maxpages);
/* Entries of an rdma_rw context's scatterlist kept in the object; more are chained. */
#define RPCRDMA_SHIM_RW_SGES 8
/* kmalloc() of an rdma_rw context object, with neither a table nor a context; NULL if none. */
struct rpcrdma_shim_rw *rpcrdma_shim_rw_alloc(void);
/* kfree() of an object with neither a table nor a context. */
void rpcrdma_shim_rw_free(struct rpcrdma_shim_rw *rw);
/* sg_alloc_table_chained() of @nents entries in @rw (which has no table); -errno. */
int rpcrdma_shim_rw_sgt_alloc(struct rpcrdma_shim_rw *rw, u32 nents);
/* The first entry of @rw's table. */
struct scatterlist *rpcrdma_shim_rw_sgl(struct rpcrdma_shim_rw *rw);
/*
 * sg_free_table_chained() of @rw's table (no context over it), after put_page() of the page of
 * each entry if @put.
 */
void rpcrdma_shim_rw_sgt_free(struct rpcrdma_shim_rw *rw, bool put);
/*
 * rdma_rw_ctx_init() over @rw's table, for the remote segment (@rkey, @remote_addr): the Send
 * Queue entries the context consumes when posted, or -errno (then no context exists).
 */
int rpcrdma_shim_rw_init(struct rpcrdma_shim_rw *rw, struct ib_qp *qp, u32 port,
			 u64 remote_addr, u32 rkey, bool write);
/* The rdma_rw_ctx of @rw, for rdma_rw_ctx_wrs(). */
struct rdma_rw_ctx *rpcrdma_shim_rw_ctx(struct rpcrdma_shim_rw *rw);
/* rdma_rw_ctx_destroy() of @rw's context (idle); its table stays. */
void rpcrdma_shim_rw_destroy(struct rpcrdma_shim_rw *rw);

#endif /* RPCRDMA_SHIM_SVC_H */
