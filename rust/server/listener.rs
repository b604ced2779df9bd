// SPDX-License-Identifier: GPL-2.0

//! The listening endpoint (`svc_rdma_create`, `handle_connect_req`, `svc_rdma_accept`).

#![forbid(unsafe_code)]

use kernel::{
    new_spinlock,
    prelude::*,
    sync::{
        Arc,
        SpinLock, //
    }, //
};

use super::{
    conn::{
        self,
        CmEvents,
        Pending, //
    },
    SvcRdmaXprt,
};
use crate::{
    proto::private_data::PrivateData,
    rdma::{
        cm::{
            ConnectRequest,
            Handler,
            Id,
            SockAddr, //
        },
        ratelimit::pr_warn_peer,
    },
    sunrpc::svc::{
        CreateArgs,
        New,
        SvcXprt, //
        SvcXprtLink,
    },
};

/// rdma_cm listen backlog (`RPCRDMA_LISTEN_BACKLOG`), also the most requests we queue.
const BACKLOG: usize = 10;

/// What the listener's cm handler shares with the listener.
#[pin_data]
pub(crate) struct Shared {
    /// Adopted connection requests waiting for `xpo_accept`, oldest first.
    #[pin]
    queue: SpinLock<KVec<Pending>>,
    /// The listener's `svc_xprt`, to signal pending connections.
    link: SvcXprtLink,
}

/// The cm event handler of a listener.
pub(crate) struct ListenEvents {
    shared: Arc<Shared>,
}

impl Handler for ListenEvents {
    type Conn = CmEvents;

    fn connect_request(&self, req: ConnectRequest<'_, CmEvents>) {
        let peer_pd = PrivateData::decode(req.private_data());
        let ord = req.initiator_depth();
        let shared = match conn::Shared::new() {
            Ok(s) => s,
            Err(e) => {
                pr_warn_peer!("connection request refused: no memory ({e:?})\n");
                return;
            }
        };
        // Not adopted (dropped here, inside its own event): rdma_cm refuses the request.
        let id = match req.adopt(CmEvents::new(shared.clone()), GFP_KERNEL) {
            Ok(id) => id,
            Err(e) => {
                pr_warn_peer!("connection request refused: cannot adopt the cm id ({e:?})\n");
                return;
            }
        };
        let pending = Pending {
            id,
            shared,
            peer_pd,
            ord,
        };
        let mut q = self.shared.queue.lock();
        if q.len() >= BACKLOG {
            drop(q);
            pr_warn_peer!("connection request refused: {BACKLOG} already pending\n");
            return;
        }
        if q.push(pending, GFP_ATOMIC).is_err() {
            drop(q);
            pr_warn_peer!("connection request refused: no memory to queue it\n");
            return;
        }
        drop(q);
        self.shared.link.with(|x| x.conn_pending(true));
    }
}

/// A listening endpoint.
pub(crate) struct Listener {
    shared: Arc<Shared>,
    id: Id<ListenEvents>,
}

impl Listener {
    /// `xpo_create`: an rdma_cm listener on the address nfsd asks for.
    pub(crate) fn create(args: &CreateArgs<'_>) -> Result<New> {
        let addr = args.addr().inspect_err(|_| {
            pr_warn!(
                "rdma listener: unsupported address family {:?}\n",
                args.family()
            )
        })?;
        Self::listen(args, addr).inspect_err(|e| {
            pr_err!("rdma listener on {addr}: cannot listen ({e:?})\n");
        })
    }

    fn listen(args: &CreateArgs<'_>, addr: SockAddr) -> Result<New> {
        let shared = Arc::pin_init(
            try_pin_init!(Shared {
                queue <- new_spinlock!(KVec::new()),
                link: SvcXprtLink::new()?,
            }),
            GFP_KERNEL,
        )?;
        let id = Id::new(
            args.net()?,
            ListenEvents {
                shared: shared.clone(),
            },
            GFP_KERNEL,
        )?;
        if matches!(addr, SockAddr::V6 { .. }) {
            // Let IPv4 and IPv6 listeners share the port, as svcrdma does.
            id.set_afonly(true)?;
        }
        id.bind_addr(&addr)?;
        id.listen(BACKLOG as i32)?;
        // The bound address (its port, if nfsd asked for port 0).
        let local = id.addrs().0.unwrap_or(addr);
        let new = args.new_listener(KBox::new(
            SvcRdmaXprt::Listener(Self {
                shared: shared.clone(),
                id,
            }),
            GFP_KERNEL,
        )?)?;
        new.xprt().set_local(&local);
        shared.link.set(new.xprt());
        // Requests that arrived before the link was set: svc_xprt_received will see XPT_CONN.
        if !shared.queue.lock().is_empty() {
            new.xprt().conn_pending(false);
        }
        pr_info!("rdma listener on {local} (flags {:#x})\n", args.flags());
        Ok(new)
    }

    /// `xpo_accept`: accepts the oldest queued request, if any.
    pub(crate) fn accept(&self, xprt: &SvcXprt) -> Option<New> {
        let pending = {
            let mut q = self.shared.queue.lock();
            let p = if q.is_empty() { None } else { q.remove(0).ok() };
            if !q.is_empty() {
                xprt.conn_pending(false);
            }
            p
        }?;
        conn::SvcConn::accept(xprt, pending)
            .inspect_err(|e| pr_warn_peer!("rdma connection not accepted: {e:?}\n"))
            .ok()
    }

    /// `xpo_detach`: stops signaling the listener (breaks its reference cycle).
    pub(crate) fn detach(&self) {
        self.shared.link.clear();
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        // Refuse queued requests: their ids are destroyed with them.
        let q = core::mem::take(&mut *self.shared.queue.lock());
        drop(q);
        if let (Some(local), _) = self.id.addrs() {
            pr_info!("rdma listener on {local} closed\n");
        }
    }
}
