// SPDX-License-Identifier: GPL-2.0
/*
 * Client transport class of rpcrdma_rs: the one struct xprt_class object (it ends in a
 * flexible array and holds THIS_MODULE, so it is C), the struct rpc_xprt the class creates
 * (allocated with xprt_alloc and filled like xprt_setup_rdma), and its rpc_xprt_ops table:
 * generic sunrpc helpers where the C transport uses them too, forwarders to the Rust
 * callbacks of struct rpcrdma_shim_xprt_ops for the rest.
 */

#include <linux/module.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <linux/sunrpc/addr.h>
#include <linux/sunrpc/bc_xprt.h>
#include <linux/sunrpc/clnt.h>
#include <linux/sunrpc/rpc_rdma.h>
#include <linux/sunrpc/sched.h>
#include <linux/sunrpc/xprt.h>
#include <linux/sunrpc/xprtrdma.h>

#include "rpcrdma_shim.h"

/**
 * struct rpcrdma_shim_xprt - our struct rpc_xprt and what C keeps next to it
 * @xprt: the generic transport; first, as xprt_alloc() allocates the whole object
 * @timeout: a copy of the timeouts once set_connect_timeout lowered them
 * @min_connect_timeout: the lowest timeout set_connect_timeout sets (from Rust's parameters)
 * @priv: the Rust transport (ForeignOwnable), freed by the destroy callback
 */
struct rpcrdma_shim_xprt {
	struct rpc_xprt xprt;
	struct rpc_timeout timeout;
	unsigned long min_connect_timeout;
	void *priv;
};

static struct rpcrdma_shim_xprt *rpcrdma_shim_xprt(struct rpc_xprt *xprt)
{
	return container_of(xprt, struct rpcrdma_shim_xprt, xprt);
}

static const struct rpcrdma_shim_xprt_ops *rpcrdma_shim_xprt_ops;
static struct xprt_class rpcrdma_shim_xprt_class;
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

static struct rpc_xprt *rpcrdma_shim_xprt_setup(struct xprt_create *args)
{
	return rpcrdma_shim_xprt_ops->setup(args);
}

/* ---- address strings (formatted by Rust, as xprt_rdma_format_addresses()) ---- */

void rpcrdma_shim_xprt_set_address(struct rpc_xprt *xprt, u32 which, const char *s)
{
	if (WARN_ON_ONCE(which >= RPC_DISPLAY_MAX))
		return;
	kfree(xprt->address_strings[which]);
	xprt->address_strings[which] = s ? kstrdup(s, GFP_KERNEL) : NULL;
}

static void rpcrdma_shim_free_addresses(struct rpc_xprt *xprt)
{
	unsigned int i;

	for (i = 0; i < RPC_DISPLAY_MAX; i++) {
		kfree(xprt->address_strings[i]);
		xprt->address_strings[i] = NULL;
	}
}

/* ---- rpc_xprt_ops ---- */

static void rpcrdma_shim_set_port(struct rpc_xprt *xprt, u16 port)
{
	rpc_set_port((struct sockaddr *)&xprt->addr, port);
	rpcrdma_shim_xprt_ops->set_port(xprt);
}

/*
 * As xprt_rdma_connect(): take over the connect lock and let Rust queue the worker, at once.
 * The C transport backs off only if its endpoint is still there with a connect error, which
 * never holds here (a failed or closed connection has freed it by then), so it reconnects
 * without delay too: sunrpc paces the retries (call_connect_status() delays the task 3 s after
 * a refused or unreachable connect). A backoff of ours would grow to the mount's to_maxval
 * (180 s for timeo=600), holding the transport, and an unmount, that long.
 */
static void rpcrdma_shim_connect(struct rpc_xprt *xprt, struct rpc_task *task)
{
	struct rpcrdma_shim_xprt *sx = rpcrdma_shim_xprt(xprt);

	WARN_ON_ONCE(!xprt_lock_connect(xprt, task, sx));
	rpcrdma_shim_xprt_ops->connect(sx->priv, xprt, 0);
}

