/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracepoints of rpcrdma_rs, in the "rpcrdma" system of the C module (rpcrdma.ko, see
 * include/trace/events/rpcrdma.h): the same event names and, where a script reads them, the
 * same field names, so that trace-cmd and bpftrace habits carry over. The two modules never
 * load together, so the names cannot clash.
 *
 * Differences from the C events (our objects are not the C module's):
 *  - peer=[addr]:port fields are fixed char arrays filled from the peer's address (the C events
 *    copy the rpc_xprt's address strings into __string fields); the text is the same;
 *  - completion_id (cid=) is 0: completions are not numbered; cq_id is the CQ's resource id,
 *    as in C;
 *  - xprtrdma_reply_*_err carry the xid, version and procedure of the reply header (C reads
 *    them from its struct rpcrdma_rep), 0 for a reply too short to have them;
 *  - mr.id is the ib_mr's resource id (as in C), 0 where no MR exists (a failed allocation).
 *
 * Events are raised from Rust (rust/trace.rs, through the rust_do_trace_* functions that
 * CREATE_RUST_TRACE_POINTS makes in shim/trace.c).
 * Each TP_PROTO takes plain values or rpcrdma_shim_* structs, so that bindgen can declare it.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM rpcrdma

#if !defined(_RPCRDMA_RS_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _RPCRDMA_RS_TRACE_H

#include <linux/tracepoint.h>

/*
 * Not for bindgen: it only needs the declarations, whose types are the shim's, and with these
 * headers it would see the complete kernel structures the shim API keeps opaque.
 */
#ifndef __BINDGEN__
#include <rdma/ib_cm.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include <trace/misc/rdma.h>
#endif

#include "rpcrdma_shim.h"

/* Room for "[<IPv6 address>]:<port>" and for "<IPv6 address>" (INET6_ADDRSTRLEN + 10). */
#define RPCRDMA_RS_ADDRLEN 56
#define RPCRDMA_RS_PORTLEN 8

struct rpc_rqst;

/* Helpers of TP_fast_assign (shim/trace.c). */
/*
 * @peer's address into @addr (as RPC_DISPLAY_ADDR) and its port into @port (decimal); a NULL
 * @peer (unknown) as "unknown" and "0".
 */
void rpcrdma_rs_trace_peer(const struct sockaddr *peer, char *addr, char *port);
/* @peer as "%pISpc" (xpt_remotebuf) into @addr; a NULL @peer as "unknown". */
void rpcrdma_rs_trace_addrport(const struct sockaddr *peer, char *addr);
/* The task id and client id of @rqst's task (0 and -1 if it has none). */
void rpcrdma_rs_trace_task(const struct rpc_rqst *rqst, unsigned int *task_id,
			   unsigned int *client_id);

/**
 ** Event classes
 **/

DECLARE_EVENT_CLASS(rpcrdma_simple_cid_class,
	TP_PROTO(
		const struct rpcrdma_shim_wc *wc
	),

	TP_ARGS(wc),

	TP_STRUCT__entry(
		__field(u32, cq_id)
		__field(int, completion_id)
	),

	TP_fast_assign(
		__entry->cq_id = wc->cq_id;
		__entry->completion_id = 0;
	),

	TP_printk("cq.id=%d cid=%d",
		__entry->cq_id, __entry->completion_id
	)
);

#define DEFINE_SIMPLE_CID_EVENT(name)					\
		DEFINE_EVENT(rpcrdma_simple_cid_class, name,		\
				TP_PROTO(				\
					const struct rpcrdma_shim_wc *wc \
				),					\
				TP_ARGS(wc))

/* Completions of all kinds: status and vendor_err (0 on success), as rpcrdma_completion_class. */
DECLARE_EVENT_CLASS(rpcrdma_completion_class,
	TP_PROTO(
		const struct rpcrdma_shim_wc *wc
	),

	TP_ARGS(wc),

	TP_STRUCT__entry(
		__field(u32, cq_id)
		__field(int, completion_id)
		__field(unsigned long, status)
		__field(unsigned int, vendor_err)
	),

	TP_fast_assign(
		__entry->cq_id = wc->cq_id;
		__entry->completion_id = 0;
		__entry->status = wc->status;
		__entry->vendor_err = wc->status ? wc->vendor_err : 0;
	),

	TP_printk("cq.id=%u cid=%d status=%s (%lu/0x%x)",
		__entry->cq_id, __entry->completion_id,
		rdma_show_wc_status(__entry->status),
		__entry->status, __entry->vendor_err
	)
);

#define DEFINE_COMPLETION_EVENT(name)					\
		DEFINE_EVENT(rpcrdma_completion_class, name,		\
				TP_PROTO(				\
					const struct rpcrdma_shim_wc *wc \
				),					\
				TP_ARGS(wc))

DECLARE_EVENT_CLASS(rpcrdma_mr_completion_class,
	TP_PROTO(
		const struct rpcrdma_shim_wc *wc
	),

	TP_ARGS(wc),

	TP_STRUCT__entry(
		__field(u32, cq_id)
		__field(int, completion_id)
		__field(unsigned long, status)
		__field(unsigned int, vendor_err)
	),

	TP_fast_assign(
		__entry->cq_id = wc->cq_id;
		__entry->completion_id = 0;
		__entry->status = wc->status;
		__entry->vendor_err = wc->status ? wc->vendor_err : 0;
	),

	TP_printk("cq.id=%u mr.id=%d status=%s (%lu/0x%x)",
		__entry->cq_id, __entry->completion_id,
		rdma_show_wc_status(__entry->status),
		__entry->status, __entry->vendor_err
	)
);

#define DEFINE_MR_COMPLETION_EVENT(name)				\
		DEFINE_EVENT(rpcrdma_mr_completion_class, name,		\
				TP_PROTO(				\
					const struct rpcrdma_shim_wc *wc \
				),					\
				TP_ARGS(wc))

DECLARE_EVENT_CLASS(rpcrdma_receive_completion_class,
	TP_PROTO(
		const struct rpcrdma_shim_wc *wc
	),

	TP_ARGS(wc),

	TP_STRUCT__entry(
		__field(u32, cq_id)
		__field(int, completion_id)
		__field(u32, received)
		__field(unsigned long, status)
		__field(unsigned int, vendor_err)
	),

	TP_fast_assign(
		__entry->cq_id = wc->cq_id;
		__entry->completion_id = 0;
		__entry->status = wc->status;
		__entry->received = wc->status ? 0 : wc->byte_len;
		__entry->vendor_err = wc->status ? wc->vendor_err : 0;
	),

	TP_printk("cq.id=%u cid=%d status=%s (%lu/0x%x) received=%u",
		__entry->cq_id, __entry->completion_id,
		rdma_show_wc_status(__entry->status),
		__entry->status, __entry->vendor_err,
		__entry->received
	)
);

#define DEFINE_RECEIVE_COMPLETION_EVENT(name)				\
		DEFINE_EVENT(rpcrdma_receive_completion_class, name,	\
				TP_PROTO(				\
					const struct rpcrdma_shim_wc *wc \
				),					\
				TP_ARGS(wc))

DECLARE_EVENT_CLASS(rpcrdma_receive_success_class,
	TP_PROTO(
		const struct rpcrdma_shim_wc *wc
	),

	TP_ARGS(wc),

	TP_STRUCT__entry(
		__field(u32, cq_id)
		__field(int, completion_id)
		__field(u32, received)
	),

	TP_fast_assign(
		__entry->cq_id = wc->cq_id;
		__entry->completion_id = 0;
		__entry->received = wc->byte_len;
	),

	TP_printk("cq.id=%u cid=%d received=%u",
		__entry->cq_id, __entry->completion_id,
		__entry->received
	)
);

#define DEFINE_RECEIVE_SUCCESS_EVENT(name)				\
		DEFINE_EVENT(rpcrdma_receive_success_class, name,	\
				TP_PROTO(				\
					const struct rpcrdma_shim_wc *wc \
				),					\
				TP_ARGS(wc))

/* Flushed or failed completions: status and vendor_err always recorded. */
DECLARE_EVENT_CLASS(rpcrdma_flush_class,
	TP_PROTO(
		const struct rpcrdma_shim_wc *wc
	),

	TP_ARGS(wc),

	TP_STRUCT__entry(
		__field(u32, cq_id)
		__field(int, completion_id)
		__field(unsigned long, status)
		__field(unsigned int, vendor_err)
	),

	TP_fast_assign(
		__entry->cq_id = wc->cq_id;
		__entry->completion_id = 0;
		__entry->status = wc->status;
		__entry->vendor_err = wc->vendor_err;
	),

	TP_printk("cq.id=%u cid=%d status=%s (%lu/0x%x)",
		__entry->cq_id, __entry->completion_id,
		rdma_show_wc_status(__entry->status),
		__entry->status, __entry->vendor_err
	)
);

#define DEFINE_FLUSH_EVENT(name)					\
		DEFINE_EVENT(rpcrdma_flush_class, name,			\
				TP_PROTO(				\
					const struct rpcrdma_shim_wc *wc \
				),					\
				TP_ARGS(wc))

/* A reply the client dropped or could not use. */
DECLARE_EVENT_CLASS(xprtrdma_reply_class,
	TP_PROTO(
		const struct sockaddr *peer,
		u32 xid,
		u32 version,
		u32 proc
	),

	TP_ARGS(peer, xid, version, proc),

	TP_STRUCT__entry(
		__field(u32, xid)
		__field(u32, version)
		__field(u32, proc)
		__array(char, addr, RPCRDMA_RS_ADDRLEN)
		__array(char, port, RPCRDMA_RS_PORTLEN)
	),

	TP_fast_assign(
		__entry->xid = xid;
		__entry->version = version;
		__entry->proc = proc;
		rpcrdma_rs_trace_peer(peer, __entry->addr, __entry->port);
	),

	TP_printk("peer=[%s]:%s xid=0x%08x version=%u proc=%u",
		__entry->addr, __entry->port,
		__entry->xid, __entry->version, __entry->proc
	)
);

#define DEFINE_REPLY_EVENT(name)					\
		DEFINE_EVENT(xprtrdma_reply_class,			\
				xprtrdma_reply_##name##_err,		\
				TP_PROTO(				\
					const struct sockaddr *peer, \
					u32 xid,			\
					u32 version,			\
					u32 proc			\
				),					\
				TP_ARGS(peer, xid, version, proc))

/* A backward Call (RFC 8167) handed to the callback service, or its Reply sent. */
DECLARE_EVENT_CLASS(xprtrdma_callback_class,
	TP_PROTO(
		const struct sockaddr *peer,
		u32 xid
	),

	TP_ARGS(peer, xid),

	TP_STRUCT__entry(
		__field(u32, xid)
		__array(char, addr, RPCRDMA_RS_ADDRLEN)
		__array(char, port, RPCRDMA_RS_PORTLEN)
	),

	TP_fast_assign(
		__entry->xid = xid;
		rpcrdma_rs_trace_peer(peer, __entry->addr, __entry->port);
	),

	TP_printk("peer=[%s]:%s xid=0x%08x",
		__entry->addr, __entry->port, __entry->xid
	)
);

#define DEFINE_CALLBACK_EVENT(name)					\
		DEFINE_EVENT(xprtrdma_callback_class,			\
				xprtrdma_cb_##name,			\
				TP_PROTO(				\
					const struct sockaddr *peer, \
					u32 xid				\
				),					\
				TP_ARGS(peer, xid))

DECLARE_EVENT_CLASS(xprtrdma_rxprt,
	TP_PROTO(
		const struct sockaddr *peer
	),

	TP_ARGS(peer),

	TP_STRUCT__entry(
		__array(char, addr, RPCRDMA_RS_ADDRLEN)
		__array(char, port, RPCRDMA_RS_PORTLEN)
	),

	TP_fast_assign(
		rpcrdma_rs_trace_peer(peer, __entry->addr, __entry->port);
	),

	TP_printk("peer=[%s]:%s",
		__entry->addr, __entry->port
	)
);

#define DEFINE_RXPRT_EVENT(name)					\
		DEFINE_EVENT(xprtrdma_rxprt, name,			\
				TP_PROTO(				\
					const struct sockaddr *peer \
				),					\
				TP_ARGS(peer))

/*
 * rc: the errno sunrpc gets (0: connected); connect_status: 1 while connected, else the errno
 * the connection failed or ended with, as re_connect_status in C.
 */
DECLARE_EVENT_CLASS(xprtrdma_connect_class,
	TP_PROTO(
		const struct sockaddr *peer,
		int rc,
		int connect_status
	),

	TP_ARGS(peer, rc, connect_status),

	TP_STRUCT__entry(
		__field(int, rc)
		__field(int, connect_status)
		__array(char, addr, RPCRDMA_RS_ADDRLEN)
		__array(char, port, RPCRDMA_RS_PORTLEN)
	),

	TP_fast_assign(
		__entry->rc = rc;
		__entry->connect_status = connect_status;
		rpcrdma_rs_trace_peer(peer, __entry->addr, __entry->port);
	),

	TP_printk("peer=[%s]:%s rc=%d connection status=%d",
		__entry->addr, __entry->port,
		__entry->rc, __entry->connect_status
	)
);

#define DEFINE_CONN_EVENT(name)						\
		DEFINE_EVENT(xprtrdma_connect_class, xprtrdma_##name,	\
				TP_PROTO(				\
					const struct sockaddr *peer, \
					int rc,				\
					int connect_status		\
				),					\
				TP_ARGS(peer, rc, connect_status))

/* The task and client of an RPC request (rpc_rqst), 0 and -1 without them. */
#define RPCRDMA_RS_TASK_ASSIGN(rqst)						\
	rpcrdma_rs_trace_task(rqst, &__entry->task_id, &__entry->client_id)

#define RPCRDMA_RS_TASK_SPECIFIER "task:%08x@%08x"

/**
 ** Client: connection events
 **/

DEFINE_CONN_EVENT(connect);
DEFINE_CONN_EVENT(disconnect);

DEFINE_RXPRT_EVENT(xprtrdma_op_inject_dsc);

TRACE_EVENT(xprtrdma_op_connect,
	TP_PROTO(
		const struct sockaddr *peer,
		unsigned long delay
	),

	TP_ARGS(peer, delay),

	TP_STRUCT__entry(
		__field(unsigned long, delay)
		__array(char, addr, RPCRDMA_RS_ADDRLEN)
		__array(char, port, RPCRDMA_RS_PORTLEN)
	),

	TP_fast_assign(
		__entry->delay = delay;
		rpcrdma_rs_trace_peer(peer, __entry->addr, __entry->port);
	),

	TP_printk("peer=[%s]:%s delay=%lu",
		__entry->addr, __entry->port, __entry->delay
	)
);

/**
 ** Client: call events
 **/

TRACE_EVENT(xprtrdma_nomrs_err,
	TP_PROTO(
		const struct sockaddr *peer,
		const struct rpc_rqst *rqst
	),

	TP_ARGS(peer, rqst),

	TP_STRUCT__entry(
		__field(unsigned int, task_id)
		__field(unsigned int, client_id)
		__array(char, addr, RPCRDMA_RS_ADDRLEN)
		__array(char, port, RPCRDMA_RS_PORTLEN)
	),

	TP_fast_assign(
		RPCRDMA_RS_TASK_ASSIGN(rqst);
		rpcrdma_rs_trace_peer(peer, __entry->addr, __entry->port);
	),

	TP_printk(RPCRDMA_RS_TASK_SPECIFIER " peer=[%s]:%s",
		__entry->task_id, __entry->client_id,
		__entry->addr, __entry->port
	)
);

DECLARE_EVENT_CLASS(xprtrdma_rqst_ret_class,
	TP_PROTO(
		const struct rpc_rqst *rqst,
		u32 xid,
		int ret
	),

	TP_ARGS(rqst, xid, ret),

	TP_STRUCT__entry(
		__field(unsigned int, task_id)
		__field(unsigned int, client_id)
		__field(u32, xid)
		__field(int, ret)
	),

	TP_fast_assign(
		RPCRDMA_RS_TASK_ASSIGN(rqst);
		__entry->xid = xid;
		__entry->ret = ret;
	),

	TP_printk(RPCRDMA_RS_TASK_SPECIFIER " xid=0x%08x ret=%d",
		__entry->task_id, __entry->client_id, __entry->xid,
		__entry->ret
	)
);

DEFINE_EVENT(xprtrdma_rqst_ret_class, xprtrdma_marshal_failed,
	TP_PROTO(const struct rpc_rqst *rqst, u32 xid, int ret),
	TP_ARGS(rqst, xid, ret));

TRACE_EVENT(xprtrdma_post_send_err,
	TP_PROTO(
		const struct rpc_rqst *rqst,
		int rc
	),

	TP_ARGS(rqst, rc),

	TP_STRUCT__entry(
		__field(u32, cq_id)
		__field(unsigned int, task_id)
		__field(unsigned int, client_id)
		__field(int, rc)
	),

	TP_fast_assign(
		__entry->cq_id = 0;
		RPCRDMA_RS_TASK_ASSIGN(rqst);
		__entry->rc = rc;
	),

	TP_printk(RPCRDMA_RS_TASK_SPECIFIER " cq.id=%u rc=%d",
		__entry->task_id, __entry->client_id,
		__entry->cq_id, __entry->rc
	)
);

/**
 ** Client: completion events
 **/

DEFINE_RECEIVE_COMPLETION_EVENT(xprtrdma_wc_receive);

DEFINE_COMPLETION_EVENT(xprtrdma_wc_send);
DEFINE_MR_COMPLETION_EVENT(xprtrdma_wc_fastreg);
DEFINE_MR_COMPLETION_EVENT(xprtrdma_wc_li_wake);
DEFINE_MR_COMPLETION_EVENT(xprtrdma_wc_li_done);

/**
 ** Client: memory registration (rust/rdma/mr.rs)
 **/

TRACE_EVENT(xprtrdma_frwr_alloc,
	TP_PROTO(
		u32 mr_id,
		int rc
	),

	TP_ARGS(mr_id, rc),

	TP_STRUCT__entry(
		__field(u32, mr_id)
		__field(int, rc)
	),

	TP_fast_assign(
		__entry->mr_id = mr_id;
		__entry->rc = rc;
	),

	TP_printk("mr.id=%u: rc=%d",
		__entry->mr_id, __entry->rc
	)
);

TRACE_EVENT(xprtrdma_frwr_dereg,
	TP_PROTO(
		u32 mr_id,
		int nents,
		u32 handle,
		u32 length,
		u64 offset,
		u32 dir,
		int rc
	),

	TP_ARGS(mr_id, nents, handle, length, offset, dir, rc),

	TP_STRUCT__entry(
		__field(u32, mr_id)
		__field(int, nents)
		__field(u32, handle)
		__field(u32, length)
		__field(u64, offset)
		__field(u32, dir)
		__field(int, rc)
	),

	TP_fast_assign(
		__entry->mr_id  = mr_id;
		__entry->nents  = nents;
		__entry->handle = handle;
		__entry->length = length;
		__entry->offset = offset;
		__entry->dir    = dir;
		__entry->rc	= rc;
	),

	TP_printk("mr.id=%u nents=%d %u@0x%016llx:0x%08x (dir %u): rc=%d",
		__entry->mr_id, __entry->nents, __entry->length,
		(unsigned long long)__entry->offset, __entry->handle,
		__entry->dir, __entry->rc
	)
);

TRACE_EVENT(xprtrdma_frwr_sgerr,
	TP_PROTO(
		u32 mr_id,
		u64 addr,
		u32 dir,
		int sg_nents
	),

	TP_ARGS(mr_id, addr, dir, sg_nents),

	TP_STRUCT__entry(
		__field(u32, mr_id)
		__field(u64, addr)
		__field(u32, dir)
		__field(int, nents)
	),

	TP_fast_assign(
		__entry->mr_id = mr_id;
		__entry->addr = addr;
		__entry->dir = dir;
		__entry->nents = sg_nents;
	),

	TP_printk("mr.id=%u DMA addr=0x%llx (dir %u) sg_nents=%d",
		__entry->mr_id, __entry->addr, __entry->dir,
		__entry->nents
	)
);

TRACE_EVENT(xprtrdma_frwr_maperr,
	TP_PROTO(
		u32 mr_id,
		u64 addr,
		u32 dir,
		int num_mapped,
		int nents
	),

	TP_ARGS(mr_id, addr, dir, num_mapped, nents),

	TP_STRUCT__entry(
		__field(u32, mr_id)
		__field(u64, addr)
		__field(u32, dir)
		__field(int, num_mapped)
		__field(int, nents)
	),

	TP_fast_assign(
		__entry->mr_id = mr_id;
		__entry->addr = addr;
		__entry->dir = dir;
		__entry->num_mapped = num_mapped;
		__entry->nents = nents;
	),

	TP_printk("mr.id=%u DMA addr=0x%llx (dir %u) nents=%d of %d",
		__entry->mr_id, __entry->addr, __entry->dir,
		__entry->num_mapped, __entry->nents
	)
);

/**
 ** Client: reply events
 **/

/* Every reply matched to a request, with the credits the server granted (clamped). */
TRACE_EVENT(xprtrdma_reply,
	TP_PROTO(
		const struct rpc_rqst *rqst,
		u32 xid,
		unsigned int credits
	),

	TP_ARGS(rqst, xid, credits),

	TP_STRUCT__entry(
		__field(unsigned int, task_id)
		__field(unsigned int, client_id)
		__field(u32, xid)
		__field(unsigned int, credits)
	),

	TP_fast_assign(
		RPCRDMA_RS_TASK_ASSIGN(rqst);
		__entry->xid = xid;
		__entry->credits = credits;
	),

	TP_printk(RPCRDMA_RS_TASK_SPECIFIER " xid=0x%08x credits=%u",
		__entry->task_id, __entry->client_id, __entry->xid,
		__entry->credits
	)
);

DEFINE_REPLY_EVENT(vers);
DEFINE_REPLY_EVENT(rqst);
DEFINE_REPLY_EVENT(short);
DEFINE_REPLY_EVENT(hdr);

DEFINE_CALLBACK_EVENT(call);
DEFINE_CALLBACK_EVENT(reply);

TRACE_EVENT(xprtrdma_err_vers,
	TP_PROTO(
		const struct rpc_rqst *rqst,
		u32 xid,
		u32 min,
		u32 max
	),

	TP_ARGS(rqst, xid, min, max),

	TP_STRUCT__entry(
		__field(unsigned int, task_id)
		__field(unsigned int, client_id)
		__field(u32, xid)
		__field(u32, min)
		__field(u32, max)
	),

	TP_fast_assign(
		RPCRDMA_RS_TASK_ASSIGN(rqst);
		__entry->xid = xid;
		__entry->min = min;
		__entry->max = max;
	),

	TP_printk(RPCRDMA_RS_TASK_SPECIFIER " xid=0x%08x versions=[%u, %u]",
		__entry->task_id, __entry->client_id, __entry->xid,
		__entry->min, __entry->max
	)
);

TRACE_EVENT(xprtrdma_err_chunk,
	TP_PROTO(
		const struct rpc_rqst *rqst,
		u32 xid
	),

	TP_ARGS(rqst, xid),

	TP_STRUCT__entry(
		__field(unsigned int, task_id)
		__field(unsigned int, client_id)
		__field(u32, xid)
	),

	TP_fast_assign(
		RPCRDMA_RS_TASK_ASSIGN(rqst);
		__entry->xid = xid;
	),

	TP_printk(RPCRDMA_RS_TASK_SPECIFIER " xid=0x%08x",
		__entry->task_id, __entry->client_id, __entry->xid
	)
);

/**
 ** Server events
 **/

/* A connection that could not be accepted; addr is the client's. */
DECLARE_EVENT_CLASS(svcrdma_accept_class,
	TP_PROTO(
		const struct sockaddr *peer,
		long status
	),

	TP_ARGS(peer, status),

	TP_STRUCT__entry(
		__field(long, status)
		__array(char, addr, RPCRDMA_RS_ADDRLEN)
	),

	TP_fast_assign(
		__entry->status = status;
		rpcrdma_rs_trace_addrport(peer, __entry->addr);
	),

	TP_printk("addr=%s status=%ld",
		__entry->addr, __entry->status
	)
);

#define DEFINE_ACCEPT_EVENT(name)					\
		DEFINE_EVENT(svcrdma_accept_class, svcrdma_##name##_err, \
				TP_PROTO(				\
					const struct sockaddr *peer, \
					long status			\
				),					\
				TP_ARGS(peer, status))

DEFINE_ACCEPT_EVENT(pd);
DEFINE_ACCEPT_EVENT(qp);
DEFINE_ACCEPT_EVENT(fabric);
DEFINE_ACCEPT_EVENT(initdepth);
DEFINE_ACCEPT_EVENT(accept);

TRACE_EVENT(svcrdma_decode_short_err,
	TP_PROTO(
		u32 cq_id,
		unsigned int hdrlen
	),

	TP_ARGS(cq_id, hdrlen),

	TP_STRUCT__entry(
		__field(u32, cq_id)
		__field(int, completion_id)
		__field(unsigned int, hdrlen)
	),

	TP_fast_assign(
		__entry->cq_id = cq_id;
		__entry->completion_id = 0;
		__entry->hdrlen = hdrlen;
	),

	TP_printk("cq.id=%u cid=%d hdrlen=%u",
		__entry->cq_id, __entry->completion_id,
		__entry->hdrlen)
);

/* A Call whose transport header the server rejected, with its fixed fields. */
DECLARE_EVENT_CLASS(svcrdma_badreq_event,
	TP_PROTO(
		u32 cq_id,
		u32 xid,
		u32 vers,
		u32 credits,
		u32 proc
	),

	TP_ARGS(cq_id, xid, vers, credits, proc),

	TP_STRUCT__entry(
		__field(u32, cq_id)
		__field(int, completion_id)
		__field(u32, xid)
		__field(u32, vers)
		__field(u32, proc)
		__field(u32, credits)
	),

	TP_fast_assign(
		__entry->cq_id = cq_id;
		__entry->completion_id = 0;
		__entry->xid = xid;
		__entry->vers = vers;
		__entry->credits = credits;
		__entry->proc = proc;
	),

	TP_printk("cq.id=%u cid=%d xid=0x%08x vers=%u credits=%u proc=%u",
		__entry->cq_id, __entry->completion_id,
		__entry->xid, __entry->vers, __entry->credits, __entry->proc)
);

#define DEFINE_BADREQ_EVENT(name)					\
		DEFINE_EVENT(svcrdma_badreq_event,			\
			     svcrdma_decode_##name##_err,		\
				TP_PROTO(				\
					u32 cq_id,			\
					u32 xid,			\
					u32 vers,			\
					u32 credits,			\
					u32 proc			\
				),					\
				TP_ARGS(cq_id, xid, vers, credits, proc))

DEFINE_BADREQ_EVENT(badvers);
DEFINE_BADREQ_EVENT(drop);
DEFINE_BADREQ_EVENT(badproc);
DEFINE_BADREQ_EVENT(parse);

/* An RDMA_ERROR the server sends. */
DECLARE_EVENT_CLASS(svcrdma_error_event,
	TP_PROTO(
		u32 xid
	),

	TP_ARGS(xid),

	TP_STRUCT__entry(
		__field(u32, xid)
	),

	TP_fast_assign(
		__entry->xid = xid;
	),

	TP_printk("xid=0x%08x",
		__entry->xid
	)
);

#define DEFINE_ERROR_EVENT(name)					\
		DEFINE_EVENT(svcrdma_error_event, svcrdma_err_##name,	\
				TP_PROTO(				\
					u32 xid				\
				),					\
				TP_ARGS(xid))

DEFINE_ERROR_EVENT(vers);
DEFINE_ERROR_EVENT(chunk);

TRACE_EVENT(svcrdma_send_err,
	TP_PROTO(
		const struct sockaddr *peer,
		u32 xid,
		int status
	),

	TP_ARGS(peer, xid, status),

	TP_STRUCT__entry(
		__field(int, status)
		__field(u32, xid)
		__array(char, addr, RPCRDMA_RS_ADDRLEN)
	),

	TP_fast_assign(
		__entry->status = status;
		__entry->xid = xid;
		rpcrdma_rs_trace_addrport(peer, __entry->addr);
	),

	TP_printk("addr=%s xid=0x%08x status=%d", __entry->addr,
		__entry->xid, __entry->status
	)
);

DEFINE_SIMPLE_CID_EVENT(svcrdma_wc_send);
DEFINE_FLUSH_EVENT(svcrdma_wc_send_flush);
DEFINE_FLUSH_EVENT(svcrdma_wc_send_err);

DEFINE_RECEIVE_SUCCESS_EVENT(svcrdma_wc_recv);
DEFINE_FLUSH_EVENT(svcrdma_wc_recv_flush);
DEFINE_FLUSH_EVENT(svcrdma_wc_recv_err);

TRACE_EVENT(svcrdma_rq_post_err,
	TP_PROTO(
		const struct sockaddr *peer,
		int status
	),

	TP_ARGS(peer, status),

	TP_STRUCT__entry(
		__field(int, status)
		__array(char, addr, RPCRDMA_RS_ADDRLEN)
	),

	TP_fast_assign(
		__entry->status = status;
		rpcrdma_rs_trace_addrport(peer, __entry->addr);
	),

	TP_printk("addr=%s status=%d",
		__entry->addr, __entry->status
	)
);

DEFINE_SIMPLE_CID_EVENT(svcrdma_wc_read);
DEFINE_FLUSH_EVENT(svcrdma_wc_read_flush);
DEFINE_FLUSH_EVENT(svcrdma_wc_read_err);

DEFINE_SIMPLE_CID_EVENT(svcrdma_wc_write);
DEFINE_FLUSH_EVENT(svcrdma_wc_write_flush);
DEFINE_FLUSH_EVENT(svcrdma_wc_write_err);

/* The Send Queue: avail of depth entries free (sc_sq_avail in C). */
DECLARE_EVENT_CLASS(svcrdma_sendqueue_class,
	TP_PROTO(
		u32 cq_id,
		int avail,
		int depth
	),

	TP_ARGS(cq_id, avail, depth),

	TP_STRUCT__entry(
		__field(u32, cq_id)
		__field(int, completion_id)
		__field(int, avail)
		__field(int, depth)
	),

	TP_fast_assign(
		__entry->cq_id = cq_id;
		__entry->completion_id = 0;
		__entry->avail = avail;
		__entry->depth = depth;
	),

	TP_printk("cq.id=%u cid=%d sc_sq_avail=%d/%d",
		__entry->cq_id, __entry->completion_id,
		__entry->avail, __entry->depth
	)
);

#define DEFINE_SQ_EVENT(name)						\
		DEFINE_EVENT(svcrdma_sendqueue_class, name,		\
			TP_PROTO(					\
				u32 cq_id,				\
				int avail,				\
				int depth				\
			),						\
			TP_ARGS(cq_id, avail, depth)			\
		)

DEFINE_SQ_EVENT(svcrdma_sq_full);
DEFINE_SQ_EVENT(svcrdma_sq_retry);

TRACE_EVENT(svcrdma_sq_post_err,
	TP_PROTO(
		u32 cq_id,
		int avail,
		int depth,
		int status
	),

	TP_ARGS(cq_id, avail, depth, status),

	TP_STRUCT__entry(
		__field(u32, cq_id)
		__field(int, completion_id)
		__field(int, avail)
		__field(int, depth)
		__field(int, status)
	),

	TP_fast_assign(
		__entry->cq_id = cq_id;
		__entry->completion_id = 0;
		__entry->avail = avail;
		__entry->depth = depth;
		__entry->status = status;
	),

	TP_printk("cq.id=%u cid=%d sc_sq_avail=%d/%d status=%d",
		__entry->cq_id, __entry->completion_id,
		__entry->avail, __entry->depth, __entry->status
	)
);

#endif /* _RPCRDMA_RS_TRACE_H */

/* An out-of-tree header: define_trace.h finds it as "./rpcrdma_trace.h" (-I include/). */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE rpcrdma_trace

#include <trace/define_trace.h>
