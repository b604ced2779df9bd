// SPDX-License-Identifier: GPL-2.0
/*
 * The client's data path in the C shim: the page of a kernel address, and the reply queue and
 * congestion window of an rpc_xprt under sunrpc's locks. See rpcrdma_shim_client.h; the decisions are made in
 * rust/client.
 */

#include <linux/mm.h>
#include <linux/vmalloc.h>
#include <linux/sunrpc/auth.h>
#include <linux/sunrpc/clnt.h>
#include <linux/sunrpc/sched.h>
#include <linux/sunrpc/xdr.h>
#include <linux/sunrpc/xprt.h>

#include "rpcrdma_shim.h"

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