/*
 * The call and reply buffers: one kmalloc'ed block (physically contiguous, so the shim can
 * register any range of it). Calls are copied into the transport's own Send buffers.
 */
static int rpcrdma_shim_buf_alloc(struct rpc_task *task)
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

/* As xprt_rdma_free(): no registration of the buffers may outlive them. */
static void rpcrdma_shim_buf_free(struct rpc_task *task)
{
	struct rpc_rqst *rqst = task->tk_rqstp;

	rpcrdma_shim_xprt_ops->buf_free(rpcrdma_shim_xprt(rqst->rq_xprt)->priv, rqst);
	kfree(rqst->rq_buffer);
	rqst->rq_buffer = NULL;
	rqst->rq_rbuffer = NULL;
}

#if IS_ENABLED(CONFIG_SUNRPC_BACKCHANNEL)
static int rpcrdma_shim_bc_send_reply(struct rpc_rqst *rqst);
#endif

/* As xprt_rdma_send_request(), whose policy is Rust's; the transport is locked (XPRT_LOCKED). */
static int rpcrdma_shim_send_request(struct rpc_rqst *rqst)
{
	struct rpc_xprt *xprt = rqst->rq_xprt;

#if IS_ENABLED(CONFIG_SUNRPC_BACKCHANNEL)
	/* A backward Reply: sunrpc allocates no buffer for it. */
	if (unlikely(!rqst->rq_buffer))
		return rpcrdma_shim_bc_send_reply(rqst);
#endif
	return rpcrdma_shim_xprt_ops->send_request(rpcrdma_shim_xprt(xprt)->priv, xprt, rqst);
}

static void rpcrdma_shim_timer(struct rpc_xprt *xprt, struct rpc_task *task)
{
	rpcrdma_shim_xprt_ops->timer(rpcrdma_shim_xprt(xprt)->priv);
}

/* As xprt_rdma_close(). Called with the transport locked (XPRT_LOCKED). */
static void rpcrdma_shim_close(struct rpc_xprt *xprt)
{
	rpcrdma_shim_xprt_ops->close(rpcrdma_shim_xprt(xprt)->priv);
	xprt->reestablish_timeout = 0;
	++xprt->connect_cookie;
	xprt_disconnect_done(xprt);
}

/* As xprt_rdma_destroy(): no more calls come for @xprt. */
static void rpcrdma_shim_destroy(struct rpc_xprt *xprt)
{
	rpcrdma_shim_xprt_ops->destroy(rpcrdma_shim_xprt(xprt)->priv);
	rpcrdma_shim_free_addresses(xprt);
	xprt_free(xprt);
	module_put(THIS_MODULE);
}

/* As xprt_rdma_set_connect_timeout(). */
static void rpcrdma_shim_set_connect_timeout(struct rpc_xprt *xprt,
					     unsigned long connect_timeout,
					     unsigned long reconnect_timeout)
{
	struct rpcrdma_shim_xprt *sx = rpcrdma_shim_xprt(xprt);

	spin_lock(&xprt->transport_lock);
	if (connect_timeout < xprt->connect_timeout) {
		struct rpc_timeout to = *xprt->timeout;
		unsigned long initval = max(connect_timeout, sx->min_connect_timeout);

		to.to_initval = initval;
		to.to_maxval = initval;
		sx->timeout = to;
		xprt->timeout = &sx->timeout;
		xprt->connect_timeout = connect_timeout;
	}
	if (reconnect_timeout < xprt->max_reconnect_timeout)
		xprt->max_reconnect_timeout = reconnect_timeout;
	spin_unlock(&xprt->transport_lock);
}

