// SPDX-License-Identifier: GPL-2.0
/*
 * The module's ib_client, "rpcrdma_rs", as the C module's net/sunrpc/xprtrdma/ib_client.c:
 * the struct ib_client object, which C must hold, and per device an ib_event_handler for the
 * ports' link state (struct ib_event_handler is embedded, so it is C's too). The callbacks
 * are Rust's: the registry of devices and removal notifications, the wait for connections to
 * let go of a device being removed, and what a port's link state change does are in
 * rust/rdma/removal.rs.
 */

#include <linux/slab.h>
#include <rdma/ib_verbs.h>

#include "rpcrdma_shim.h"

/**
 * struct rpcrdma_shim_dev - the client's data on one device
 * @eh: the device's event handler, registered from add to remove
 * @data: what the Rust add callback returned, given to its other callbacks
 */
struct rpcrdma_shim_dev {
	struct ib_event_handler eh;
	void *data;
};

static const struct rpcrdma_shim_ib_client_ops *rpcrdma_shim_ib_ops;

static void rpcrdma_shim_ib_event(struct ib_event_handler *eh, struct ib_event *event)
{
	struct rpcrdma_shim_dev *sd = container_of(eh, struct rpcrdma_shim_dev, eh);

	switch (event->event) {
	case IB_EVENT_PORT_ACTIVE:
		rpcrdma_shim_ib_ops->port_event(sd->data, event->element.port_num, true);
		break;
	case IB_EVENT_PORT_ERR:
		rpcrdma_shim_ib_ops->port_event(sd->data, event->element.port_num, false);
		break;
	default:
		break;
	}
}

static int rpcrdma_shim_ib_add(struct ib_device *device);
static void rpcrdma_shim_ib_remove(struct ib_device *device, void *client_data);

static struct ib_client rpcrdma_shim_ib_client = {
	.name = "rpcrdma_rs",
	.add = rpcrdma_shim_ib_add,
	.remove = rpcrdma_shim_ib_remove,
};

static int rpcrdma_shim_ib_add(struct ib_device *device)
{
	struct rpcrdma_shim_dev *sd;
	int ret;

	sd = kzalloc_obj(*sd, GFP_KERNEL);
	if (!sd)
		return -ENOMEM;
	ret = rpcrdma_shim_ib_ops->add(device, &sd->data);
	if (ret) {
		kfree(sd);
		return ret;
	}
	/* Events are dispatched from a work item, in process context. */
	INIT_IB_EVENT_HANDLER(&sd->eh, device, rpcrdma_shim_ib_event);
	ib_register_event_handler(&sd->eh);
	ib_set_client_data(device, &rpcrdma_shim_ib_client, sd);
	return 0;
}

static void rpcrdma_shim_ib_remove(struct ib_device *device, void *client_data)
{
	struct rpcrdma_shim_dev *sd = client_data;

	/* No event handler runs once this returns (the device's event_handler_rwsem). */
	ib_unregister_event_handler(&sd->eh);
	rpcrdma_shim_ib_ops->remove(device, sd->data);
	kfree(sd);
}

int rpcrdma_shim_ib_client_register(const struct rpcrdma_shim_ib_client_ops *ops)
{
	rpcrdma_shim_ib_ops = ops;
	return ib_register_client(&rpcrdma_shim_ib_client);
}

void rpcrdma_shim_ib_client_unregister(void)
{
	ib_unregister_client(&rpcrdma_shim_ib_client);
}
