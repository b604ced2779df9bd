// SPDX-License-Identifier: GPL-2.0
/*
 * Device removal notifications for rpcrdma_rs: the module's ib_client, as the C module's
 * net/sunrpc/xprtrdma/ib_client.c (rpcrdma_rn_register, rpcrdma_remove_one).
 *
 * An endpoint registers a notification on the device its connection uses. When the device is
 * unregistered (rxe or siw link deleted, driver unbound, hot unplug), the ib_core calls our
 * remove callback before the rdma_cm's (clients are removed in reverse order of registration,
 * and rdma_cm is loaded before us): it marks the device removing, calls every notification's
 * callback, which schedules the connection's teardown, and then waits until every
 * registration on the device is unregistered, that is until every connection has let go of its
 * QP, CQs, PD and DMA mappings. Registering on a device being removed fails with -ENETUNREACH.
 *
 * The Rust side (rust/rdma/removal.rs) owns each notification; dropping it unregisters.
 *
 * Locking: one mutex (rpcrdma_shim_rn_mutex) protects the list of devices, each device's list
 * of notifications and its state, and is held while the callbacks run, so once
 * rpcrdma_shim_rn_unregister() returns the callback of that notification is neither running
 * nor going to run. A device's object is freed by its remove callback only, after the last
 * registration on it signalled rd_done; a device that is being removed is off the list, so a
 * late registration cannot find it.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/completion.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <rdma/ib_verbs.h>

#include "rpcrdma_shim.h"

/* Per-device data of the client (struct rpcrdma_device in the C module). */
struct rpcrdma_shim_rd {
	struct list_head rd_node;	/* in rpcrdma_shim_rds until removal starts */
	struct ib_device *rd_device;
	struct list_head rd_rns;	/* struct rpcrdma_shim_rn.rn_node */
	unsigned int rd_count;		/* entries of rd_rns */
	bool rd_removing;
	struct completion rd_done;	/* the last registration went after removal started */
};

/* A removal notification (struct rpcrdma_notification). */
struct rpcrdma_shim_rn {
	struct list_head rn_node;
	struct rpcrdma_shim_rd *rn_rd;
	rpcrdma_shim_rn_done_t rn_done;
	void *rn_data;
};

static DEFINE_MUTEX(rpcrdma_shim_rn_mutex);
static LIST_HEAD(rpcrdma_shim_rds);

/* Seconds between warnings while removal waits for registrations to go. */
#define RPCRDMA_SHIM_RN_WARN_SECS 10

struct rpcrdma_shim_rn *rpcrdma_shim_rn_register(struct ib_device *device,
						 rpcrdma_shim_rn_done_t done, void *data)
{
	struct rpcrdma_shim_rn *rn;
	struct rpcrdma_shim_rd *rd;

	if (!device || !done)
		return ERR_PTR(-EINVAL);
	rn = kzalloc(sizeof(*rn), GFP_KERNEL);
	if (!rn)
		return ERR_PTR(-ENOMEM);
	rn->rn_done = done;
	rn->rn_data = data;

	mutex_lock(&rpcrdma_shim_rn_mutex);
	list_for_each_entry(rd, &rpcrdma_shim_rds, rd_node) {
		if (rd->rd_device == device) {
			rn->rn_rd = rd;
			list_add_tail(&rn->rn_node, &rd->rd_rns);
			rd->rd_count++;
			break;
		}
	}
	mutex_unlock(&rpcrdma_shim_rn_mutex);

	if (!rn->rn_rd) {
		/* Unknown to the client (its add failed) or being removed. */
		kfree(rn);
		return ERR_PTR(-ENETUNREACH);
	}
	return rn;
}

void rpcrdma_shim_rn_unregister(struct rpcrdma_shim_rn *rn)
{
	struct rpcrdma_shim_rd *rd = rn->rn_rd;
	bool last;

	mutex_lock(&rpcrdma_shim_rn_mutex);
	list_del(&rn->rn_node);
	last = --rd->rd_count == 0 && rd->rd_removing;
	mutex_unlock(&rpcrdma_shim_rn_mutex);
	kfree(rn);
	/* The remove callback frees @rd once this returns. */
	if (last)
		complete(&rd->rd_done);
}

static int rpcrdma_shim_add_one(struct ib_device *device);
static void rpcrdma_shim_remove_one(struct ib_device *device, void *client_data);

static struct ib_client rpcrdma_shim_ib_client = {
	.name = "rpcrdma_rs",
	.add = rpcrdma_shim_add_one,
	.remove = rpcrdma_shim_remove_one,
};

static int rpcrdma_shim_add_one(struct ib_device *device)
{
	struct rpcrdma_shim_rd *rd = kzalloc(sizeof(*rd), GFP_KERNEL);

	if (!rd)
		return -ENOMEM;
	rd->rd_device = device;
	INIT_LIST_HEAD(&rd->rd_rns);
	init_completion(&rd->rd_done);
	mutex_lock(&rpcrdma_shim_rn_mutex);
	list_add_tail(&rd->rd_node, &rpcrdma_shim_rds);
	mutex_unlock(&rpcrdma_shim_rn_mutex);
	ib_set_client_data(device, &rpcrdma_shim_ib_client, rd);
	return 0;
}

static void rpcrdma_shim_remove_one(struct ib_device *device, void *client_data)
{
	struct rpcrdma_shim_rd *rd = client_data;
	struct rpcrdma_shim_rn *rn;
	unsigned int count;

	mutex_lock(&rpcrdma_shim_rn_mutex);
	list_del(&rd->rd_node);
	rd->rd_removing = true;
	list_for_each_entry(rn, &rd->rd_rns, rn_node)
		rn->rn_done(rn->rn_data);
	count = rd->rd_count;
	mutex_unlock(&rpcrdma_shim_rn_mutex);

	if (count) {
		pr_info("%s is being removed: waiting for %u connection(s) to let go of it\n",
			dev_name(&device->dev), count);
		while (!wait_for_completion_timeout(&rd->rd_done,
						    RPCRDMA_SHIM_RN_WARN_SECS * HZ)) {
			mutex_lock(&rpcrdma_shim_rn_mutex);
			count = rd->rd_count;
			mutex_unlock(&rpcrdma_shim_rn_mutex);
			pr_warn("%s removal still waits for %u connection(s)\n",
				dev_name(&device->dev), count);
		}
		pr_info("%s: every connection let go of it\n", dev_name(&device->dev));
	}
	kfree(rd);
}

int rpcrdma_shim_ib_client_register(void)
{
	return ib_register_client(&rpcrdma_shim_ib_client);
}

void rpcrdma_shim_ib_client_unregister(void)
{
	ib_unregister_client(&rpcrdma_shim_ib_client);
}