/* As xprt_rdma_print_stats(): the same fields in the same order, for mountstats(8). */
static void rpcrdma_shim_print_stats(struct rpc_xprt *xprt, struct seq_file *seq)
{
	struct rpcrdma_shim_xprt_stats st = {};
	long idle_time = 0;

	rpcrdma_shim_xprt_ops->stats(rpcrdma_shim_xprt(xprt)->priv, &st);

	if (xprt_connected(xprt))
		idle_time = (long)(jiffies - xprt->last_used) / HZ;

	seq_puts(seq, "\txprt:\trdma ");
	seq_printf(seq, "%u %lu %lu %lu %ld %lu %lu %lu %llu %llu ",
		   0,	/* need a local port? */
		   xprt->stat.bind_count,
		   xprt->stat.connect_count,
		   xprt->stat.connect_time / HZ,
		   idle_time,
		   xprt->stat.sends,
		   xprt->stat.recvs,
		   xprt->stat.bad_xids,
		   xprt->stat.req_u,
		   xprt->stat.bklog_u);
	seq_printf(seq, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu ",
		   st.read_chunk_count,
		   st.write_chunk_count,
		   st.reply_chunk_count,
		   st.total_rdma_request,
		   st.total_rdma_reply,
		   st.pullup_copy_count,
		   st.fixup_copy_count,
		   st.hardway_register_count,
		   st.failed_marshal_count,
		   st.bad_reply_count,
		   st.nomsg_call_count);
	seq_printf(seq, "%llu %llu %llu %llu %llu %lu\n",
		   st.mrs_recycled,
		   st.mrs_orphaned,
		   st.mrs_allocated,
		   st.local_inv_needed,
		   st.empty_sendctx_q,
		   0LU); /* was reply_waits_for_send; column preserved */
}

static void rpcrdma_shim_inject_disconnect(struct rpc_xprt *xprt)
{
	rpcrdma_shim_xprt_ops->inject_disconnect(rpcrdma_shim_xprt(xprt)->priv);
}

#if IS_ENABLED(CONFIG_SUNRPC_BACKCHANNEL)
/*
 * The backchannel (RFC 8167), as net/sunrpc/xprtrdma/backchannel.c: the ops forward to Rust
 * (rust/client/backchannel.rs), which keeps a pool of backward requests, recognises backward
 * Calls among the Receives, lends each with its Receive to the callback service, sends the
 * Reply inline, and re-posts the Receive when sunrpc frees the request.
 */

/**
 * struct rpcrdma_shim_bc_rqst - a backward request
 * @rqst: what sunrpc sees; RPC_BC_PA_IN_USE stays set, so xprt_release() hands it back with
 *	bc_free_rqst
 * @page: the Reply buffer (rq_snd_buf): a page, as svcxdr_init_encode() encodes into one
 * @hold: what Rust lent with it, until bc_free_rqst
 */
struct rpcrdma_shim_bc_rqst {
	struct rpc_rqst rqst;
	void *page;
	void *hold;
};

static struct rpcrdma_shim_bc_rqst *rpcrdma_shim_bc_rqst(struct rpc_rqst *rqst)
{
	return container_of(rqst, struct rpcrdma_shim_bc_rqst, rqst);
}

static int rpcrdma_shim_bc_setup(struct rpc_xprt *xprt, unsigned int reqs)
{
	return rpcrdma_shim_xprt_ops->bc_setup(rpcrdma_shim_xprt(xprt)->priv, xprt, reqs);
}

static size_t rpcrdma_shim_bc_maxpayload(struct rpc_xprt *xprt)
{
	return rpcrdma_shim_xprt_ops->bc_maxpayload(rpcrdma_shim_xprt(xprt)->priv);
}

static unsigned int rpcrdma_shim_bc_num_slots(struct rpc_xprt *xprt)
{
	return rpcrdma_shim_xprt_ops->bc_num_slots(rpcrdma_shim_xprt(xprt)->priv);
}

