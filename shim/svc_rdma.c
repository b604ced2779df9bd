// SPDX-License-Identifier: GPL-2.0
/*
 * The svc_rqst side of the rpcrdma_rs server: page_address() of its pages, and the
 * scatterlist primitives of the server's RDMA Read and Write tables. Rust reads and sets the
 * request's fields itself (rust/sunrpc/svc.rs); the walks over rq_pages and rq_res and every
 * copy are Rust's (rust/sunrpc/xdr.rs); every decision is made in rust/server.
 */

#include <linux/mm.h>
#include <linux/scatterlist.h>
#include <linux/sunrpc/svc.h>
#include <linux/sunrpc/svc_xprt.h>
#include <linux/sunrpc/xdr.h>

#include "rpcrdma_shim.h"

void *rpcrdma_shim_svc_rqst_page_address(const struct svc_rqst *rqstp, u32 i)
{
	return page_address(rqstp->rq_pages[i]);
}

/* ---- pages of scatterlists ---- */

struct scatterlist *rpcrdma_shim_sg_set_page(struct scatterlist *sg, struct page *page, u32 len,
					     u32 offset)
{
	sg_set_page(sg, page, len, offset);
	return sg_next(sg);
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
