// SPDX-License-Identifier: GPL-2.0
/*
 * The server's backchannel (RFC 8167), as net/sunrpc/xprtrdma/svc_rdma_backchannel.c: the
 * struct xprt_class "rdma backchannel" (XPRT_TRANSPORT_BC_RDMA) that nfsd's callback client
 * selects for a connection of our "rdma" svc_xprt_class (its xcl_ident | XPRT_TRANSPORT_BC),
 * and the struct rpc_xprt it creates, linked to that connection (xpt_bc_xprt / bc_xprt).
 *
 * The backchannel rpc_xprt has no state of its own: its Calls are sent on the forward
 * connection by the Rust server transport (rpcrdma_shim_svc_bc_send(), the bc_send callback
 * of struct rpcrdma_shim_svc_ops), and the Replies that connection receives are matched to
 * them by rpcrdma_shim_svc_bc_reply(). The forward connection holds a reference on it
 * (xpt_bc_xprt, put by svc_xprt_free()) and closes it when it is closed (svc_delete_xprt()).
 */

#include <linux/module.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <linux/sunrpc/addr.h>
#include <linux/sunrpc/clnt.h>
#include <linux/sunrpc/svc_xprt.h>
#include <linux/sunrpc/xprt.h>
#include <linux/sunrpc/xprtrdma.h>

#include "rpcrdma_shim.h"

/* Backchannel requests per connection (RPCRDMA_MAX_BC_REQUESTS). */
#define RPCRDMA_SHIM_BC_REQUESTS	2

static struct xprt_class rpcrdma_shim_bc_class;

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

/* As xprt_rdma_bc_timeout: 60 seconds, no retries. */
static const struct rpc_timeout rpcrdma_shim_bc_timeout = {
	.to_initval = 60 * HZ,
	.to_maxval = 60 * HZ,
};

/* ---- address strings, as xprt_rdma_format_addresses() ---- */

static void rpcrdma_shim_bc_format_addresses(struct rpc_xprt *xprt)
{
	struct sockaddr *sap = (struct sockaddr *)&xprt->addr;
	char buf[128];

	if (sap->sa_family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)sap;

		snprintf(buf, sizeof(buf), "%08x", ntohl(sin->sin_addr.s_addr));
		xprt->address_strings[RPC_DISPLAY_NETID] = RPCBIND_NETID_RDMA;
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)sap;

		snprintf(buf, sizeof(buf), "%pi6", &sin6->sin6_addr);
		xprt->address_strings[RPC_DISPLAY_NETID] = RPCBIND_NETID_RDMA6;
	}
	xprt->address_strings[RPC_DISPLAY_HEX_ADDR] = kstrdup(buf, GFP_KERNEL);

	(void)rpc_ntop(sap, buf, sizeof(buf));
	xprt->address_strings[RPC_DISPLAY_ADDR] = kstrdup(buf, GFP_KERNEL);

	snprintf(buf, sizeof(buf), "%u", rpc_get_port(sap));
	xprt->address_strings[RPC_DISPLAY_PORT] = kstrdup(buf, GFP_KERNEL);
	snprintf(buf, sizeof(buf), "%4hx", rpc_get_port(sap));
	xprt->address_strings[RPC_DISPLAY_HEX_PORT] = kstrdup(buf, GFP_KERNEL);
	xprt->address_strings[RPC_DISPLAY_PROTO] = "rdma";
}

static void rpcrdma_shim_bc_free_addresses(struct rpc_xprt *xprt)
{
	unsigned int i;

	for (i = 0; i < RPC_DISPLAY_MAX; i++) {
		if (i == RPC_DISPLAY_PROTO || i == RPC_DISPLAY_NETID)
			continue;
		kfree(xprt->address_strings[i]);
		xprt->address_strings[i] = NULL;
	}
}

/* ---- rpc_xprt_ops ---- */

/*
 * As xprt_rdma_bc_allocate(): a page for the Call (the callback client builds it there before
 * send_request, which copies it into a Send buffer of the connection) and a buffer for the
 * Reply (the Receive's bytes are copied into it).
 */
static int rpcrdma_shim_bc_buf_alloc(struct rpc_task *task)
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
		return -ENOMEM;
	}
	return 0;
}

static void rpcrdma_shim_bc_buf_free(struct rpc_task *task)
{
	struct rpc_rqst *rqst = task->tk_rqstp;

	put_page(virt_to_page(rqst->rq_buffer));
	kfree(rqst->rq_rbuffer);
}

