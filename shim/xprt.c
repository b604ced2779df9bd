// SPDX-License-Identifier: GPL-2.0
/*
 * Client transport class of rpcrdma_rs: the one struct xprt_class object (it ends in a
 * flexible array and holds THIS_MODULE, so it is C), forwarding to Rust callbacks.
 */

#include <linux/module.h>
#include <linux/sunrpc/xprt.h>

#include "rpcrdma_shim.h"

static const struct rpcrdma_shim_xprt_ops *rpcrdma_shim_xprt_ops;

static struct rpc_xprt *rpcrdma_shim_xprt_setup(struct xprt_create *args)
{
	return rpcrdma_shim_xprt_ops->setup(args);
}

static struct xprt_class rpcrdma_shim_xprt_class = {
	.list	= LIST_HEAD_INIT(rpcrdma_shim_xprt_class.list),
	.name	= "rdma",
	.owner	= THIS_MODULE,
	.ident	= XPRT_TRANSPORT_RDMA,
	.setup	= rpcrdma_shim_xprt_setup,
	.netid	= { "rdma", "rdma6", "" },
};

int rpcrdma_shim_xprt_ident(void)
{
	return XPRT_TRANSPORT_RDMA;
}

/*
 * Registers the "rdma" client transport. Returns -EBUSY if this module already
 * registered it and -EEXIST if another module (rpcrdma.ko) holds the ident.
 */
int rpcrdma_shim_xprt_register(const struct rpcrdma_shim_xprt_ops *ops)
{
	int rc;

	if (rpcrdma_shim_xprt_ops)
		return -EBUSY;
	rpcrdma_shim_xprt_ops = ops;
	rc = xprt_register_transport(&rpcrdma_shim_xprt_class);
	if (rc)
		rpcrdma_shim_xprt_ops = NULL;
	return rc;
}

void rpcrdma_shim_xprt_unregister(void)
{
	if (!rpcrdma_shim_xprt_ops)
		return;
	xprt_unregister_transport(&rpcrdma_shim_xprt_class);
	rpcrdma_shim_xprt_ops = NULL;
}

unsigned short rpcrdma_shim_xprt_create_family(const struct xprt_create *args)
{
	return args->dstaddr ? args->dstaddr->sa_family : AF_UNSPEC;
}
