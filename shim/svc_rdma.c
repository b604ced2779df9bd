// SPDX-License-Identifier: GPL-2.0
/*
 * The svc_rqst side of the rpcrdma_rs server: filling rq_arg from a Receive buffer or from
 * rq_pages, reading rq_res, and scatterlists over rq_pages (RDMA Read sinks) and rq_res
 * (RDMA Write sources). Field access and page walking only; every decision is made in Rust
 * (rust/server).
 */

#include <linux/mm.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/sunrpc/svc.h>
#include <linux/sunrpc/svc_xprt.h>
#include <linux/sunrpc/xdr.h>

#include "rpcrdma_shim.h"

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

void rpcrdma_shim_svc_rqst_set_arg(struct svc_rqst *rqstp, void *base, u32 len)
{
	struct xdr_buf *arg = &rqstp->rq_arg;

	if (base) {
		arg->head[0].iov_base = base;
		arg->head[0].iov_len = len;
		arg->pages = rqstp->rq_pages;
		arg->page_len = 0;
	} else {
		/* As svc_rdma_read_complete_multiple(): head is the first page. */
		arg->head[0].iov_base = page_address(rqstp->rq_pages[0]);
		arg->head[0].iov_len = min_t(u32, len, PAGE_SIZE);
		arg->pages = rqstp->rq_pages + 1;
		arg->page_len = len - arg->head[0].iov_len;
	}
	arg->page_base = 0;
	arg->tail[0].iov_base = NULL;
	arg->tail[0].iov_len = 0;
	arg->len = len;
	arg->buflen = len;

	rqstp->rq_prot = IPPROTO_MAX;
	svc_xprt_copy_addrs(rqstp, rqstp->rq_xprt);
	/* As svcrdma: RDMA has no privileged ports; exports need not say "insecure". */
	set_bit(RQ_SECURE, &rqstp->rq_flags);
}

int rpcrdma_shim_svc_rqst_fill_pages(struct svc_rqst *rqstp, u32 offset, const void *src,
				     u32 len)
{
	u64 end = (u64)offset + len;

	if (end > rpcrdma_shim_svc_rqst_arg_capacity(rqstp))
		return -EINVAL;
	while (len) {
		u32 pgoff = offset & ~PAGE_MASK;
		u32 n = min_t(u32, len, PAGE_SIZE - pgoff);
		u8 *dst = (u8 *)page_address(rqstp->rq_pages[offset >> PAGE_SHIFT]) + pgoff;

		if (src) {
			memcpy(dst, src, n);
			src = (const u8 *)src + n;
		} else {
			memset(dst, 0, n);
		}
		offset += n;
		len -= n;
	}
	return 0;
}

u32 rpcrdma_shim_svc_rqst_res_len(const struct svc_rqst *rqstp)
{
	return rqstp->rq_res.len;
}

int rpcrdma_shim_svc_rqst_res_read(const struct svc_rqst *rqstp, u32 offset, void *dst, u32 len)
{
	return read_bytes_from_xdr_buf(&rqstp->rq_res, offset, dst, len);
}

struct sg_table *rpcrdma_shim_svc_rqst_arg_sgt(struct svc_rqst *rqstp, u32 offset, u32 len)
{
	u64 end = (u64)offset + len;
	struct scatterlist *sg;
	struct sg_table *sgt;
	u32 first, nents, i;
	int rc;

	if (!len || end > rpcrdma_shim_svc_rqst_arg_capacity(rqstp))
		return ERR_PTR(-EINVAL);
	first = offset >> PAGE_SHIFT;
	nents = ((end - 1) >> PAGE_SHIFT) - first + 1;
	sgt = kmalloc(sizeof(*sgt), GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	rc = sg_alloc_table(sgt, nents, GFP_KERNEL);
	if (rc) {
		kfree(sgt);
		return ERR_PTR(rc);
	}
	for_each_sg(sgt->sgl, sg, nents, i) {
		u32 pgoff = offset & ~PAGE_MASK;
		u32 n = min_t(u32, len, PAGE_SIZE - pgoff);

		sg_set_page(sg, rqstp->rq_pages[offset >> PAGE_SHIFT], n, pgoff);
		offset += n;
		len -= n;
	}
	return sgt;
}

/*
 * Counts (and with @sg, fills) the scatterlist entries covering the @len bytes at @base of a
 * kvec, one per page; 0 if the memory is not in the kernel's direct map (sg_set_buf() needs
 * its struct page).
 */
static u32 rpcrdma_shim_kvec_walk(const u8 *base, u32 len, struct scatterlist **sg)
{
	u32 count = 0;

	if (!len)
		return 0;
	if (!virt_addr_valid(base) || !virt_addr_valid(base + len - 1))
		return 0;
	while (len) {
		u32 n = min_t(u32, len, PAGE_SIZE - offset_in_page(base));

		if (sg) {
			sg_set_buf(*sg, base, n);
			*sg = sg_next(*sg);
		}
		count++;
		base += n;
		len -= n;
	}
	return count;
}

/*
 * Counts (and with @sg, fills) the scatterlist entries covering [@offset, @offset + @len)
 * of @buf, each within one page; 0 if the range is not all inside @buf.
 */
static u32 rpcrdma_shim_xdr_walk(const struct xdr_buf *buf, u32 offset, u32 len,
				 struct scatterlist **sg)
{
	const struct kvec *kv[2] = { &buf->head[0], &buf->tail[0] };
	u32 count = 0, pos, n;

