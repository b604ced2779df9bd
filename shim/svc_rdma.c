// SPDX-License-Identifier: GPL-2.0
/*
 * The svc_rqst side of the rpcrdma_rs server: page_address() of its pages, and the
 * scatterlist primitives of the server's RDMA Read and Write tables. Rust reads and sets the
 * request's fields itself (rust/sunrpc/svc.rs); the walks over rq_pages and rq_res and every
 * copy are Rust's (rust/sunrpc/xdr.rs); every decision is made in rust/server.
 */

#include <linux/mm.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/sunrpc/svc.h>
#include <linux/sunrpc/svc_xprt.h>
#include <linux/sunrpc/xdr.h>

#include "rpcrdma_shim.h"

void *rpcrdma_shim_svc_rqst_page_address(const struct svc_rqst *rqstp, u32 i)
{
	return page_address(rqstp->rq_pages[i]);
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
