// SPDX-License-Identifier: GPL-2.0
/*
 * The sysctls of the C rpcrdma module, with the same names, modes, defaults, ranges and
 * handlers, so that an administrator's settings carry over (the two modules never load
 * together, so the names cannot clash):
 *
 *  - /proc/sys/sunrpc/rdma_*: the client's tunables, xr_tunables_table in
 *    net/sunrpc/xprtrdma/transport.c, registered only with CONFIG_SUNRPC_DEBUG as there (the
 *    values keep their defaults otherwise);
 *  - /proc/sys/sunrpc/svc_rdma/: the server's, svcrdma_parm_table in svc_rdma.c, with the
 *    percpu statistics rdma_stat_{read,recv,write,sq_starve} (a read prints the sum, any
 *    write resets it to 0) and the five counters C keeps only for their names (always 0).
 *
 * proc_dointvec_minmax refuses a value out of range with EINVAL and leaves the value as it
 * was. The transports read a value once per new connection (the slot table size once per
 * new rpc_xprt, in rpcrdma_shim_xprt_create), so a change takes effect on the next one.
 */

#include <linux/percpu_counter.h>
#include <linux/sysctl.h>
#include <linux/sunrpc/svc_rdma.h>
#include <linux/sunrpc/xprtrdma.h>

#include "rpcrdma_shim.h"

/* An unsigned int sysctl, mode 0644, refused with EINVAL outside [*@min, *@max]. */
#define RPCRDMA_SHIM_UINT(name, var, min, max)					\
	{									\
		.procname	= name,						\
		.data		= &(var),					\
		.maxlen		= sizeof(unsigned int),				\
		.mode		= 0644,						\
		.proc_handler	= proc_dointvec_minmax,				\
		.extra1		= (min),					\
		.extra2		= (max),					\
	}

/* ---- client: /proc/sys/sunrpc ---- */

static unsigned int rpcrdma_shim_slot_table_entries = RPCRDMA_DEF_SLOT_TABLE;
static unsigned int rpcrdma_shim_max_inline_read = RPCRDMA_DEF_INLINE;
static unsigned int rpcrdma_shim_max_inline_write = RPCRDMA_DEF_INLINE;
/* Only FRWR exists (in C too): kept for the file's sake. */
static unsigned int rpcrdma_shim_memreg_strategy = RPCRDMA_FRWR;
/* Unused in C as well (no padding optimization is left to turn off). */
static int rpcrdma_shim_pad_optimize;

#if IS_ENABLED(CONFIG_SUNRPC_DEBUG)

static unsigned int rpcrdma_shim_min_slot_table_size = RPCRDMA_MIN_SLOT_TABLE;
static unsigned int rpcrdma_shim_max_slot_table_size = RPCRDMA_MAX_SLOT_TABLE;
static unsigned int rpcrdma_shim_min_inline_size = RPCRDMA_MIN_INLINE;
static unsigned int rpcrdma_shim_max_inline_size = RPCRDMA_MAX_INLINE;
static unsigned int rpcrdma_shim_max_padding = PAGE_SIZE;
static unsigned int rpcrdma_shim_min_memreg = RPCRDMA_BOUNCEBUFFERS;
static unsigned int rpcrdma_shim_max_memreg = RPCRDMA_LAST - 1;
/* rdma_inline_write_padding: a dummy in C since padding went away. */
static unsigned int rpcrdma_shim_dummy;

static struct ctl_table_header *rpcrdma_shim_client_table_header;

