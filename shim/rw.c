// SPDX-License-Identifier: GPL-2.0
/*
 * The rdma_rw API for rpcrdma_rs (include/rdma/rw.h): RDMA Read and Write contexts, which
 * keep what rdma_rw_ctx_destroy() needs again; the chains of their work requests are built in
 * Rust. Also the few rdma_cm operations only the server needs. The Rust side is
 * rust/rdma/rw.rs.
 */

#include <linux/slab.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include <rdma/rw.h>

#include "rpcrdma_shim.h"

/* An rdma_rw context with what rdma_rw_ctx_destroy() needs again. */
struct rpcrdma_shim_rw {
	struct rdma_rw_ctx ctx;
	struct ib_qp *qp;
	struct sg_table *sgt;
	u32 port;
	u32 wrs;
	enum dma_data_direction dir;
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

struct rpcrdma_shim_rw *rpcrdma_shim_rw_create(struct ib_qp *qp, u32 port, struct sg_table *sgt,
					       u64 remote_addr, u32 rkey, bool write)
{
	struct rpcrdma_shim_rw *rw = kzalloc(sizeof(*rw), GFP_KERNEL);
	int rc;

	if (!rw)
		return ERR_PTR(-ENOMEM);
	rw->qp = qp;
	rw->sgt = sgt;
	rw->port = port;
	rw->dir = write ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
	rc = rdma_rw_ctx_init(&rw->ctx, qp, port, sgt->sgl, sgt->orig_nents, 0, remote_addr,
			      rkey, rw->dir);
	if (rc < 0) {
		kfree(rw);
		return ERR_PTR(rc);
	}
	rw->wrs = rc;
	return rw;
}

u32 rpcrdma_shim_rw_wrs(const struct rpcrdma_shim_rw *rw)
{
	return rw->wrs;
}

struct rdma_rw_ctx *rpcrdma_shim_rw_ctx(struct rpcrdma_shim_rw *rw)
{
	return &rw->ctx;
}

void rpcrdma_shim_rw_destroy(struct rpcrdma_shim_rw *rw)
{
	rdma_rw_ctx_destroy(&rw->ctx, rw->qp, rw->port, rw->sgt->sgl, rw->sgt->orig_nents,
			    rw->dir);
	kfree(rw);
}

void rpcrdma_shim_rw_destroy_owned(struct rpcrdma_shim_rw *rw)
{
	struct sg_table *sgt = rw->sgt;

	rpcrdma_shim_rw_destroy(rw);
	rpcrdma_shim_sgt_free_put(sgt);
}
