// SPDX-License-Identifier: GPL-2.0
/*
 * Server transport class of rpcrdma_rs: the struct svc_xprt_class named "rdma" that nfsd
 * finds when "rdma 20049" is written to /proc/fs/nfsd/portlist, whose svc_xprt_ops Rust
 * defines (rust/sunrpc/svc.rs; so is the transports' allocation), its workqueue, and wrappers of
 * the static inlines Rust needs.
 */

#include <linux/module.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/sunrpc/addr.h>
#include <linux/sunrpc/svc_xprt.h>
#include <linux/sunrpc/svc_rdma.h>
#include <linux/sunrpc/xprt.h>

#include "rpcrdma_shim.h"

struct svc_xprt_class rpcrdma_shim_svc_class = {
	.xcl_name	 = "rdma",
	.xcl_owner	 = THIS_MODULE,
	.xcl_max_payload = RPCSVC_MAXPAYLOAD_RDMA,
	.xcl_ident	 = XPRT_TRANSPORT_RDMA,
};

/*
 * Connection teardowns deferred past xpo_free (a disconnect that must wait for its port, as
 * svcrdma's svcrdma_wq): destroyed, after draining, when the class is unregistered.
 */
static struct workqueue_struct *rpcrdma_shim_svc_wq;

int rpcrdma_shim_svc_register(const struct svc_xprt_ops *ops)
{
	int rc;

	if (rpcrdma_shim_svc_class.xcl_ops)
		return -EBUSY;
	rpcrdma_shim_svc_wq = alloc_workqueue("rpcrdma_rs_svc", WQ_UNBOUND, 0);
	if (!rpcrdma_shim_svc_wq)
		return -ENOMEM;
	rpcrdma_shim_svc_class.xcl_ops = ops;
	rc = svc_reg_xprt_class(&rpcrdma_shim_svc_class);
	if (rc) {
		rpcrdma_shim_svc_class.xcl_ops = NULL;
		destroy_workqueue(rpcrdma_shim_svc_wq);
		rpcrdma_shim_svc_wq = NULL;
	}
	return rc;
}

void rpcrdma_shim_svc_unregister(void)
{
	if (!rpcrdma_shim_svc_class.xcl_ops)
		return;
	svc_unreg_xprt_class(&rpcrdma_shim_svc_class);
	rpcrdma_shim_svc_class.xcl_ops = NULL;
	destroy_workqueue(rpcrdma_shim_svc_wq);
	rpcrdma_shim_svc_wq = NULL;
}

struct workqueue_struct *rpcrdma_shim_svc_wq_get(void)
{
	return rpcrdma_shim_svc_wq;
}

void rpcrdma_shim_svc_flush(void)
{
	if (rpcrdma_shim_svc_wq)
		flush_workqueue(rpcrdma_shim_svc_wq);
}

/* ---- the svc_xprt container ---- */

void rpcrdma_shim_svc_xprt_set_local(struct svc_xprt *xprt, const struct sockaddr *sa,
				     size_t len)
{
	svc_xprt_set_local(xprt, sa, len);
}

void rpcrdma_shim_svc_xprt_set_remote(struct svc_xprt *xprt, const struct sockaddr *sa,
				      size_t len)
{
	svc_xprt_set_remote(xprt, sa, len);
}

void rpcrdma_shim_svc_xprt_set_remote_port(struct svc_xprt *xprt, u16 port)
{
	rpc_set_port((struct sockaddr *)&xprt->xpt_remote, port);
}

void rpcrdma_shim_svc_xprt_discard(struct svc_xprt *xprt)
{
	__module_get(xprt->xpt_class->xcl_owner);
	svc_xprt_put(xprt);
}

void rpcrdma_shim_svc_xprt_get(struct svc_xprt *xprt)
{
	svc_xprt_get(xprt);
}

u32 rpcrdma_shim_svc_xprt_maxpages(struct svc_xprt *xprt)
{
	return svc_serv_maxpages(xprt->xpt_server);
}

