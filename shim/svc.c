// SPDX-License-Identifier: GPL-2.0
/*
 * Server transport class of rpcrdma_rs: the struct svc_xprt_class named "rdma" that nfsd
 * finds when "rdma 20049" is written to /proc/fs/nfsd/portlist, forwarding to Rust, and the
 * struct svc_xprt container whose private pointer is the Rust transport object.
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

/* A transport of our class: the generic svc_xprt and the Rust object (listener or connection). */
struct rpcrdma_shim_svc_xprt {
	struct svc_xprt xprt;
	void *priv;
};

static const struct rpcrdma_shim_svc_ops *rpcrdma_shim_svc_ops;

static void *rpcrdma_shim_svc_priv(const struct svc_xprt *xprt)
{
	return container_of(xprt, struct rpcrdma_shim_svc_xprt, xprt)->priv;
}

static struct svc_xprt *rpcrdma_shim_svc_create(struct svc_serv *serv, struct net *net,
						struct sockaddr *sa, int salen, int flags)
{
	return rpcrdma_shim_svc_ops->create(serv, net, sa, salen, flags);
}

static struct svc_xprt *rpcrdma_shim_svc_accept(struct svc_xprt *xprt)
{
	/* The Rust side sets XPT_CONN again if more connections are queued. */
	clear_bit(XPT_CONN, &xprt->xpt_flags);
	return rpcrdma_shim_svc_ops->accept(rpcrdma_shim_svc_priv(xprt), xprt);
}

static int rpcrdma_shim_svc_recvfrom(struct svc_rqst *rqstp)
{
	struct svc_xprt *xprt = rqstp->rq_xprt;

	/* As svc_rdma_recvfrom: no reply pages to release if we return early. */
	rqstp->rq_next_page = rqstp->rq_respages;
	rqstp->rq_xprt_ctxt = NULL;
	return rpcrdma_shim_svc_ops->recvfrom(rpcrdma_shim_svc_priv(xprt), xprt, rqstp);
}

static int rpcrdma_shim_svc_sendto(struct svc_rqst *rqstp)
{
	struct svc_xprt *xprt = rqstp->rq_xprt;

	return rpcrdma_shim_svc_ops->sendto(rpcrdma_shim_svc_priv(xprt), xprt, rqstp);
}

static int rpcrdma_shim_svc_result_payload(struct svc_rqst *rqstp, unsigned int offset,
					   unsigned int length)
{
	return rpcrdma_shim_svc_ops->result_payload(rpcrdma_shim_svc_priv(rqstp->rq_xprt),
						    rqstp, offset, length);
}

static void rpcrdma_shim_svc_release_ctxt(struct svc_xprt *xprt, void *ctxt)
{
	if (ctxt)
		rpcrdma_shim_svc_ops->release_ctxt(rpcrdma_shim_svc_priv(xprt), ctxt);
}

static void rpcrdma_shim_svc_detach(struct svc_xprt *xprt)
{
	rpcrdma_shim_svc_ops->detach(rpcrdma_shim_svc_priv(xprt), xprt);
}

static void rpcrdma_shim_svc_free(struct svc_xprt *xprt)
{
	struct rpcrdma_shim_svc_xprt *x = container_of(xprt, struct rpcrdma_shim_svc_xprt, xprt);

	might_sleep();
	rpcrdma_shim_svc_ops->free(x->priv);
	kfree(x);
}

static int rpcrdma_shim_svc_has_wspace(struct svc_xprt *xprt)
{
	return rpcrdma_shim_svc_ops->has_wspace(rpcrdma_shim_svc_priv(xprt));
}

static void rpcrdma_shim_svc_kill_temp_xprt(struct svc_xprt *xprt)
{
}