	/* head */
	if (offset < kv[0]->iov_len && len) {
		u32 c;

		n = min_t(u32, len, kv[0]->iov_len - offset);
		c = rpcrdma_shim_kvec_walk((u8 *)kv[0]->iov_base + offset, n, sg);
		if (!c)
			return 0;
		count += c;
		len -= n;
		offset = 0;
	} else {
		offset -= min_t(u32, offset, kv[0]->iov_len);
	}
	/* pages */
	pos = offset;
	while (len && pos < buf->page_len) {
		u32 abs = buf->page_base + pos;
		u32 pgoff = abs & ~PAGE_MASK;

		n = min_t(u32, len, min_t(u32, PAGE_SIZE - pgoff, buf->page_len - pos));
		if (sg) {
			sg_set_page(*sg, buf->pages[abs >> PAGE_SHIFT], n, pgoff);
			*sg = sg_next(*sg);
		}
		count++;
		len -= n;
		pos += n;
	}
	offset = pos > buf->page_len ? pos - buf->page_len : 0;
	/* tail */
	if (len && offset < kv[1]->iov_len) {
		u32 c;

		n = min_t(u32, len, kv[1]->iov_len - offset);
		c = rpcrdma_shim_kvec_walk((u8 *)kv[1]->iov_base + offset, n, sg);
		if (!c)
			return 0;
		count += c;
		len -= n;
	}
	return len ? 0 : count;
}

struct sg_table *rpcrdma_shim_svc_rqst_res_sgt(struct svc_rqst *rqstp, u32 offset, u32 len)
{
	const struct xdr_buf *buf = &rqstp->rq_res;
	struct scatterlist *sg;
	struct sg_table *sgt;
	u32 nents;
	int rc;

	if (!len || (u64)offset + len > buf->len)
		return ERR_PTR(-EINVAL);
	nents = rpcrdma_shim_xdr_walk(buf, offset, len, NULL);
	if (!nents)
		return ERR_PTR(-EINVAL);
	sgt = kmalloc(sizeof(*sgt), GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	rc = sg_alloc_table(sgt, nents, GFP_KERNEL);
	if (rc) {
		kfree(sgt);
		return ERR_PTR(rc);
	}
	sg = sgt->sgl;
	rpcrdma_shim_xdr_walk(buf, offset, len, &sg);
	return sgt;
}

void rpcrdma_shim_sgt_free(struct sg_table *sgt)
{
	sg_free_table(sgt);
	kfree(sgt);
}

/* Drops the page references taken on the first @n entries of @sgt. */
static void rpcrdma_shim_sgt_put(struct sg_table *sgt, u32 n)
{
	struct scatterlist *sg;
	u32 i;

	for_each_sg(sgt->sgl, sg, n, i)
		put_page(sg_page(sg));
}

struct sg_table *rpcrdma_shim_svc_rqst_res_sgt_ref(struct svc_rqst *rqstp, u32 offset, u32 len)
{
	struct sg_table *sgt = rpcrdma_shim_svc_rqst_res_sgt(rqstp, offset, len);
	struct scatterlist *sg;
	u32 i;

	if (IS_ERR(sgt))
		return sgt;
	/*
	 * As svc_rdma_save_io_pages(), but per page: the reply's pages (rq_respages, page cache
	 * pages spliced in by nfsd) stay allocated until the RDMA Writes reading them are done,
	 * whatever the thread does with the request after xpo_sendto. Slab memory has no page
	 * reference to take: such a reply cannot be written without waiting.
	 */
	for_each_sg(sgt->sgl, sg, sgt->orig_nents, i) {
		struct folio *folio = page_folio(sg_page(sg));

		if (folio_test_slab(folio) || folio_test_large_kmalloc(folio) ||
		    !folio_try_get(folio)) {
			rpcrdma_shim_sgt_put(sgt, i);
			rpcrdma_shim_sgt_free(sgt);
			return ERR_PTR(-EOPNOTSUPP);
		}
	}
	return sgt;
}

void rpcrdma_shim_sgt_free_put(struct sg_table *sgt)
{
	rpcrdma_shim_sgt_put(sgt, sgt->orig_nents);
	rpcrdma_shim_sgt_free(sgt);
}
