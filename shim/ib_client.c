// SPDX-License-Identifier: GPL-2.0
/*
 * The module's ib_client, "rpcrdma_rs", as the C module's net/sunrpc/xprtrdma/ib_client.c:
 * only the struct ib_client object, which C must hold, and its callbacks forwarding to Rust.
 * The registry of devices and removal notifications, and the wait for connections to let go
 * of a device being removed, are in rust/rdma/removal.rs.
 */

#include <rdma/ib_verbs.h>

#include "rpcrdma_shim.h"

static const struct rpcrdma_shim_ib_client_ops *rpcrdma_shim_ib_client_ops;

static int rpcrdma_shim_add_one(struct ib_device *device)
{
	return rpcrdma_shim_ib_client_ops->add(device);
}

static void rpcrdma_shim_remove_one(struct ib_device *device, void *client_data)
{
	rpcrdma_shim_ib_client_ops->remove(device, client_data);
}

static struct ib_client rpcrdma_shim_ib_client = {
	.name = "rpcrdma_rs",
	.add = rpcrdma_shim_add_one,
	.remove = rpcrdma_shim_remove_one,
};

int rpcrdma_shim_ib_client_register(const struct rpcrdma_shim_ib_client_ops *ops)
{
	rpcrdma_shim_ib_client_ops = ops;
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
