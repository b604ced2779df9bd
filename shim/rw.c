// SPDX-License-Identifier: GPL-2.0
/*
 * The rdma_rw API for rpcrdma_rs (include/rdma/rw.h): RDMA Read and Write contexts, which
 * keep what rdma_rw_ctx_destroy() needs again; the chains of their work requests are built in
 * Rust. Also the few rdma_cm operations only the server needs. The Rust side is
 * rust/rdma/rw.rs.
 */

#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include <rdma/rw.h>

#include "rpcrdma_shim.h"

/*
 * An rdma_rw context and the scatterlist it maps: the first RPCRDMA_SHIM_RW_SGES entries are
 * in the object, more are chained from the sg pool (sg_alloc_table_chained(), as svcrdma's
 * svc_rdma_rw_ctxt). The object is reused: a table per transfer, a context per mapping.
 */
struct rpcrdma_shim_rw {
	struct rdma_rw_ctx ctx;
	struct ib_qp *qp;
	struct sg_table sgt;
	u32 port;
	enum dma_data_direction dir;
	struct scatterlist first[RPCRDMA_SHIM_RW_SGES];
};

int rpcrdma_shim_cm_set_afonly(struct rdma_cm_id *id, int afonly)
{
	return rdma_set_afonly(id, afonly);
}

bool rpcrdma_shim_cm_id_fabric_ok(const struct rdma_cm_id *id)
{
	return id->device && (rdma_protocol_iwarp(id->device, id->port_num) ||
			      rdma_ib_or_roce(id->device, id->port_num));
}

u32 rpcrdma_shim_cm_id_rw_mr_factor(const struct rdma_cm_id *id, u32 maxpages)
{
	return id->device ? rdma_rw_mr_factor(id->device, id->port_num, maxpages) : 1;
}

struct rpcrdma_shim_rw *rpcrdma_shim_rw_alloc(void)
{
	return kmalloc(sizeof(struct rpcrdma_shim_rw), GFP_KERNEL);
}

void rpcrdma_shim_rw_free(struct rpcrdma_shim_rw *rw)
{
	kfree(rw);
}

int rpcrdma_shim_rw_sgt_alloc(struct rpcrdma_shim_rw *rw, u32 nents)
{
	rw->sgt.sgl = rw->first;
	return sg_alloc_table_chained(&rw->sgt, nents, rw->first, RPCRDMA_SHIM_RW_SGES);
}

struct scatterlist *rpcrdma_shim_rw_sgl(struct rpcrdma_shim_rw *rw)
{
	return rw->sgt.sgl;
}

void rpcrdma_shim_rw_sgt_free(struct rpcrdma_shim_rw *rw, bool put)
{
	struct scatterlist *sg;
	u32 i;

	if (put)
		for_each_sg(rw->sgt.sgl, sg, rw->sgt.orig_nents, i)
			put_page(sg_page(sg));
	sg_free_table_chained(&rw->sgt, RPCRDMA_SHIM_RW_SGES);
}

int rpcrdma_shim_rw_init(struct rpcrdma_shim_rw *rw, struct ib_qp *qp, u32 port,
			 u64 remote_addr, u32 rkey, bool write)
{
	rw->qp = qp;
	rw->port = port;
	rw->dir = write ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
	return rdma_rw_ctx_init(&rw->ctx, qp, port, rw->sgt.sgl, rw->sgt.orig_nents, 0,
				remote_addr, rkey, rw->dir);
}

struct rdma_rw_ctx *rpcrdma_shim_rw_ctx(struct rpcrdma_shim_rw *rw)
{
	return &rw->ctx;
}

void rpcrdma_shim_rw_destroy(struct rpcrdma_shim_rw *rw)
{
	rdma_rw_ctx_destroy(&rw->ctx, rw->qp, rw->port, rw->sgt.sgl, rw->sgt.orig_nents, rw->dir);
}
