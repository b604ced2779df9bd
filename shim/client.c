// SPDX-License-Identifier: GPL-2.0
/*
 * The client's data path in the C shim: struct rpc_rqst and xdr_buf access for the send and
 * receive paths, and FRWR registration of xdr_buf byte ranges. See rpcrdma_shim_client.h;
 * the decisions are made in rust/client.
 */

#include <linux/mm.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/sunrpc/auth.h>
#include <linux/sunrpc/clnt.h>
#include <linux/sunrpc/sched.h>
#include <linux/sunrpc/xdr.h>
#include <linux/sunrpc/xprt.h>
#include <rdma/ib_verbs.h>

#include "rpcrdma_shim.h"
#include "rpcrdma_trace.h"

/* ---- requests and replies ---- */

struct page *rpcrdma_shim_virt_to_page(const void *p)
{
	return is_vmalloc_addr(p) ? vmalloc_to_page(p) : virt_to_page(p);
}

struct rpc_rqst *rpcrdma_shim_xprt_lookup_rqst(struct rpc_xprt *xprt, u32 xid)
{
	struct rpc_rqst *rqst;

	spin_lock(&xprt->queue_lock);
	rqst = xprt_lookup_rqst(xprt, cpu_to_be32(xid));
	if (rqst)
		xprt_pin_rqst(rqst);
	spin_unlock(&xprt->queue_lock);
	return rqst;
}

/* As rpcrdma_complete_rqst(): a bad reply fails the RPC with @status. */
void rpcrdma_shim_rqst_complete(struct rpc_rqst *rqst, int status, u32 len)
{
	struct rpc_xprt *xprt = rqst->rq_xprt;

	spin_lock(&xprt->queue_lock);
	if (status < 0) {
		rqst->rq_task->tk_status = status;
		len = 0;
	}
	xprt_complete_rqst(rqst->rq_task, len);
	xprt_unpin_rqst(rqst);
	spin_unlock(&xprt->queue_lock);
}

void rpcrdma_shim_rqst_unpin(struct rpc_rqst *rqst)
{
	struct rpc_xprt *xprt = rqst->rq_xprt;

	spin_lock(&xprt->queue_lock);
	xprt_unpin_rqst(rqst);
	spin_unlock(&xprt->queue_lock);
}

/* As __rpcrdma_update_cwnd_locked(). */
void rpcrdma_shim_xprt_set_credits(struct rpc_xprt *xprt, u32 credits)
{
	spin_lock(&xprt->transport_lock);
	xprt->cwnd = (unsigned long)credits << RPC_CWNDSHIFT;
	spin_unlock(&xprt->transport_lock);
}

/* ---- FRWR ---- */

/**
 * struct rpcrdma_shim_mr - a fast-registration MR and the scatterlist it maps
 * @mr: the MR
 * @dev: its device
 * @depth: entries in @sg
 * @nsg: entries of @sg DMA-mapped (0: not mapped)
 * @dir: direction of that mapping
 * @reg_wr: its REG_MR, prepared by rpcrdma_shim_mr_map()
 * @inv_wr: its LOCAL_INV
 * @cqe: completion of unsignaled REG_MR and LOCAL_INV (only errors complete)
 * @sg: the scatterlist
 */
struct rpcrdma_shim_mr {
	struct ib_mr *mr;
	struct ib_device *dev;
	u32 depth;
	u32 nsg;
	enum dma_data_direction dir;
	struct ib_reg_wr reg_wr;
	struct ib_send_wr inv_wr;
	struct ib_cqe cqe;
	struct scatterlist sg[];
};

/* Unsignaled registration work completes only on error; the connection is then lost. */
static void rpcrdma_shim_mr_done(struct ib_cq *cq, struct ib_wc *wc)
{
	if (trace_xprtrdma_wc_fastreg_enabled()) {
		struct rpcrdma_shim_wc w = {
			.cq_id = cq->res.id,
			.status = wc->status,
			.opcode = wc->opcode,
			.vendor_err = wc->vendor_err,
		};

		trace_xprtrdma_wc_fastreg(&w);
	}
	if (wc->status != IB_WC_SUCCESS && wc->status != IB_WC_WR_FLUSH_ERR)
		pr_err_ratelimited("rpcrdma_rs: memory registration work failed: %s (%u)\n",
				   ib_wc_status_msg(wc->status), wc->vendor_err);
}

struct rpcrdma_shim_mr *rpcrdma_shim_mr_alloc(struct ib_pd *pd, u32 depth, bool sg_gaps)
{
	struct rpcrdma_shim_mr *mr;
	struct ib_mr *ibmr;

