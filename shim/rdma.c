// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA part of the rpcrdma_rs shim: wrappers for the rdma_cm and ib_verbs macros that bake in
 * KBUILD_MODNAME (rdma_create_id, ib_alloc_pd, ib_alloc_cq, and the owner name of a QP) and for
 * the static inlines the Rust side needs (ib_post_send/recv, ib_dma_*, ib_update_fast_reg_key,
 * ib_dereg_mr, sg_dma_address), plus accessors that flatten kernel structures into the plain
 * structs of rpcrdma_shim.h. The work request chains are built in Rust (rust/rdma/), which lays
 * out the verbs structures itself.
 */

#include <linux/in.h>
#include <linux/in6.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <net/net_namespace.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include <kunit/test.h>
#include <kunit/test-bug.h>

#include "rpcrdma_shim.h"

/* ---- rdma_cm ---- */

struct rdma_cm_id *rpcrdma_shim_cm_create_id(struct net *net, rpcrdma_shim_cm_handler_t handler,
					     void *context)
{
	/* RDMA_PS_TCP and RC, as both C transports. */
	return rdma_create_id(net, handler, context, RDMA_PS_TCP, IB_QPT_RC);
}

void rpcrdma_shim_cm_id_port_state(const struct rdma_cm_id *id,
				   struct rpcrdma_shim_port_state *out)
{
	struct net_device *ndev;
	enum ib_port_state state;

	*out = (struct rpcrdma_shim_port_state){};
	if (!id->device)
		return;
	out->ib_cm = rdma_cap_ib_cm(id->device, id->port_num);
	ndev = ib_device_get_netdev(id->device, id->port_num);
	if (ndev) {
		out->netdev = true;
		out->netdev_up = netif_running(ndev) && netif_carrier_ok(ndev);
		dev_put(ndev);
	}
	out->state_known = !ib_get_cached_port_state(id->device, id->port_num, &state);
	out->active = out->state_known && state == IB_PORT_ACTIVE;
}

/* ---- devices ---- */

struct ib_device *rpcrdma_shim_device_get(struct ib_device *dev)
{
	return dev && ib_device_try_get(dev) ? dev : NULL;
}

const char *rpcrdma_shim_device_name(const struct ib_device *dev)
{
	return dev_name(&dev->dev);
}

/* ---- PD, CQ, QP ---- */

struct ib_pd *rpcrdma_shim_alloc_pd(struct ib_device *dev)
{
	return ib_alloc_pd(dev, 0);
}

void rpcrdma_shim_dealloc_pd(struct ib_pd *pd)
{
	ib_dealloc_pd(pd);
}

struct ib_cq *rpcrdma_shim_alloc_cq(struct ib_device *dev, int nr_cqe, int comp_vector)
{
	return ib_alloc_cq(dev, NULL, nr_cqe, comp_vector, IB_POLL_WORKQUEUE);
}

void rpcrdma_shim_cm_id_qp_name(struct rdma_cm_id *id)
{
	/*
	 * rdma_create_qp() calls ib_create_qp(), which records the KBUILD_MODNAME of rdma_cm as
	 * the owner of the kernel QP: `rdma res show qp` would list it as [rdma_cm] (as it does the
	 * C module's QPs), where our cm ids, PDs, CQs and MRs show as [rpcrdma_rs]. Name it after
	 * this module as ib_create_qp() expanded here would (rdma_restrack_set_name() does the same
	 * store, but its declaration is private to the RDMA core). The name is a string literal of
	 * this module and the QP is destroyed before the module can go.
	 */
	WRITE_ONCE(id->qp->res.kern_name, KBUILD_MODNAME);
}

int rpcrdma_shim_qp_set_error(struct ib_qp *qp)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };

	return ib_modify_qp(qp, &attr, IB_QP_STATE);
}

int rpcrdma_shim_ib_post_send(struct ib_qp *qp, const struct ib_send_wr *wr,
			      const struct ib_send_wr **bad_wr)
{
	return ib_post_send(qp, wr, bad_wr);
}

int rpcrdma_shim_ib_post_recv(struct ib_qp *qp, const struct ib_recv_wr *wr,
			      const struct ib_recv_wr **bad_wr)
{
	return ib_post_recv(qp, wr, bad_wr);
}

/* ---- DMA ---- */

int rpcrdma_shim_dma_map_single(struct ib_device *dev, void *cpu_addr, size_t size, int dir,
				u64 *dma_addr)
{
	u64 addr = ib_dma_map_single(dev, cpu_addr, size, dir);

	if (ib_dma_mapping_error(dev, addr))
		return -ENOMEM;
	*dma_addr = addr;
	return 0;
}

void rpcrdma_shim_dma_unmap_single(struct ib_device *dev, u64 addr, size_t size, int dir)
{
	ib_dma_unmap_single(dev, addr, size, dir);
}

void rpcrdma_shim_dma_sync_for_cpu(struct ib_device *dev, u64 addr, size_t size, int dir)
{
	ib_dma_sync_single_for_cpu(dev, addr, size, dir);
}

void rpcrdma_shim_dma_sync_for_device(struct ib_device *dev, u64 addr, size_t size, int dir)
{
	ib_dma_sync_single_for_device(dev, addr, size, dir);
}

int rpcrdma_shim_ib_dma_map_sg(struct ib_device *dev, struct scatterlist *sg, int nents, int dir)
{
	return ib_dma_map_sg(dev, sg, nents, dir);
}

void rpcrdma_shim_ib_dma_unmap_sg(struct ib_device *dev, struct scatterlist *sg, int nents,
				  int dir)
{
	ib_dma_unmap_sg(dev, sg, nents, dir);
}

u64 rpcrdma_shim_sg_dma_address(const struct scatterlist *sg)
{
	return sg_dma_address(sg);
}

/* ---- MRs ---- */

void rpcrdma_shim_ib_update_fast_reg_key(struct ib_mr *mr, u8 key)
{
	ib_update_fast_reg_key(mr, key);
}

int rpcrdma_shim_ib_dereg_mr(struct ib_mr *mr)
{
	return ib_dereg_mr(mr);
}

/* ---- KUnit ---- */

void rpcrdma_shim_kunit_skip(const char *reason)
{
#if IS_ENABLED(CONFIG_KUNIT)
	struct kunit *test = kunit_get_current_test();

	if (test)
		kunit_mark_skipped(test, "%s", reason);
#endif
}