/* As xprt_rdma_bc_free_rqst(): drops the reference xprt_enqueue_bc_request() took. */
static void rpcrdma_shim_bc_free_rqst(struct rpc_rqst *rqst)
{
	struct rpcrdma_shim_bc_rqst *bc = rpcrdma_shim_bc_rqst(rqst);
	struct rpc_xprt *xprt = rqst->rq_xprt;
	void *hold = bc->hold;

	bc->hold = NULL;
	/* @rqst may be reused or freed once Rust has it back. */
	rpcrdma_shim_xprt_ops->bc_free_rqst(rpcrdma_shim_xprt(xprt)->priv, rqst, hold);
	xprt_put(xprt);
}

static void rpcrdma_shim_bc_destroy(struct rpc_xprt *xprt, unsigned int reqs)
{
	rpcrdma_shim_xprt_ops->bc_destroy(rpcrdma_shim_xprt(xprt)->priv, reqs);
}

/* As xprt_rdma_bc_send_reply(); the transport is locked (XPRT_LOCKED). */
static int rpcrdma_shim_bc_send_reply(struct rpc_rqst *rqst)
{
	struct rpc_xprt *xprt = rqst->rq_xprt;
	int rc;

	if (!xprt_connected(xprt))
		return -ENOTCONN;
	if (!xprt_request_get_cong(xprt, rqst))
		return -EBADSLT;
	rc = rpcrdma_shim_xprt_ops->bc_send_reply(rpcrdma_shim_xprt(xprt)->priv, rqst,
						   rpcrdma_shim_bc_rqst(rqst)->hold);
	if (rc == -ENOTCONN) {
		rpcrdma_shim_close(xprt);
		return rc;
	}
	if (!rc)
		rqst->rq_xmit_bytes_sent += rqst->rq_snd_buf.len;
	return rc;
}

struct rpc_rqst *rpcrdma_shim_bc_rqst_alloc(struct rpc_xprt *xprt, bool atomic)
{
	gfp_t gfp = atomic ? GFP_ATOMIC | __GFP_NOWARN : GFP_KERNEL;
	struct rpcrdma_shim_bc_rqst *bc = kzalloc(sizeof(*bc), gfp);

	if (!bc)
		return NULL;
	bc->page = (void *)__get_free_page(gfp);
	if (!bc->page) {
		kfree(bc);
		return NULL;
	}
	bc->rqst.rq_xprt = xprt;
	__set_bit(RPC_BC_PA_IN_USE, &bc->rqst.rq_bc_pa_state);
	INIT_LIST_HEAD(&bc->rqst.rq_bc_pa_list);
	xdr_buf_init(&bc->rqst.rq_snd_buf, bc->page, PAGE_SIZE);
	return &bc->rqst;
}

void rpcrdma_shim_bc_rqst_free(struct rpc_rqst *rqst)
{
	struct rpcrdma_shim_bc_rqst *bc = rpcrdma_shim_bc_rqst(rqst);

	free_page((unsigned long)bc->page);
	kfree(bc);
}

/* As rpcrdma_bc_receive_call(). */
void rpcrdma_shim_bc_rqst_enqueue(struct rpc_rqst *rqst, u32 xid, void *call, u32 len,
				  void *hold)
{
	struct rpcrdma_shim_bc_rqst *bc = rpcrdma_shim_bc_rqst(rqst);
	struct xdr_buf *buf = &rqst->rq_rcv_buf;

	bc->hold = hold;
	rqst->rq_reply_bytes_recvd = 0;
	rqst->rq_xid = cpu_to_be32(xid);
	rqst->rq_private_buf.len = len;
	memset(buf, 0, sizeof(*buf));
	buf->head[0].iov_base = call;
	buf->head[0].iov_len = len;
	buf->len = len;
	/* The last Reply left its layout here (svc_process_bc() copies rq_res over it). */
	xdr_buf_init(&rqst->rq_snd_buf, bc->page, PAGE_SIZE);
	/* Balances the decrement of svc_process_bc() (C's transport leaves it unbalanced). */
	atomic_inc(&rqst->rq_xprt->bc_slot_count);
	xprt_enqueue_bc_request(rqst);
}