	if (!depth)
		return ERR_PTR(-EINVAL);
	mr = kzalloc(struct_size(mr, sg, depth), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	ibmr = ib_alloc_mr(pd, sg_gaps ? IB_MR_TYPE_SG_GAPS : IB_MR_TYPE_MEM_REG, depth);
	if (IS_ERR(ibmr)) {
		trace_xprtrdma_frwr_alloc(0, PTR_ERR(ibmr));
		kfree(mr);
		return ERR_CAST(ibmr);
	}
	mr->mr = ibmr;
	mr->dev = pd->device;
	mr->depth = depth;
	mr->cqe.done = rpcrdma_shim_mr_done;
	sg_init_table(mr->sg, depth);
	return mr;
}

void rpcrdma_shim_mr_free(struct rpcrdma_shim_mr *mr)
{
	u32 id = mr->mr->res.id, handle = mr->mr->rkey, length = mr->mr->length;
	u64 offset = mr->mr->iova;
	int rc;

	rpcrdma_shim_mr_unmap(mr);
	rc = ib_dereg_mr(mr->mr);
	if (rc)
		trace_xprtrdma_frwr_dereg(id, 0, handle, length, offset, mr->dir, rc);
	kfree(mr);
}

void rpcrdma_shim_mr_set_page(struct rpcrdma_shim_mr *mr, u32 i, struct page *page, u32 offset,
			      u32 len)
{
	sg_set_page(&mr->sg[i], page, len, offset);
}

int rpcrdma_shim_mr_map(struct rpcrdma_shim_mr *mr, u32 nsg, bool remote_write, u8 key,
			struct rpcrdma_shim_segment *seg)
{
	int mapped, n;

	mr->dir = remote_write ? DMA_FROM_DEVICE : DMA_TO_DEVICE;
	mapped = ib_dma_map_sg(mr->dev, mr->sg, nsg, mr->dir);
	if (!mapped) {
		trace_xprtrdma_frwr_sgerr(mr->mr->res.id, sg_dma_address(mr->sg), mr->dir, nsg);
		return -ENOMEM;
	}
	mr->nsg = nsg;
	n = ib_map_mr_sg(mr->mr, mr->sg, mapped, NULL, PAGE_SIZE);
	if (n != mapped) {
		trace_xprtrdma_frwr_maperr(mr->mr->res.id, sg_dma_address(mr->sg), mr->dir, n,
					   mapped);
		rpcrdma_shim_mr_unmap(mr);
		return n < 0 ? n : -EIO;
	}

	ib_update_fast_reg_key(mr->mr, key);
	mr->reg_wr = (struct ib_reg_wr){
		.wr = {
			.opcode = IB_WR_REG_MR,
			.wr_cqe = &mr->cqe,
		},
		.mr = mr->mr,
		.key = mr->mr->rkey,
		.access = remote_write ? IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE :
					 IB_ACCESS_REMOTE_READ,
	};
	seg->handle = mr->mr->rkey;
	seg->length = mr->mr->length;
	seg->offset = mr->mr->iova;
	return 0;
}

void rpcrdma_shim_mr_unmap(struct rpcrdma_shim_mr *mr)
{
	if (!mr->nsg)
		return;
	ib_dma_unmap_sg(mr->dev, mr->sg, mr->nsg, mr->dir);
	mr->nsg = 0;
}

u32 rpcrdma_shim_mr_rkey(const struct rpcrdma_shim_mr *mr)
{
	return mr->mr->rkey;
}

int rpcrdma_shim_post_send_reg(struct ib_qp *qp, struct ib_cqe *cqe,
			       const struct ib_sge *sges, u32 num_sge,
			       struct rpcrdma_shim_mr *const *mrs, u32 nmrs)
{
	struct ib_send_wr send = {
		.wr_cqe = cqe,
		.sg_list = (struct ib_sge *)sges,
		.num_sge = num_sge,
		.opcode = IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED,
	};
	struct ib_send_wr *first = &send;
	u32 i = nmrs;

	/* REG_MR, ..., REG_MR, SEND: the device registers before the peer can see a handle. */
	while (i--) {
		mrs[i]->reg_wr.wr.next = first;
		first = &mrs[i]->reg_wr.wr;
	}
	return ib_post_send(qp, first, NULL);
}

int rpcrdma_shim_post_local_inv(struct ib_qp *qp, struct ib_cqe *cqe,
				struct rpcrdma_shim_mr *const *mrs, u32 nmrs)
{
	struct ib_send_wr *first = NULL;
	u32 i = nmrs;

	if (!nmrs)
		return -EINVAL;
	while (i--) {
		struct rpcrdma_shim_mr *mr = mrs[i];
		bool last = i == nmrs - 1;

		mr->inv_wr = (struct ib_send_wr){
			.next = first,
			.wr_cqe = last ? cqe : &mr->cqe,
			.opcode = IB_WR_LOCAL_INV,
			.send_flags = last ? IB_SEND_SIGNALED : 0,
			.ex.invalidate_rkey = mr->mr->rkey,
		};
		first = &mr->inv_wr;
	}
	return ib_post_send(qp, first, NULL);
}