static const struct svc_xprt_ops rpcrdma_shim_svc_xprt_ops = {
	.xpo_create = rpcrdma_shim_svc_create,
	.xpo_accept = rpcrdma_shim_svc_accept,
	.xpo_recvfrom = rpcrdma_shim_svc_recvfrom,
	.xpo_sendto = rpcrdma_shim_svc_sendto,
	.xpo_result_payload = rpcrdma_shim_svc_result_payload,
	.xpo_release_ctxt = rpcrdma_shim_svc_release_ctxt,
	.xpo_detach = rpcrdma_shim_svc_detach,
	.xpo_free = rpcrdma_shim_svc_free,
	.xpo_has_wspace = rpcrdma_shim_svc_has_wspace,
	.xpo_kill_temp_xprt = rpcrdma_shim_svc_kill_temp_xprt,
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
/*
 * Connection teardowns deferred past xpo_free (a disconnect that must wait for its port, as
 * svcrdma's svcrdma_wq): destroyed, after draining, when the class is unregistered.
 */
static struct workqueue_struct *rpcrdma_shim_svc_wq;

int rpcrdma_shim_svc_register(const struct rpcrdma_shim_svc_ops *ops)
{
	int rc;

	if (rpcrdma_shim_svc_ops)
		return -EBUSY;
	rpcrdma_shim_svc_wq = alloc_workqueue("rpcrdma_rs_svc", WQ_UNBOUND, 0);
	if (!rpcrdma_shim_svc_wq)
		return -ENOMEM;
	rpcrdma_shim_svc_ops = ops;
	rc = svc_reg_xprt_class(&rpcrdma_shim_svc_class);
	if (rc) {
		rpcrdma_shim_svc_ops = NULL;
		destroy_workqueue(rpcrdma_shim_svc_wq);
		rpcrdma_shim_svc_wq = NULL;
	}
	return rc;
}

void rpcrdma_shim_svc_unregister(void)
{
	if (!rpcrdma_shim_svc_ops)
		return;
	svc_unreg_xprt_class(&rpcrdma_shim_svc_class);
	rpcrdma_shim_svc_ops = NULL;
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

struct svc_xprt *rpcrdma_shim_svc_xprt_alloc(struct svc_serv *serv, struct net *net,
					     void *priv, bool listener)
{
	struct rpcrdma_shim_svc_xprt *x = kzalloc(sizeof(*x), GFP_KERNEL);

	if (!x)
		return NULL;
	svc_xprt_init(net, &rpcrdma_shim_svc_class, &x->xprt, serv);
	x->priv = priv;
	/* As svcrdma: RDMA transports count as congestion controlled (RFC 7530, 3.1). */
	set_bit(XPT_CONG_CTRL, &x->xprt.xpt_flags);
	if (listener) {
		set_bit(XPT_LISTENER, &x->xprt.xpt_flags);
		strscpy(x->xprt.xpt_remotebuf, "listener");
	}
	return &x->xprt;
}

struct svc_serv *rpcrdma_shim_svc_xprt_serv(const struct svc_xprt *xprt)
{
	return xprt->xpt_server;
}

struct net *rpcrdma_shim_svc_xprt_net(const struct svc_xprt *xprt)
{
	return xprt->xpt_net;
}

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

void rpcrdma_shim_svc_xprt_put(struct svc_xprt *xprt)
{
	svc_xprt_put(xprt);
}

void rpcrdma_shim_svc_xprt_enqueue_data(struct svc_xprt *xprt)
{
	set_bit(XPT_DATA, &xprt->xpt_flags);
	svc_xprt_enqueue(xprt);
}

void rpcrdma_shim_svc_xprt_conn_pending(struct svc_xprt *xprt, bool enqueue)
{
	set_bit(XPT_CONN, &xprt->xpt_flags);
	if (enqueue)
		svc_xprt_enqueue(xprt);
}

void rpcrdma_shim_svc_xprt_clear_data(struct svc_xprt *xprt)
{
	clear_bit(XPT_DATA, &xprt->xpt_flags);
}

void rpcrdma_shim_svc_xprt_received(struct svc_xprt *xprt)
{
	svc_xprt_received(xprt);
}

u32 rpcrdma_shim_svc_xprt_maxpages(struct svc_xprt *xprt)
{
	return svc_serv_maxpages(xprt->xpt_server);
}

void rpcrdma_shim_svc_xprt_deferred_close(struct svc_xprt *xprt)
{
	svc_xprt_deferred_close(xprt);
}

/* ---- the backchannel (shim/svc_bc.c) ---- */

bool rpcrdma_shim_svc_xprt_ours(const struct svc_xprt *xprt)
{
	return xprt->xpt_class == &rpcrdma_shim_svc_class &&
	       !test_bit(XPT_LISTENER, &xprt->xpt_flags);
}

int rpcrdma_shim_svc_bc_send(struct svc_xprt *xprt, struct rpc_rqst *rqst)
{
	return rpcrdma_shim_svc_ops->bc_send(rpcrdma_shim_svc_priv(xprt), xprt, rqst);
}
