/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The C shim of rpcrdma_rs: the part of the module that must be C.
 *
 * This header is the whole interface between the Rust crate and the C side. The Rust
 * declarations are generated from it at build time (Kbuild runs bindgen with the kernel's
 * flags), so the two cannot drift apart. Kernel structures appear here only as incomplete
 * types: their layout stays in C, and Rust handles them as opaque pointers wrapped by the
 * abstraction modules (rust/sunrpc, later rust/rdma).
 *
 * What lives in C and why:
 *  - struct xprt_class ends in a flexible array (netid[]), and both class objects hold
 *    THIS_MODULE: they are defined in shim/xprt.c and shim/svc.c.
 *  - static inline helpers and macros that bake in KBUILD_MODNAME (ERR_PTR, ib_alloc_pd,
 *    rdma_create_id, ib_post_send, ...) get exported wrappers here.
 */
#ifndef RPCRDMA_SHIM_H
#define RPCRDMA_SHIM_H

#include <linux/types.h>

struct net;
struct rpc_xprt;
struct sockaddr;
struct svc_serv;
struct svc_xprt;
struct xprt_create;

/**
 * struct rpcrdma_shim_xprt_ops - client transport callbacks implemented in Rust
 * @setup: create an rpc_xprt for @args; returns the transport or an ERR_PTR
 */
struct rpcrdma_shim_xprt_ops {
	struct rpc_xprt *(*setup)(struct xprt_create *args);
};

/**
 * struct rpcrdma_shim_svc_ops - server transport callbacks implemented in Rust
 * @create: create a listener for @sa; returns the transport or an ERR_PTR
 */
struct rpcrdma_shim_svc_ops {
	struct svc_xprt *(*create)(struct svc_serv *serv, struct net *net,
				   struct sockaddr *sa, int salen, int flags);
};

/* XPRT_TRANSPORT_RDMA, the ident of the "rdma" client transport (and of the svc class). */
int rpcrdma_shim_xprt_ident(void);

int rpcrdma_shim_xprt_register(const struct rpcrdma_shim_xprt_ops *ops);
void rpcrdma_shim_xprt_unregister(void);

int rpcrdma_shim_svc_register(const struct rpcrdma_shim_svc_ops *ops);
void rpcrdma_shim_svc_unregister(void);

/* Address family of the destination of a client transport being set up. */
unsigned short rpcrdma_shim_xprt_create_family(const struct xprt_create *args);
/* Address family of a server listener being created. */
unsigned short rpcrdma_shim_sockaddr_family(const struct sockaddr *sa);

#endif /* RPCRDMA_SHIM_H */
