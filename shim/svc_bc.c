// SPDX-License-Identifier: GPL-2.0
/*
 * The server's backchannel (RFC 8167), as net/sunrpc/xprtrdma/svc_rdma_backchannel.c: the
 * struct xprt_class "rdma backchannel" (XPRT_TRANSPORT_BC_RDMA) that nfsd's callback client
 * selects for a connection of our "rdma" svc_xprt_class (its xcl_ident | XPRT_TRANSPORT_BC),
 * and the struct rpc_xprt it creates, linked to that connection (xpt_bc_xprt / bc_xprt).
 *
 * The backchannel rpc_xprt has no state of its own: its Calls are sent on the forward
 * connection by the Rust server transport, and the Replies that connection receives complete
 * them in Rust (SvcXprt::bc_reply). The forward connection holds a reference on it
 * (xpt_bc_xprt, put by svc_xprt_free()) and closes it when it is closed (svc_delete_xprt()).
 * The class's setup (the transport's allocation), its rpc_xprt_ops table, send_request,
 * destroy and statistics line are Rust's (sunrpc::svc::BcAdapter in rust/sunrpc/svc.rs), as
 * are the address strings, the link to the connection and close; C keeps the class object,
 * the request buffers and the module put that must not run in module code's own frame.
 */

#include <linux/module.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <linux/sunrpc/clnt.h>
#include <linux/sunrpc/svc_xprt.h>
#include <linux/sunrpc/xprt.h>
#include <linux/sunrpc/xprtrdma.h>

#include "rpcrdma_shim.h"

/*
 * The module references of destroyed transports, put by a work item rather than by the destroy
 * op itself: code of ours still runs after the last module_put() of the destroy op (its own
 * return), which an unload could race with; the work item's end is waited for by
 * rpcrdma_shim_bc_unregister() in module exit, which runs only once the references are gone.
 */
static atomic_t rpcrdma_shim_bc_puts = ATOMIC_INIT(0);

static void rpcrdma_shim_bc_put_module(struct work_struct *work)
{
	while (atomic_dec_if_positive(&rpcrdma_shim_bc_puts) >= 0)
		module_put(THIS_MODULE);
}

static DECLARE_WORK(rpcrdma_shim_bc_put_work, rpcrdma_shim_bc_put_module);

/* ---- the rpc_xprt_ops of the table Rust defines ---- */

/*
 * As xprt_rdma_bc_allocate(): a page for the Call (the callback client builds it there before
 * send_request, which copies it into a Send buffer of the connection) and a buffer for the
 * Reply (the Receive's bytes are copied into it).
 */
int rpcrdma_shim_bc_buf_alloc(struct rpc_task *task)
{
	struct rpc_rqst *rqst = task->tk_rqstp;
	struct page *page;

	if (rqst->rq_callsize > PAGE_SIZE) {
		WARN_ONCE(1, "rpcrdma_rs: large bc buffer request (size %zu)\n",
			  rqst->rq_callsize);
		return -EINVAL;
	}
	page = alloc_page(GFP_NOIO | __GFP_NOWARN);
	if (!page)
		return -ENOMEM;
	rqst->rq_buffer = page_address(page);
	rqst->rq_rbuffer = kmalloc(rqst->rq_rcvsize, GFP_NOIO | __GFP_NOWARN);
	if (!rqst->rq_rbuffer) {
		put_page(page);
		/* call_allocate retries only while rq_buffer is NULL. */
		rqst->rq_buffer = NULL;
		return -ENOMEM;
	}
	return 0;
}

void rpcrdma_shim_bc_buf_free(struct rpc_task *task)
{
	struct rpc_rqst *rqst = task->tk_rqstp;

	put_page(virt_to_page(rqst->rq_buffer));
	kfree(rqst->rq_rbuffer);
}

void rpcrdma_shim_bc_free(struct rpc_xprt *xprt)
{
	xprt_free(xprt);
	atomic_inc(&rpcrdma_shim_bc_puts);
	schedule_work(&rpcrdma_shim_bc_put_work);
}

unsigned int rpcrdma_shim_bc_refs(struct rpc_xprt *xprt)
{
	return kref_read(&xprt->kref);
}

struct xprt_class rpcrdma_shim_bc_class = {
	.list		= LIST_HEAD_INIT(rpcrdma_shim_bc_class.list),
	.name		= "rdma backchannel",
	.owner		= THIS_MODULE,
	.ident		= XPRT_TRANSPORT_BC_RDMA,
};

int rpcrdma_shim_bc_register(struct rpc_xprt *(*setup)(struct xprt_create *args))
{
	rpcrdma_shim_bc_class.setup = setup;
	return xprt_register_transport(&rpcrdma_shim_bc_class);
}

void rpcrdma_shim_bc_unregister(void)
{
	xprt_unregister_transport(&rpcrdma_shim_bc_class);
	/* Every transport is gone (each held a module reference): wait for the last put. */
	flush_work(&rpcrdma_shim_bc_put_work);
}
