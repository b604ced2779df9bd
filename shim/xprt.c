// SPDX-License-Identifier: GPL-2.0
/*
 * Client transport class of rpcrdma_rs: the one struct xprt_class object (it ends in a
 * flexible array and holds THIS_MODULE, so it is C) and the struct rpc_xprt it creates
 * (allocated with xprt_alloc and filled like xprt_setup_rdma). The class's setup function and
 * the rpc_xprt_ops table are Rust's (rust/sunrpc/xprt.rs); what is here are the accessors of
 * the fields and static inlines they need.
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

/**
 * struct rpcrdma_shim_xprt - our struct rpc_xprt and what C keeps next to it
 * @xprt: the generic transport; first, as xprt_alloc() allocates the whole object
 * @timeout: a copy of the timeouts once set_connect_timeout lowered them
 * @priv: the Rust transport (ForeignOwnable), freed by the destroy op
 */
struct rpcrdma_shim_xprt {
	struct rpc_xprt xprt;
	struct rpc_timeout timeout;
	void *priv;
};

static struct rpcrdma_shim_xprt *rpcrdma_shim_xprt(struct rpc_xprt *xprt)
{
	return container_of(xprt, struct rpcrdma_shim_xprt, xprt);
}

/* Rust's rpc_xprt_ops, set while the class is registered. */
static const struct rpc_xprt_ops *rpcrdma_shim_xprt_procs;
/*
 * The connect workers' queue: destroyed (and so drained) when the class is unregistered, so no
 * worker still runs module code once the module can go away.
 */
static struct workqueue_struct *rpcrdma_shim_xprt_wq;

/* 60 second timeout, no retries (xprt_rdma_default_timeout). */
static const struct rpc_timeout rpcrdma_shim_default_timeout = {
	.to_initval = 60 * HZ,
	.to_maxval = 60 * HZ,
};

static struct xprt_class rpcrdma_shim_xprt_class = {
	.list	= LIST_HEAD_INIT(rpcrdma_shim_xprt_class.list),
	.name	= "rdma",
	.owner	= THIS_MODULE,
	.ident	= XPRT_TRANSPORT_RDMA,
	.netid	= { "rdma", "rdma6", "" },
};

/* ---- the transport's life ---- */

/*
 * As xprt_setup_rdma(), with the values Rust chose. On success the transport owns @priv (given
 * back by rpcrdma_shim_xprt_priv()) and a module reference; on failure the caller keeps @priv.
 */
struct rpc_xprt *rpcrdma_shim_xprt_create(struct xprt_create *args,
					  const struct rpcrdma_shim_xprt_params *p, void *priv)
{
	struct rpcrdma_shim_xprt *sx;
	struct rpc_xprt *xprt;

	if (p->addrlen > sizeof(xprt->addr))
		return ERR_PTR(-EBADF);
	if (!try_module_get(THIS_MODULE))
		return ERR_PTR(-EIO);

	xprt = xprt_alloc(args->net, sizeof(*sx), 0, p->max_reqs);
	if (!xprt) {
		module_put(THIS_MODULE);
		return ERR_PTR(-ENOMEM);
	}
	sx = rpcrdma_shim_xprt(xprt);

	xprt->timeout = &rpcrdma_shim_default_timeout;
	xprt->connect_timeout = xprt->timeout->to_initval;
	xprt->max_reconnect_timeout = xprt->timeout->to_maxval;
	xprt->bind_timeout = p->bind_timeout;
	xprt->reestablish_timeout = p->reestablish_timeout;
	xprt->idle_timeout = p->idle_timeout;
	xprt->resvport = 0;
	xprt->ops = rpcrdma_shim_xprt_procs;

	/* xprt->addr holds the server's TCP address, for side protocols that peek at it. */
	xprt->prot = IPPROTO_TCP;
	xprt->xprt_class = &rpcrdma_shim_xprt_class;
	xprt->addrlen = p->addrlen;
	memcpy(&xprt->addr, p->addr, p->addrlen);
	xprt_set_bound(xprt);
	/* The address strings are filled by the Rust setup once this returns. */

	xprt->max_payload = p->max_payload;
	sx->priv = priv;
	return xprt;
}

void *rpcrdma_shim_xprt_priv(struct rpc_xprt *xprt)
{
	return rpcrdma_shim_xprt(xprt)->priv;
}

/* The end of xprt_rdma_destroy(), once Rust took back the transport's @priv. */
void rpcrdma_shim_xprt_free(struct rpc_xprt *xprt)
{
	unsigned int i;

	for (i = 0; i < RPC_DISPLAY_MAX; i++)
		kfree(xprt->address_strings[i]);
	xprt_free(xprt);
	module_put(THIS_MODULE);
}

/* The copy of the timeouts that the set_connect_timeout op points xprt->timeout at. */
struct rpc_timeout *rpcrdma_shim_xprt_timeout(struct rpc_xprt *xprt)
{
	return &rpcrdma_shim_xprt(xprt)->timeout;
}

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
 * Registers the "rdma" client transport, whose setup is @setup and whose transports' ops are
 * @ops. Returns -EBUSY if this module already registered it and -EEXIST if another module
 * (rpcrdma.ko) holds the ident.
 */
int rpcrdma_shim_xprt_register(struct rpc_xprt *(*setup)(struct xprt_create *args),
			       const struct rpc_xprt_ops *ops)
{
	int rc;

	if (rpcrdma_shim_xprt_procs)
		return -EBUSY;
	/* As xprtiod: connect workers may run in memory reclaim (swap over NFS). */
	rpcrdma_shim_xprt_wq = alloc_workqueue("rpcrdma_rs_connect", WQ_UNBOUND | WQ_MEM_RECLAIM,
					       0);
	if (!rpcrdma_shim_xprt_wq)
		return -ENOMEM;
	rpcrdma_shim_xprt_procs = ops;
	rpcrdma_shim_xprt_class.setup = setup;
	rc = xprt_register_transport(&rpcrdma_shim_xprt_class);
	if (rc) {
		rpcrdma_shim_xprt_procs = NULL;
		destroy_workqueue(rpcrdma_shim_xprt_wq);
		rpcrdma_shim_xprt_wq = NULL;
	}
	return rc;
}

void rpcrdma_shim_xprt_unregister(void)
{
	if (!rpcrdma_shim_xprt_procs)
		return;
	xprt_unregister_transport(&rpcrdma_shim_xprt_class);
	rpcrdma_shim_xprt_procs = NULL;
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
