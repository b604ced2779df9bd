// SPDX-License-Identifier: GPL-2.0
/*
 * Server transport class of rpcrdma_rs: the struct svc_xprt_class named "rdma" that nfsd
 * finds when "rdma 20049" is written to /proc/fs/nfsd/portlist, forwarding to Rust.
 */

#include <linux/module.h>
#include <linux/sunrpc/svc_xprt.h>
#include <linux/sunrpc/svc_rdma.h>

#include "rpcrdma_shim.h"

static const struct rpcrdma_shim_svc_ops *rpcrdma_shim_svc_ops;

static struct svc_xprt *rpcrdma_shim_svc_create(struct svc_serv *serv, struct net *net,
						struct sockaddr *sa, int salen, int flags)
{
	return rpcrdma_shim_svc_ops->create(serv, net, sa, salen, flags);
}

static const struct svc_xprt_ops rpcrdma_shim_svc_xprt_ops = {
	.xpo_create = rpcrdma_shim_svc_create,
};

static struct svc_xprt_class rpcrdma_shim_svc_class = {
	.xcl_name	 = "rdma",
	.xcl_owner	 = THIS_MODULE,
	.xcl_ops	 = &rpcrdma_shim_svc_xprt_ops,
	.xcl_max_payload = RPCSVC_MAXPAYLOAD_RDMA,
	.xcl_ident	 = XPRT_TRANSPORT_RDMA,
};

/*
 * Registers the "rdma" svc_xprt_class. Returns -EBUSY if this module already registered
 * it and -EEXIST if another module (rpcrdma.ko) holds the name.
 */
int rpcrdma_shim_svc_register(const struct rpcrdma_shim_svc_ops *ops)
{
	int rc;

	if (rpcrdma_shim_svc_ops)
		return -EBUSY;
	rpcrdma_shim_svc_ops = ops;
	rc = svc_reg_xprt_class(&rpcrdma_shim_svc_class);
	if (rc)
		rpcrdma_shim_svc_ops = NULL;
	return rc;
}

void rpcrdma_shim_svc_unregister(void)
{
	if (!rpcrdma_shim_svc_ops)
		return;
	svc_unreg_xprt_class(&rpcrdma_shim_svc_class);
	rpcrdma_shim_svc_ops = NULL;
}

unsigned short rpcrdma_shim_sockaddr_family(const struct sockaddr *sa)
{
	return sa ? sa->sa_family : AF_UNSPEC;
}
