// SPDX-License-Identifier: GPL-2.0
/*
 * The svc_rqst side of the rpcrdma_rs server: its fields (rq_arg, rq_res, rq_pages, the
 * transport context) and the scatterlist primitives of the server's RDMA Read and Write tables.
 * The walks over rq_pages and rq_res and every copy are Rust's (rust/sunrpc/xdr.rs); every
 * decision is made in rust/server.
 */

#include <linux/mm.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/sunrpc/svc.h>
#include <linux/sunrpc/svc_xprt.h>
#include <linux/sunrpc/xdr.h>

#include "rpcrdma_shim.h"

struct svc_xprt *rpcrdma_shim_svc_rqst_xprt(const struct svc_rqst *rqstp)
{
	return rqstp->rq_xprt;
}

void rpcrdma_shim_svc_rqst_reset_respages(struct svc_rqst *rqstp)
{
	rqstp->rq_next_page = rqstp->rq_respages;
}

void *rpcrdma_shim_svc_rqst_ctxt(const struct svc_rqst *rqstp)
{
	return rqstp->rq_xprt_ctxt;
}

void rpcrdma_shim_svc_rqst_set_ctxt(struct svc_rqst *rqstp, void *ctxt)
{
	rqstp->rq_xprt_ctxt = ctxt;
}

u32 rpcrdma_shim_svc_rqst_arg_capacity(const struct svc_rqst *rqstp)
{
	return min_t(unsigned long, rqstp->rq_maxpages, U32_MAX >> PAGE_SHIFT) << PAGE_SHIFT;
}

void *rpcrdma_shim_svc_rqst_page_address(const struct svc_rqst *rqstp, u32 i)
{
	return page_address(rqstp->rq_pages[i]);
}

void rpcrdma_shim_svc_rqst_set_arg(struct svc_rqst *rqstp, void *head, u32 head_len,
				   u32 first_page, u32 page_len)
{
	struct xdr_buf *arg = &rqstp->rq_arg;

	arg->head[0].iov_base = head;
	arg->head[0].iov_len = head_len;
	arg->pages = rqstp->rq_pages + first_page;
	arg->page_base = 0;
	arg->page_len = page_len;
	arg->tail[0].iov_base = NULL;
	arg->tail[0].iov_len = 0;
	arg->len = head_len + page_len;
	arg->buflen = arg->len;

	rqstp->rq_prot = IPPROTO_MAX;
	svc_xprt_copy_addrs(rqstp, rqstp->rq_xprt);
	/* As svcrdma: RDMA has no privileged ports; exports need not say "insecure". */
	set_bit(RQ_SECURE, &rqstp->rq_flags);
}

u32 rpcrdma_shim_svc_rqst_res_len(const struct svc_rqst *rqstp)
{
	return rqstp->rq_res.len;
}

/* ---- scatterlists ---- */

struct sg_table *rpcrdma_shim_sgt_alloc(u32 nents)
{
	struct sg_table *sgt = kmalloc(sizeof(*sgt), GFP_KERNEL);
	int rc;

	if (!sgt)
		return ERR_PTR(-ENOMEM);
	rc = sg_alloc_table(sgt, nents, GFP_KERNEL);
	if (rc) {
		kfree(sgt);
		return ERR_PTR(rc);
	}
	return sgt;
}

struct scatterlist *rpcrdma_shim_sgt_sgl(struct sg_table *sgt)
{
	return sgt->sgl;
}

struct scatterlist *rpcrdma_shim_sg_set_page(struct scatterlist *sg, struct page *page, u32 len,
					     u32 offset)
{
	sg_set_page(sg, page, len, offset);
	return sg_next(sg);
}

void rpcrdma_shim_sgt_free(struct sg_table *sgt)
{
	sg_free_table(sgt);
	kfree(sgt);
}

bool rpcrdma_shim_page_try_get(struct page *page)
{
	struct folio *folio = page_folio(page);

	return !folio_test_slab(folio) && !folio_test_large_kmalloc(folio) &&
	       folio_try_get(folio);
}

void rpcrdma_shim_page_put(struct page *page)
{
	put_page(page);
}

void rpcrdma_shim_sgt_free_put(struct sg_table *sgt)
{
	struct scatterlist *sg;
	u32 i;

	for_each_sg(sgt->sgl, sg, sgt->orig_nents, i)
		put_page(sg_page(sg));
	rpcrdma_shim_sgt_free(sgt);
}