/*
 * As xprt_rdma_bc_send_request(): the Call goes out on the forward connection; if it cannot,
 * the connection is closed (the callback client sees it down and nfsd probes again).
 */
static int rpcrdma_shim_bc_send_request(struct rpc_rqst *rqst)
{
	struct svc_xprt *sxprt = rqst->rq_xprt->bc_xprt;
	int ret;

	if (test_bit(XPT_DEAD, &sxprt->xpt_flags))
		return -ENOTCONN;
	rqst->rq_xtime = ktime_get();
	ret = rpcrdma_shim_svc_bc_send(sxprt, rqst);
	if (ret == -ENOTCONN)
		svc_xprt_close(sxprt);
	return ret;
}

static void rpcrdma_shim_bc_close(struct rpc_xprt *xprt)
{
	xprt_disconnect_done(xprt);
	xprt->cwnd = RPC_CWNDSHIFT;
}

/* The last reference is gone (the forward connection's, put by svc_xprt_free(), or nfsd's). */
static void rpcrdma_shim_bc_destroy(struct rpc_xprt *xprt)
{
	rpcrdma_shim_bc_free_addresses(xprt);
	xprt_free(xprt);
	atomic_inc(&rpcrdma_shim_bc_puts);
	schedule_work(&rpcrdma_shim_bc_put_work);
}

/* As xprt_rdma_print_stats() on a backchannel: the generic counters, no RDMA ones. */
static void rpcrdma_shim_bc_print_stats(struct rpc_xprt *xprt, struct seq_file *seq)
{
	seq_puts(seq, "\txprt:\trdma ");
	seq_printf(seq, "%u %lu %lu %lu %ld %lu %lu %lu %llu %llu ", 0,
		   xprt->stat.bind_count, xprt->stat.connect_count,
		   xprt->stat.connect_time / HZ, 0L, xprt->stat.sends, xprt->stat.recvs,
		   xprt->stat.bad_xids, xprt->stat.req_u, xprt->stat.bklog_u);
	seq_puts(seq, "0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n");
}

static const struct rpc_xprt_ops rpcrdma_shim_bc_procs = {
	.reserve_xprt		= xprt_reserve_xprt_cong,
	.release_xprt		= xprt_release_xprt_cong,
	.alloc_slot		= xprt_alloc_slot,
	.free_slot		= xprt_free_slot,
	.release_request	= xprt_release_rqst_cong,
	.buf_alloc		= rpcrdma_shim_bc_buf_alloc,
	.buf_free		= rpcrdma_shim_bc_buf_free,
	.send_request		= rpcrdma_shim_bc_send_request,
	.wait_for_reply_request	= xprt_wait_for_reply_request_def,
	.close			= rpcrdma_shim_bc_close,
	.destroy		= rpcrdma_shim_bc_destroy,
	.print_stats		= rpcrdma_shim_bc_print_stats,
};

/*
 * As xprt_setup_rdma_bc(): a connected transport of RPCRDMA_SHIM_BC_REQUESTS slots for the
 * connection args->bc_xprt, which must be one of ours. Two references: the connection's
 * (xpt_bc_xprt, put by svc_xprt_free()) and the caller's (xprt_alloc()'s), as TCP's
 * xs_setup_bc_tcp(). xprt_setup_rdma_bc() takes a third one "put in __svc_rdma_free", which
 * no longer puts it: there the transport is never freed (harmless for rpcrdma.ko, which it
 * holds no reference on; here it would pin the module). Holds a module reference until it
 * is destroyed.
 */
static struct rpc_xprt *rpcrdma_shim_bc_setup(struct xprt_create *args)
{
	struct rpcrdma_shim_sysctl_client tun;
	struct rpc_xprt *xprt;

	if (!args->bc_xprt || !rpcrdma_shim_svc_xprt_ours(args->bc_xprt))
		return ERR_PTR(-EINVAL);
	if (args->addrlen > sizeof(xprt->addr))
		return ERR_PTR(-EBADF);
	if (!try_module_get(THIS_MODULE))
		return ERR_PTR(-EIO);

	xprt = xprt_alloc(args->net, sizeof(*xprt), RPCRDMA_SHIM_BC_REQUESTS,
			  RPCRDMA_SHIM_BC_REQUESTS);
	if (!xprt) {
		module_put(THIS_MODULE);
		return ERR_PTR(-ENOMEM);
	}

