// SPDX-License-Identifier: GPL-2.0
/*
 * Client transport class of rpcrdma_rs: the one struct xprt_class object (it ends in a
 * flexible array and holds THIS_MODULE, so it is C) and its connect workqueue. The class's
 * setup, the rpc_xprt it allocates and the rpc_xprt_ops table are Rust's
 * (rust/sunrpc/xprt.rs); what is here are wrappers of the static inlines they need.
 */

#include <linux/module.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <linux/sunrpc/addr.h>
#include <linux/sunrpc/bc_xprt.h>
#include <linux/sunrpc/clnt.h>
#include <linux/sunrpc/sched.h>
#include <linux/sunrpc/xprt.h>
#include <linux/sunrpc/xprtrdma.h>

#include "rpcrdma_shim.h"

/*
 * The connect workers' queue: destroyed (and so drained) when the class is unregistered, so no
 * worker still runs module code once the module can go away.
 */
static struct workqueue_struct *rpcrdma_shim_xprt_wq;

struct xprt_class rpcrdma_shim_xprt_class = {
	.list	= LIST_HEAD_INIT(rpcrdma_shim_xprt_class.list),
	.name	= "rdma",
	.owner	= THIS_MODULE,
	.ident	= XPRT_TRANSPORT_RDMA,
	.netid	= { "rdma", "rdma6", "" },
};

/* ---- fields and static inlines ---- */

void rpcrdma_shim_xprt_set_port(struct rpc_xprt *xprt, u16 port)
{
	rpc_set_port((struct sockaddr *)&xprt->addr, port);
}

bool rpcrdma_shim_rqst_reply_expected(struct rpc_rqst *rqst)
{
	return rpc_reply_expected(rqst->rq_task);
}

/*
 * The buf_alloc op: the call and reply buffers in one kmalloc'ed block (physically
 * contiguous, so any range of it can be registered). Calls are copied into Send buffers.
 */
int rpcrdma_shim_rqst_buf_alloc(struct rpc_task *task)
{
	struct rpc_rqst *rqst = task->tk_rqstp;
	size_t size = rqst->rq_callsize + rqst->rq_rcvsize;
	void *buf = kmalloc(size, rpc_task_gfp_mask() | __GFP_NOWARN);

	if (!buf)
		return -ENOMEM;
	rqst->rq_buffer = buf;
	rqst->rq_rbuffer = (char *)buf + rqst->rq_callsize;
	return 0;
}

/* The end of the buf_free op (xprt_rdma_free()), once no registration of the buffers is left. */
void rpcrdma_shim_rqst_buf_free(struct rpc_rqst *rqst)
{
	kfree(rqst->rq_buffer);
	rqst->rq_buffer = NULL;
	rqst->rq_rbuffer = NULL;
}

/* ---- the class ---- */

/*
 * Registers the "rdma" client transport, whose setup is @setup. Returns -EBUSY if this module
 * already registered it and -EEXIST if another module (rpcrdma.ko) holds the ident.
 */
int rpcrdma_shim_xprt_register(struct rpc_xprt *(*setup)(struct xprt_create *args))
{
	int rc;

	if (rpcrdma_shim_xprt_class.setup)
		return -EBUSY;
	/* As xprtiod: connect workers may run in memory reclaim (swap over NFS). */
	rpcrdma_shim_xprt_wq = alloc_workqueue("rpcrdma_rs_connect", WQ_UNBOUND | WQ_MEM_RECLAIM,
					       0);
	if (!rpcrdma_shim_xprt_wq)
		return -ENOMEM;
	rpcrdma_shim_xprt_class.setup = setup;
	rc = xprt_register_transport(&rpcrdma_shim_xprt_class);
	if (rc) {
		rpcrdma_shim_xprt_class.setup = NULL;
		destroy_workqueue(rpcrdma_shim_xprt_wq);
		rpcrdma_shim_xprt_wq = NULL;
	}
	return rc;
}

void rpcrdma_shim_xprt_unregister(void)
{
	if (!rpcrdma_shim_xprt_class.setup)
		return;
	xprt_unregister_transport(&rpcrdma_shim_xprt_class);
	rpcrdma_shim_xprt_class.setup = NULL;
	destroy_workqueue(rpcrdma_shim_xprt_wq);
	rpcrdma_shim_xprt_wq = NULL;
}

struct workqueue_struct *rpcrdma_shim_xprt_wq_get(void)
{
	return rpcrdma_shim_xprt_wq;
}

/* Waits for the work queued on the transport workqueue so far. */
void rpcrdma_shim_xprt_flush(void)
{
	flush_workqueue(rpcrdma_shim_xprt_wq);
}
