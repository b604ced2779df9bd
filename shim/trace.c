// SPDX-License-Identifier: GPL-2.0
/*
 * The tracepoints of rpcrdma_rs (include/rpcrdma_trace.h): defined here, with the
 * rust_do_trace_* functions through which the Rust side raises them once it has checked their
 * static key (rust/trace.rs), and the helpers their TP_fast_assign uses.
 */

#include <linux/in.h>
#include <linux/in6.h>
#include <linux/socket.h>
#include <linux/sunrpc/clnt.h>
#include <linux/sunrpc/sched.h>
#include <linux/sunrpc/xprt.h>

#include "rpcrdma_shim.h"

#define CREATE_TRACE_POINTS
#define CREATE_RUST_TRACE_POINTS
#include "rpcrdma_trace.h"

void rpcrdma_rs_trace_peer(const struct rpcrdma_shim_addr *peer, char *addr, char *port)
{
	switch (peer->family) {
	case AF_INET:
		snprintf(addr, RPCRDMA_RS_ADDRLEN, "%pI4", peer->addr);
		break;
	case AF_INET6:
		snprintf(addr, RPCRDMA_RS_ADDRLEN, "%pI6c", peer->addr);
		break;
	default:
		strscpy(addr, "unknown", RPCRDMA_RS_ADDRLEN);
	}
	snprintf(port, RPCRDMA_RS_PORTLEN, "%u", peer->port);
}

void rpcrdma_rs_trace_addrport(const struct rpcrdma_shim_addr *peer, char *addr)
{
	switch (peer->family) {
	case AF_INET:
		snprintf(addr, RPCRDMA_RS_ADDRLEN, "%pI4:%u", peer->addr, peer->port);
		break;
	case AF_INET6:
		snprintf(addr, RPCRDMA_RS_ADDRLEN, "[%pI6c]:%u", peer->addr, peer->port);
		break;
	default:
		strscpy(addr, "unknown", RPCRDMA_RS_ADDRLEN);
	}
}

void rpcrdma_rs_trace_task(const struct rpc_rqst *rqst, unsigned int *task_id,
			   unsigned int *client_id)
{
	const struct rpc_task *task = rqst ? rqst->rq_task : NULL;

	*task_id = task ? task->tk_pid : 0;
	*client_id = task && task->tk_client ? task->tk_client->cl_clid : -1;
}