	xprt->timeout = &rpcrdma_shim_bc_timeout;
	xprt_set_bound(xprt);
	xprt_set_connected(xprt);
	xprt->bind_timeout = 0;
	xprt->reestablish_timeout = 0;
	xprt->idle_timeout = 0;

	xprt->prot = XPRT_TRANSPORT_BC_RDMA;
	xprt->xprt_class = &rpcrdma_shim_bc_class;
	xprt->ops = &rpcrdma_shim_bc_procs;

	memcpy(&xprt->addr, args->dstaddr, args->addrlen);
	xprt->addrlen = args->addrlen;
	rpcrdma_shim_bc_format_addresses(xprt);
	xprt->resvport = 0;

	/* As C: the client's receive inline threshold (xprt_rdma_max_inline_read). */
	rpcrdma_shim_sysctl_client_get(&tun);
	xprt->max_payload = tun.max_inline_read;

	xprt->bc_xprt = args->bc_xprt;
	xprt_get(xprt);
	WRITE_ONCE(args->bc_xprt->xpt_bc_xprt, xprt);
	return xprt;
}

static struct xprt_class rpcrdma_shim_bc_class = {
	.list		= LIST_HEAD_INIT(rpcrdma_shim_bc_class.list),
	.name		= "rdma backchannel",
	.owner		= THIS_MODULE,
	.ident		= XPRT_TRANSPORT_BC_RDMA,
	.setup		= rpcrdma_shim_bc_setup,
};

/* ---- what Rust calls ---- */

int rpcrdma_shim_bc_register(void)
{
	return xprt_register_transport(&rpcrdma_shim_bc_class);
}

void rpcrdma_shim_bc_unregister(void)
{
	xprt_unregister_transport(&rpcrdma_shim_bc_class);
	/* Every transport is gone (each held a module reference): wait for the last put. */
	flush_work(&rpcrdma_shim_bc_put_work);
}

/*
 * As svc_rdma_handle_bc_reply(), once Rust has recognised a backward-direction Reply: finds
 * the Call @xid waiting on @sxprt's backchannel, copies the @len bytes of the RPC Reply at @msg
 * into its receive buffer, sets the congestion window to @credits and completes it.
 */
int rpcrdma_shim_svc_bc_reply(struct svc_xprt *sxprt, u32 xid, const void *msg, u32 len,
			      u32 credits)
{
	struct rpc_xprt *xprt = READ_ONCE(sxprt->xpt_bc_xprt);
	struct rpc_rqst *req;
	struct kvec *dst;

	if (!xprt)
		return -ENOTCONN;

	spin_lock(&xprt->queue_lock);
	req = xprt_lookup_rqst(xprt, cpu_to_be32(xid));
	if (!req) {
		spin_unlock(&xprt->queue_lock);
		return -ENOENT;
	}
	dst = &req->rq_private_buf.head[0];
	memcpy(&req->rq_private_buf, &req->rq_rcv_buf, sizeof(struct xdr_buf));
	if (dst->iov_len < len) {
		spin_unlock(&xprt->queue_lock);
		return -EMSGSIZE;
	}
	memcpy(dst->iov_base, msg, len);
	xprt_pin_rqst(req);
	spin_unlock(&xprt->queue_lock);

	spin_lock(&xprt->transport_lock);
	xprt->cwnd = credits << RPC_CWNDSHIFT;
	spin_unlock(&xprt->transport_lock);

	spin_lock(&xprt->queue_lock);
	xprt_complete_rqst(req->rq_task, len);
	xprt_unpin_rqst(req);
	spin_unlock(&xprt->queue_lock);
	return 0;
}

u32 rpcrdma_shim_bc_rqst_xid(const struct rpc_rqst *rqst)
{
	return be32_to_cpu(rqst->rq_xid);
}

u32 rpcrdma_shim_bc_rqst_len(const struct rpc_rqst *rqst)
{
	return rqst->rq_snd_buf.len;
}

int rpcrdma_shim_bc_rqst_copy(const struct rpc_rqst *rqst, void *dst, u32 len)
{
	if (len > rqst->rq_snd_buf.len)
		return -EINVAL;
	return read_bytes_from_xdr_buf((struct xdr_buf *)&rqst->rq_snd_buf, 0, dst, len);
}