bool rpcrdma_shim_xprt_has_bc_serv(struct rpc_xprt *xprt)
{
	return READ_ONCE(xprt->bc_serv) != NULL;
}
#else
struct rpc_rqst *rpcrdma_shim_bc_rqst_alloc(struct rpc_xprt *xprt, bool atomic)
{
	return NULL;
}

void rpcrdma_shim_bc_rqst_free(struct rpc_rqst *rqst)
{
}

void rpcrdma_shim_bc_rqst_enqueue(struct rpc_rqst *rqst, u32 xid, void *call, u32 len,
				  void *hold)
{
}

bool rpcrdma_shim_xprt_has_bc_serv(struct rpc_xprt *xprt)
{
	return false;
}
#endif

static const struct rpc_xprt_ops rpcrdma_shim_xprt_procs = {
	.reserve_xprt		= xprt_reserve_xprt_cong,
	.release_xprt		= xprt_release_xprt_cong,
	.alloc_slot		= xprt_alloc_slot,
	.free_slot		= xprt_free_slot,
	.release_request	= xprt_release_rqst_cong,
	.wait_for_reply_request	= xprt_wait_for_reply_request_def,
	.timer			= rpcrdma_shim_timer,
	.rpcbind		= rpcb_getport_async,
	.set_port		= rpcrdma_shim_set_port,
	.connect		= rpcrdma_shim_connect,
	.buf_alloc		= rpcrdma_shim_buf_alloc,
	.buf_free		= rpcrdma_shim_buf_free,
	.send_request		= rpcrdma_shim_send_request,
	.close			= rpcrdma_shim_close,
	.destroy		= rpcrdma_shim_destroy,
	.set_connect_timeout	= rpcrdma_shim_set_connect_timeout,
	.print_stats		= rpcrdma_shim_print_stats,
	.inject_disconnect	= rpcrdma_shim_inject_disconnect,
#if IS_ENABLED(CONFIG_SUNRPC_BACKCHANNEL)
	.bc_setup		= rpcrdma_shim_bc_setup,
	.bc_maxpayload		= rpcrdma_shim_bc_maxpayload,
	.bc_num_slots		= rpcrdma_shim_bc_num_slots,
	.bc_free_rqst		= rpcrdma_shim_bc_free_rqst,
	.bc_destroy		= rpcrdma_shim_bc_destroy,
#endif
};

/* ---- what Rust calls ---- */

/*
 * As xprt_setup_rdma(), with the values Rust chose. On success the transport owns @priv (given
 * back to the destroy callback) and a module reference; on failure the caller keeps @priv.
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
	sx->min_connect_timeout = p->min_connect_timeout;
	xprt->resvport = 0;
	xprt->ops = &rpcrdma_shim_xprt_procs;

	/* xprt->addr holds the server's TCP address, for side protocols that peek at it. */
	xprt->prot = IPPROTO_TCP;
	xprt->xprt_class = &rpcrdma_shim_xprt_class;
	xprt->addrlen = p->addrlen;
	memcpy(&xprt->addr, p->addr, p->addrlen);
	xprt_set_bound(xprt);
	/* The address strings are filled by the Rust setup callback once this returns. */

	xprt->max_payload = p->max_payload;
	sx->priv = priv;
	return xprt;
}

/*
 * The end of a connect attempt started by the connect callback, as the tail of
 * xprt_rdma_connect_worker(). @xprt may be destroyed once this returns.
 */
void rpcrdma_shim_xprt_connect_done(struct rpc_xprt *xprt, int rc)
{
	struct rpcrdma_shim_xprt *sx = rpcrdma_shim_xprt(xprt);

	xprt_clear_connecting(xprt);
	if (!rc) {
		xprt->connect_cookie++;
		xprt->stat.connect_count++;
		xprt->stat.connect_time += (long)jiffies - xprt->stat.connect_start;
		xprt_set_connected(xprt);
		rc = -EAGAIN;
	}
	xprt_unlock_connect(xprt, sx);
	xprt_wake_pending_tasks(xprt, rc);
}

