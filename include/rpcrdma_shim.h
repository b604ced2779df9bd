/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The C shim of rpcrdma_rs: the part of the module that must be C.
 *
 * This header is the interface between the Rust crate and the C side. The Rust declarations
 * are generated from it at build time (Kbuild runs bindgen with the kernel's flags), so the two
 * cannot drift apart. Kernel structures appear here as incomplete types; the ones whose fields
 * Rust reads are laid out for it by bindgen from the kernel headers included below for bindgen
 * only (Kbuild's rpcrdma_bindgen_layout), and only the abstraction modules (rust/sunrpc,
 * rust/rdma) touch them.
 *
 * What lives in C and why (Documentation/design.md, "The C shim"):
 *  - struct xprt_class ends in a flexible array (netid[]), and the class objects hold
 *    THIS_MODULE: they are defined in shim/xprt.c, shim/svc_bc.c and shim/svc.c.
 *  - static inline helpers and macros that bake in KBUILD_MODNAME (ERR_PTR, ib_alloc_pd,
 *    rdma_create_id, ib_post_send, ...) get exported wrappers here.
 *  - containers around kernel objects, module references, sunrpc sequences under its locks.
 */
#ifndef RPCRDMA_SHIM_H
#define RPCRDMA_SHIM_H

#include <linux/types.h>

struct net;
struct page;
struct rpc_xprt;
struct sockaddr;
struct svc_rqst;
struct svc_serv;
struct svc_xprt;
struct svc_xprt_ops;
struct xprt_create;
struct workqueue_struct;
struct ib_cq;
struct ib_device;
struct ib_mr;
struct ib_pd;
struct ib_qp;
struct ib_recv_wr;
struct ib_send_wr;
struct ib_wc;
struct scatterlist;
struct rdma_cm_event;
struct rdma_cm_id;
struct rpc_rqst;
struct rpc_task;
struct rpc_xprt_ops;

/*
 * Registers the client class, whose setup is @setup (Rust's, rust/sunrpc/xprt.rs), and
 * allocates its connect workqueue.
 */
int rpcrdma_shim_xprt_register(struct rpc_xprt *(*setup)(struct xprt_create *args));
/* Unregisters the client class and destroys (drains) its connect workqueue. */
void rpcrdma_shim_xprt_unregister(void);
/* The connect workqueue; valid while the class is registered. */
struct workqueue_struct *rpcrdma_shim_xprt_wq_get(void);
void rpcrdma_shim_xprt_flush(void);

/*
 * Registers the server class with @ops (Rust's svc_xprt_ops table, static) and allocates its
 * workqueue of deferred teardowns.
 */
int rpcrdma_shim_svc_register(const struct svc_xprt_ops *ops);
/* Unregisters the server class and destroys (drains) its workqueue. */
void rpcrdma_shim_svc_unregister(void);
/* The server class's workqueue; valid while the class is registered. */
struct workqueue_struct *rpcrdma_shim_svc_wq_get(void);
/* Waits for every work item queued on the server class's workqueue so far. */
void rpcrdma_shim_svc_flush(void);

/* The client's struct xprt_class (its setup is Rust's; an rpc_xprt of ours points at it). */
extern struct xprt_class rpcrdma_shim_xprt_class;
/* The buf_alloc op: rq_buffer and rq_rbuffer in one kmalloc'ed block. */
int rpcrdma_shim_rqst_buf_alloc(struct rpc_task *task);
/* Frees that block (the end of the buf_free op). */
void rpcrdma_shim_rqst_buf_free(struct rpc_rqst *rqst);
/* rpc_reply_expected() of the request's task. */
bool rpcrdma_shim_rqst_reply_expected(struct rpc_rqst *rqst);
/* Sets the port of the server's address (rpc_set_port(), for the set_port op). */
void rpcrdma_shim_xprt_set_port(struct rpc_xprt *xprt, u16 port);

/* ---- RDMA (shim/rdma.c) ---------------------------------------------------------------- */

/*
 * A work completion as the tracepoints take it (Rust reads struct ib_wc itself); @cq_id is the
 * resource id of its CQ (cq->res.id).
 */
struct rpcrdma_shim_wc {
	u32 cq_id;
	int status;
	int opcode;
	u32 byte_len;
	u32 vendor_err;
	int wc_flags;
	u32 invalidate_rkey;
};

typedef int (*rpcrdma_shim_cm_handler_t)(struct rdma_cm_id *id, struct rdma_cm_event *event);

/* A cm id in network namespace @net (which it holds a reference on from now on). */
struct rdma_cm_id *rpcrdma_shim_cm_create_id(struct net *net, rpcrdma_shim_cm_handler_t handler,
					     void *context);
/**
 * struct rpcrdma_shim_port_state - what the port of a cm id tells of its link
 * @ib_cm: the id's connection is managed by the IB CM (InfiniBand, RoCE), whose messages are
 *	MADs on the port's GSI QP
 * @netdev: the port has a net device (RoCE, iWARP)
 * @netdev_up: that net device is running and has carrier
 * @state_known: the port's cached state could be read (ib_get_cached_port_state())
 * @active: that state is IB_PORT_ACTIVE
 */
struct rpcrdma_shim_port_state {
	bool ib_cm;
	bool netdev;
	bool netdev_up;
	bool state_known;
	bool active;
};

/* The state of @id's port, all false if @id has no device. */
void rpcrdma_shim_cm_id_port_state(const struct rdma_cm_id *id,
				   struct rpcrdma_shim_port_state *out);

/* A reference on a registered device (ib_device_try_get), or NULL if it is going away. */
struct ib_device *rpcrdma_shim_device_get(struct ib_device *dev);
/* dev_name() of the device. */
const char *rpcrdma_shim_device_name(const struct ib_device *dev);

struct ib_pd *rpcrdma_shim_alloc_pd(struct ib_device *dev);
void rpcrdma_shim_dealloc_pd(struct ib_pd *pd);

/* A CQ polled on ib_comp_wq (IB_POLL_WORKQUEUE), or an ERR_PTR. */
struct ib_cq *rpcrdma_shim_alloc_cq(struct ib_device *dev, int nr_cqe, int comp_vector);

/*
 * Names the QP of @id, just created by rdma_create_qp(), after this module for `rdma res show`
 * (KBUILD_MODNAME is C's).
 */
void rpcrdma_shim_cm_id_qp_name(struct rdma_cm_id *id);
int rpcrdma_shim_qp_set_error(struct ib_qp *qp);
/* ib_post_send() and ib_post_recv() (@bad_wr may be NULL). */
int rpcrdma_shim_ib_post_send(struct ib_qp *qp, const struct ib_send_wr *wr,
			      const struct ib_send_wr **bad_wr);
int rpcrdma_shim_ib_post_recv(struct ib_qp *qp, const struct ib_recv_wr *wr,
			      const struct ib_recv_wr **bad_wr);

/* @dir: enum dma_data_direction. Returns 0 and the address, or -ENOMEM. */
int rpcrdma_shim_dma_map_single(struct ib_device *dev, void *cpu_addr, size_t size, int dir,
				u64 *dma_addr);
void rpcrdma_shim_dma_unmap_single(struct ib_device *dev, u64 addr, size_t size, int dir);
void rpcrdma_shim_dma_sync_for_cpu(struct ib_device *dev, u64 addr, size_t size, int dir);
void rpcrdma_shim_dma_sync_for_device(struct ib_device *dev, u64 addr, size_t size, int dir);
/* ib_dma_map_sg() and ib_dma_unmap_sg(); @dir: enum dma_data_direction. */
int rpcrdma_shim_ib_dma_map_sg(struct ib_device *dev, struct scatterlist *sg, int nents, int dir);
void rpcrdma_shim_ib_dma_unmap_sg(struct ib_device *dev, struct scatterlist *sg, int nents,
				  int dir);
/* sg_dma_address() */
u64 rpcrdma_shim_sg_dma_address(const struct scatterlist *sg);
/* ib_update_fast_reg_key() */
void rpcrdma_shim_ib_update_fast_reg_key(struct ib_mr *mr, u8 key);
/* ib_dereg_mr() */
int rpcrdma_shim_ib_dereg_mr(struct ib_mr *mr);

/* ---- The module's ib_client (shim/ib_client.c) ------------------------------------------ */

/**
 * struct rpcrdma_shim_ib_client_ops - the ib_client's callbacks, implemented in Rust
 * @add: @device is registered (or the client is): 0 with the client's data on the device in
 *	*@data, or a -errno (struct ib_client's add)
 * @remove: @device is being unregistered (or the client is); @data is what @add gave. No
 *	@port_event runs or follows.
 * @port_event: port @port of the device with @data changed link state: IB_EVENT_PORT_ACTIVE
 *	(@active) or IB_EVENT_PORT_ERR; in process context (the ib_core's event work)
 */
struct rpcrdma_shim_ib_client_ops {
	int (*add)(struct ib_device *device, void **data);
	void (*remove)(struct ib_device *device, void *data);
	void (*port_event)(void *data, u32 port, bool active);
};

/*
 * Registers the module's ib_client ("rpcrdma_rs") with @ops (static); at module load, before
 * the transports. Unregistered after them.
 */
int rpcrdma_shim_ib_client_register(const struct rpcrdma_shim_ib_client_ops *ops);
void rpcrdma_shim_ib_client_unregister(void);

/* The client's data path: requests, replies, FRWR (shim/client.c). */
#include "rpcrdma_shim_client.h"

/* Marks the running KUnit test skipped (no-op outside a test). */
void rpcrdma_shim_kunit_skip(const char *reason);

#include "rpcrdma_shim_svc.h"

#ifdef __BINDGEN__
/*
 * For bindgen only: the kernel headers that define the constants, enums and structures Kbuild
 * allowlists (rpcrdma_bindgen_enums, rpcrdma_bindgen_vars, rpcrdma_bindgen_layout), so that
 * Rust uses the kernel's values and layouts rather than copies. The types of the members Rust
 * does not read stay opaque (rpcrdma_bindgen_opaque).
 */
#include <linux/sunrpc/bc_xprt.h>
#include <linux/sunrpc/clnt.h>
#include <linux/sunrpc/msg_prot.h>
#include <linux/sunrpc/svc_rdma.h>
#include <linux/sunrpc/svc_xprt.h>
#include <linux/sunrpc/xprt.h>
#include <linux/sunrpc/xprtrdma.h>
#include <rdma/ib_cm.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include <rdma/rw.h>

/*
 * For bindgen only: the rust_do_trace_* functions that shim/trace.c defines (see
 * rust/trace.rs), declared by the event definitions themselves.
 */
#include "rpcrdma_trace.h"
#endif

#endif /* RPCRDMA_SHIM_H */
