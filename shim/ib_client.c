// SPDX-License-Identifier: GPL-2.0
/*
 * The module's ib_client, "rpcrdma_rs", as the C module's net/sunrpc/xprtrdma/ib_client.c:
 * only the struct ib_client object, which C must hold; its callbacks are Rust's. The registry
 * of devices and removal notifications, and the wait for connections to let go of a device
 * being removed, are in rust/rdma/removal.rs.
 */

#include <rdma/ib_verbs.h>

#include "rpcrdma_shim.h"

static struct ib_client rpcrdma_shim_ib_client = {
	.name = "rpcrdma_rs",
};

int rpcrdma_shim_ib_client_register(const struct rpcrdma_shim_ib_client_ops *ops)
{
	rpcrdma_shim_ib_client.add = ops->add;
	rpcrdma_shim_ib_client.remove = ops->remove;
	return ib_register_client(&rpcrdma_shim_ib_client);
}

void rpcrdma_shim_ib_client_unregister(void)
{
	ib_unregister_client(&rpcrdma_shim_ib_client);
}

void rpcrdma_shim_ib_client_set_data(struct ib_device *device, void *data)
{
	ib_set_client_data(device, &rpcrdma_shim_ib_client, data);
}