static const struct ctl_table rpcrdma_shim_client_table[] = {
	RPCRDMA_SHIM_UINT("rdma_slot_table_entries", rpcrdma_shim_slot_table_entries,
			  &rpcrdma_shim_min_slot_table_size, &rpcrdma_shim_max_slot_table_size),
	RPCRDMA_SHIM_UINT("rdma_max_inline_read", rpcrdma_shim_max_inline_read,
			  &rpcrdma_shim_min_inline_size, &rpcrdma_shim_max_inline_size),
	RPCRDMA_SHIM_UINT("rdma_max_inline_write", rpcrdma_shim_max_inline_write,
			  &rpcrdma_shim_min_inline_size, &rpcrdma_shim_max_inline_size),
	RPCRDMA_SHIM_UINT("rdma_inline_write_padding", rpcrdma_shim_dummy, SYSCTL_ZERO,
			  &rpcrdma_shim_max_padding),
	RPCRDMA_SHIM_UINT("rdma_memreg_strategy", rpcrdma_shim_memreg_strategy,
			  &rpcrdma_shim_min_memreg, &rpcrdma_shim_max_memreg),
	{
		.procname	= "rdma_pad_optimize",
		.data		= &rpcrdma_shim_pad_optimize,
		.maxlen		= sizeof(unsigned int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec,
	},
};

#endif /* CONFIG_SUNRPC_DEBUG */

/* ---- server: /proc/sys/sunrpc/svc_rdma ---- */

/*
 * max_outbound_read_requests (svcrdma_ord): accepted and kept, and, as in C since the
 * server took its initiator depth from the client's connect request, used by nothing.
 */
static unsigned int rpcrdma_shim_svc_ord = 16;
static unsigned int rpcrdma_shim_svc_min_ord = 1;
static unsigned int rpcrdma_shim_svc_max_ord = 255;
static unsigned int rpcrdma_shim_svc_max_requests = RPCRDMA_MAX_REQUESTS;
static unsigned int rpcrdma_shim_svc_min_max_requests = 4;
static unsigned int rpcrdma_shim_svc_max_max_requests = 16384;
static unsigned int rpcrdma_shim_svc_max_req_size = RPCRDMA_DEF_INLINE_THRESH;
static unsigned int rpcrdma_shim_svc_min_max_inline = RPCRDMA_DEF_INLINE_THRESH;
static unsigned int rpcrdma_shim_svc_max_max_inline = RPCRDMA_MAX_INLINE_THRESH;
/* rdma_stat_{rq_starve,rq_poll,rq_prod,sq_poll,sq_prod}: 0, and only 0 may be written. */
static unsigned int rpcrdma_shim_svc_stat_unused;
static unsigned int rpcrdma_shim_svc_zero;

/* Indexed by enum rpcrdma_shim_svc_stat. */
static struct percpu_counter rpcrdma_shim_svc_stats[RPCRDMA_SHIM_SVC_STAT_COUNT];
/* The counters are initialised (between register and unregister). */
static bool rpcrdma_shim_svc_stats_ready;

/*
 * svcrdma_counter_handler(): a read prints the counter's sum, a write of anything resets it.
 * (C formats into an 8-byte buffer, so that a counter of 1,000,000 or more reads as EFAULT;
 * the buffer here holds any value.)
 */
static int rpcrdma_shim_svc_counter_handler(const struct ctl_table *table, int dir,
					    void *buffer, size_t *lenp, loff_t *ppos)
{
	struct percpu_counter *stat = table->data;
	char tmp[24];
	int len;

	if (SYSCTL_USER_TO_KERN(dir)) {
		percpu_counter_set(stat, 0);
		return 0;
	}

	len = snprintf(tmp, sizeof(tmp), "%lld\n", percpu_counter_sum_positive(stat));
	if (len >= (int)sizeof(tmp))
		return -EFAULT;
	if (*ppos > len) {
		*lenp = 0;
		return 0;
	}
	len -= *ppos;
	if (len > *lenp)
		len = *lenp;
	if (len)
		memcpy(buffer, tmp + *ppos, len);
	*lenp = len;
	*ppos += len;
	return 0;
}

#define RPCRDMA_SHIM_SVC_COUNTER(name, stat)					\
	{									\
		.procname	= name,						\
		.data		= &rpcrdma_shim_svc_stats[stat],		\
		.maxlen		= sizeof(unsigned long long),			\
		.mode		= 0644,						\
		.proc_handler	= rpcrdma_shim_svc_counter_handler,		\
	}

#define RPCRDMA_SHIM_SVC_UNUSED(name)						\
	RPCRDMA_SHIM_UINT(name, rpcrdma_shim_svc_stat_unused, &rpcrdma_shim_svc_zero,	\
			  &rpcrdma_shim_svc_zero)

static struct ctl_table_header *rpcrdma_shim_svc_table_header;

static const struct ctl_table rpcrdma_shim_svc_table[] = {
	RPCRDMA_SHIM_UINT("max_requests", rpcrdma_shim_svc_max_requests,
			  &rpcrdma_shim_svc_min_max_requests, &rpcrdma_shim_svc_max_max_requests),
	RPCRDMA_SHIM_UINT("max_req_size", rpcrdma_shim_svc_max_req_size,
			  &rpcrdma_shim_svc_min_max_inline, &rpcrdma_shim_svc_max_max_inline),
	RPCRDMA_SHIM_UINT("max_outbound_read_requests", rpcrdma_shim_svc_ord,
			  &rpcrdma_shim_svc_min_ord, &rpcrdma_shim_svc_max_ord),
	RPCRDMA_SHIM_SVC_COUNTER("rdma_stat_read", RPCRDMA_SHIM_SVC_STAT_READ),
	RPCRDMA_SHIM_SVC_COUNTER("rdma_stat_recv", RPCRDMA_SHIM_SVC_STAT_RECV),
	RPCRDMA_SHIM_SVC_COUNTER("rdma_stat_write", RPCRDMA_SHIM_SVC_STAT_WRITE),
	RPCRDMA_SHIM_SVC_COUNTER("rdma_stat_sq_starve", RPCRDMA_SHIM_SVC_STAT_SQ_STARVE),
	RPCRDMA_SHIM_SVC_UNUSED("rdma_stat_rq_starve"),
	RPCRDMA_SHIM_SVC_UNUSED("rdma_stat_rq_poll"),
	RPCRDMA_SHIM_SVC_UNUSED("rdma_stat_rq_prod"),
	RPCRDMA_SHIM_SVC_UNUSED("rdma_stat_sq_poll"),
	RPCRDMA_SHIM_SVC_UNUSED("rdma_stat_sq_prod"),
};

/* ---- what Rust and the rest of the shim call ---- */

void rpcrdma_shim_sysctl_client_get(struct rpcrdma_shim_sysctl_client *out)
{
	out->slot_table_entries = READ_ONCE(rpcrdma_shim_slot_table_entries);
	out->max_inline_read = READ_ONCE(rpcrdma_shim_max_inline_read);
	out->max_inline_write = READ_ONCE(rpcrdma_shim_max_inline_write);
}

void rpcrdma_shim_sysctl_svc_get(struct rpcrdma_shim_sysctl_svc *out)
{
	out->max_requests = READ_ONCE(rpcrdma_shim_svc_max_requests);
	out->max_req_size = READ_ONCE(rpcrdma_shim_svc_max_req_size);
	out->max_outbound_read_requests = READ_ONCE(rpcrdma_shim_svc_ord);
}

void rpcrdma_shim_svc_stat_inc(int stat)
{
	if (stat < 0 || stat >= RPCRDMA_SHIM_SVC_STAT_COUNT ||
	    !READ_ONCE(rpcrdma_shim_svc_stats_ready))
		return;
	percpu_counter_inc(&rpcrdma_shim_svc_stats[stat]);
}

int rpcrdma_shim_sysctl_register(void)
{
	int rc;

	if (rpcrdma_shim_svc_table_header)
		return -EBUSY;
	rc = percpu_counter_init_many(rpcrdma_shim_svc_stats, 0, GFP_KERNEL,
				      RPCRDMA_SHIM_SVC_STAT_COUNT);
	if (rc)
		return rc;
	WRITE_ONCE(rpcrdma_shim_svc_stats_ready, true);

	rpcrdma_shim_svc_table_header = register_sysctl("sunrpc/svc_rdma",
							rpcrdma_shim_svc_table);
	if (!rpcrdma_shim_svc_table_header)
		goto err;
#if IS_ENABLED(CONFIG_SUNRPC_DEBUG)
	rpcrdma_shim_client_table_header = register_sysctl("sunrpc", rpcrdma_shim_client_table);
	if (!rpcrdma_shim_client_table_header) {
		unregister_sysctl_table(rpcrdma_shim_svc_table_header);
		rpcrdma_shim_svc_table_header = NULL;
		goto err;
	}
#endif
	return 0;

err:
	WRITE_ONCE(rpcrdma_shim_svc_stats_ready, false);
	percpu_counter_destroy_many(rpcrdma_shim_svc_stats, RPCRDMA_SHIM_SVC_STAT_COUNT);
	return -ENOMEM;
}

void rpcrdma_shim_sysctl_unregister(void)
{
	if (!rpcrdma_shim_svc_table_header)
		return;
#if IS_ENABLED(CONFIG_SUNRPC_DEBUG)
	unregister_sysctl_table(rpcrdma_shim_client_table_header);
	rpcrdma_shim_client_table_header = NULL;
#endif
	/* No handler runs once this returns. */
	unregister_sysctl_table(rpcrdma_shim_svc_table_header);
	rpcrdma_shim_svc_table_header = NULL;
	WRITE_ONCE(rpcrdma_shim_svc_stats_ready, false);
	percpu_counter_destroy_many(rpcrdma_shim_svc_stats, RPCRDMA_SHIM_SVC_STAT_COUNT);
}
