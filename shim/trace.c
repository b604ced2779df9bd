// SPDX-License-Identifier: GPL-2.0
/*
 * The tracepoints of rpcrdma_rs (include/rpcrdma_trace.h): defined here, with the
 * rust_do_trace_* functions through which the Rust side raises them once it has checked their
 * static key (rust/trace.rs), and the helpers their TP_fast_assign uses.
 */

#include <linux/in.h>
#include <linux/in6.h>
#include <linux/socket.h>
#include <linux/sunrpc/addr.h>
#include <linux/sunrpc/clnt.h>
#include <linux/sunrpc/sched.h>
#include <linux/sunrpc/xprt.h>

#include "rpcrdma_shim.h"

#define CREATE_TRACE_POINTS
#define CREATE_RUST_TRACE_POINTS
#include "rpcrdma_trace.h"

void rpcrdma_rs_trace_peer(const struct sockaddr *peer, char *addr, char *port)
{
	if (!peer) {
		strscpy(addr, "unknown", RPCRDMA_RS_ADDRLEN);
		strscpy(port, "0", RPCRDMA_RS_PORTLEN);
		return;
	}
	snprintf(addr, RPCRDMA_RS_ADDRLEN, "%pISc", peer);
	snprintf(port, RPCRDMA_RS_PORTLEN, "%u", rpc_get_port(peer));
}

void rpcrdma_rs_trace_addrport(const struct sockaddr *peer, char *addr)
{
	if (!peer) {
		strscpy(addr, "unknown", RPCRDMA_RS_ADDRLEN);
		return;
	}
	snprintf(addr, RPCRDMA_RS_ADDRLEN, "%pISpc", peer);
}

void rpcrdma_rs_trace_task(const struct rpc_rqst *rqst, unsigned int *task_id,
			   unsigned int *client_id)
{
	const struct rpc_task *task = rqst ? rqst->rq_task : NULL;

	*task_id = task ? task->tk_pid : 0;
	*client_id = task && task->tk_client ? task->tk_client->cl_clid : -1;
}