void rpcrdma_shim_xprt_force_disconnect(struct rpc_xprt *xprt)
{
	xprt_force_disconnect(xprt);
}

/*
 * A send found no free MR or Send buffer: the next transmit waits (XPRT_WRITE_SPACE) until
 * rpcrdma_shim_xprt_write_space(), as rpcrdma_mr_prepare() and rpcrdma_sendctx_get_locked().
 */
void rpcrdma_shim_xprt_wait_for_buffer_space(struct rpc_xprt *xprt)
{
	xprt_wait_for_buffer_space(xprt);
}

/* MRs or Send buffers came back: wake the transmit waiting for them. Never sleeps. */
bool rpcrdma_shim_xprt_write_space(struct rpc_xprt *xprt)
{
	return xprt_write_space(xprt);
}

void rpcrdma_shim_xprt_close(struct rpc_xprt *xprt)
{
	rpcrdma_shim_close(xprt);
}

bool rpcrdma_shim_xprt_connected(struct rpc_xprt *xprt)
{
	return xprt_connected(xprt);
}

bool rpcrdma_shim_xprt_get_cong(struct rpc_xprt *xprt, struct rpc_rqst *rqst)
{
	return xprt_request_get_cong(xprt, rqst);
}

u32 rpcrdma_shim_xprt_connect_cookie(const struct rpc_xprt *xprt)
{
	return xprt->connect_cookie;
}

u32 rpcrdma_shim_rqst_connect_cookie(const struct rpc_rqst *rqst)
{
	return rqst->rq_connect_cookie;
}

void rpcrdma_shim_rqst_xmit_start(struct rpc_rqst *rqst)
{
	rqst->rq_xtime = ktime_get();
}

void rpcrdma_shim_rqst_xmit_done(struct rpc_rqst *rqst)
{
	rqst->rq_xmit_bytes_sent += rqst->rq_snd_buf.len;
}

bool rpcrdma_shim_rqst_reply_expected(struct rpc_rqst *rqst)
{
	return rpc_reply_expected(rqst->rq_task);
}

u32 rpcrdma_shim_xprt_max_reqs(const struct rpc_xprt *xprt)
{
	return xprt->max_reqs;
}

struct net *rpcrdma_shim_xprt_net(struct rpc_xprt *xprt)
{
	return xprt->xprt_net;
}

const struct sockaddr *rpcrdma_shim_xprt_addr(const struct rpc_xprt *xprt)
{
	return (const struct sockaddr *)&xprt->addr;
}

/* ---- the class ---- */

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
	/* As xprtiod: connect workers may run in memory reclaim (swap over NFS). */
	rpcrdma_shim_xprt_wq = alloc_workqueue("rpcrdma_rs_connect", WQ_UNBOUND | WQ_MEM_RECLAIM,
					       0);
	if (!rpcrdma_shim_xprt_wq)
		return -ENOMEM;
	rpcrdma_shim_xprt_ops = ops;
	rc = xprt_register_transport(&rpcrdma_shim_xprt_class);
	if (rc) {
		rpcrdma_shim_xprt_ops = NULL;
		destroy_workqueue(rpcrdma_shim_xprt_wq);
		rpcrdma_shim_xprt_wq = NULL;
	}
	return rc;
}

void rpcrdma_shim_xprt_unregister(void)
{
	if (!rpcrdma_shim_xprt_ops)
		return;
	xprt_unregister_transport(&rpcrdma_shim_xprt_class);
	rpcrdma_shim_xprt_ops = NULL;
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

const struct sockaddr *rpcrdma_shim_xprt_create_dstaddr(const struct xprt_create *args,
							size_t *len)
{
	*len = args->addrlen;
	return args->dstaddr;
}
