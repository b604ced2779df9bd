// SPDX-License-Identifier: GPL-2.0

//! RDMA connection manager ids (`struct rdma_cm_id`).
//!
//! An [`Id`] owns one cm id and the [`Handler`] its events are delivered to. The handler is
//! the id's `context`, boxed and handed to C with [`ForeignOwnable`]; it lives as long as the
//! cm id and is dropped right after `rdma_destroy_id` returns, when no event can run any more.
//!
//! # The handler's return value
//!
//! rdma_cm destroys an id whose event handler returns non-zero. Here that value is never chosen
//! by the handler: handler methods return nothing, and the adapter decides:
//!
//! - for an id owned by an [`Id`], 0, so rdma_cm never destroys what Rust owns; except when
//!   the owner dropped that [`Id`] from inside one of its own events (see below);
//! - for `CONNECT_REQUEST`, non-zero unless the handler adopted the new id with
//!   [`ConnectRequest::adopt`]: a request nobody adopted is destroyed (and refused) by rdma_cm.
//!
//! # Destroying an id from inside its own handler
//!
//! `rdma_destroy_id` waits for the id's running handler, so calling it from that handler
//! deadlocks (see `rdma_cm_event_handler` in rdma_cm.h). Dropping the last reference of an
//! [`Id`] inside one of its own events is therefore detected (the adapter records which task
//! runs the handler): the drop only marks the id, and the adapter returns non-zero once the
//! handler is done, so rdma_cm destroys the id itself, after which the adapter frees the
//! handler. Elsewhere, dropping an [`Id`] calls `rdma_destroy_id`, which waits for a handler
//! running on another CPU, and may sleep.

use core::{
    cell::Cell,
    ffi::c_void,
    marker::PhantomData,
    ptr::NonNull, //
};

use kernel::{
    error::to_result,
    prelude::*,
    sync::{
        atomic::{
            Acquire,
            Atomic,
            Release, //
        },
        Arc,
        UniqueArc, //
    },
    task::Task,
    time::{
        delay::fsleep,
        Delta, //
    },
    types::ForeignOwnable, //
};

use super::{
    verbs::Device,
    COUNTERS, //
};
use crate::bindings;

/// A network namespace (`struct net`), borrowed for as long as a cm id is created in it: the id
/// takes its own reference (`rdma_create_id`), so the borrow need not outlive that call.
///
/// # Invariants
///
/// `ptr` points to a live `struct net` for `'a`.
#[derive(Clone, Copy)]
pub(crate) struct Net<'a> {
    ptr: NonNull<bindings::net>,
    _p: PhantomData<&'a bindings::net>,
}

impl<'a> Net<'a> {
    /// The namespace at `ptr`; `EINVAL` if it is null.
    ///
    /// # Safety
    ///
    /// `ptr` must be null or point to a live `struct net` for `'a`.
    pub(crate) unsafe fn from_raw(ptr: *mut bindings::net) -> Result<Self> {
        // INVARIANT: The caller guarantees that a non-null namespace lives for `'a`.
        Ok(Self {
            ptr: NonNull::new(ptr).ok_or(EINVAL)?,
            _p: PhantomData,
        })
    }

    /// The initial network namespace (`init_net`), which lives as long as the kernel. Only the
    /// KUnit tests need it: the transports use the namespace of their mount or listener.
    #[cfg(CONFIG_KUNIT = "y")]
    pub(crate) fn init() -> Result<Net<'static>> {
        // The kernel's `struct net` and the bindgen opaque one are the same C type.
        let p = (&raw mut kernel::bindings::init_net).cast();
        // SAFETY: `init_net` is static: never freed.
        unsafe { Net::from_raw(p) }
    }
}

/// `AF_INET`, as a `sa_family_t`.
pub(crate) const AF_INET: u16 = kernel::bindings::AF_INET as u16;
/// `AF_INET6`, as a `sa_family_t`.
pub(crate) const AF_INET6: u16 = kernel::bindings::AF_INET6 as u16;

/// Address of a peer or of a local endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SockAddr {
    /// IPv4 address and port.
    V4 {
        /// Address, network order.
        addr: [u8; 4],
        /// Port, host order.
        port: u16,
    },
    /// IPv6 address, port and scope.
    V6 {
        /// Address, network order.
        addr: [u8; 16],
        /// Port, host order.
        port: u16,
        /// Scope id (interface index for link-local addresses).
        scope_id: u32,
    },
}

impl SockAddr {
    /// The address in a `struct sockaddr_in` or `struct sockaddr_in6`, for the kernel
    /// functions that take a `struct sockaddr`.
    pub(crate) fn to_raw(self) -> RawSockAddr {
        match self {
            Self::V4 { addr, port } => RawSockAddr::V4(kernel::bindings::sockaddr_in {
                sin_family: AF_INET,
                sin_port: port.to_be(),
                sin_addr: kernel::bindings::in_addr {
                    s_addr: u32::from_ne_bytes(addr),
                },
                ..Default::default()
            }),
            Self::V6 {
                addr,
                port,
                scope_id,
            } => RawSockAddr::V6(kernel::bindings::sockaddr_in6 {
                sin6_family: AF_INET6,
                sin6_port: port.to_be(),
                sin6_addr: kernel::bindings::in6_addr {
                    in6_u: kernel::bindings::in6_addr__bindgen_ty_1 { u6_addr8: addr },
                },
                sin6_scope_id: scope_id,
                ..Default::default()
            }),
        }
    }

    /// Parses the `struct sockaddr` at `sa`, of `len` bytes: `None` if it is neither an IPv4 nor
    /// an IPv6 address, or shorter than its family's `struct sockaddr_in` or `sockaddr_in6`.
    ///
    /// # Safety
    ///
    /// `sa` must be null or valid for reads of `len` bytes, and aligned for a `sockaddr_in6`.
    pub(crate) unsafe fn from_raw(sa: *const bindings::sockaddr, len: usize) -> Option<Self> {
        if sa.is_null() || len < size_of::<u16>() {
            return None;
        }
        // SAFETY: `sa` is valid for `len` bytes, which holds the family (the caller's
        // guarantee, checked above); every `sockaddr` begins with its `sa_family_t`.
        let family = unsafe { sa.cast::<u16>().read() };
        match family {
            AF_INET if len >= size_of::<kernel::bindings::sockaddr_in>() => {
                // SAFETY: `sa` is an aligned `sockaddr_in` of valid bytes (checked above), for
                // which any value is valid.
                let sin = unsafe { sa.cast::<kernel::bindings::sockaddr_in>().read() };
                Some(Self::V4 {
                    addr: sin.sin_addr.s_addr.to_ne_bytes(),
                    port: u16::from_be(sin.sin_port),
                })
            }
            AF_INET6 if len >= size_of::<kernel::bindings::sockaddr_in6>() => {
                // SAFETY: As above, for a `sockaddr_in6`.
                let sin6 = unsafe { sa.cast::<kernel::bindings::sockaddr_in6>().read() };
                Some(Self::V6 {
                    // SAFETY: Every member of the union is plain bytes: any value is valid.
                    addr: unsafe { sin6.sin6_addr.in6_u.u6_addr8 },
                    port: u16::from_be(sin6.sin6_port),
                    scope_id: sin6.sin6_scope_id,
                })
            }
            _ => None,
        }
    }

    /// The family of the `struct sockaddr` at `sa`, or `AF_UNSPEC` (0) if `sa` is null.
    ///
    /// # Safety
    ///
    /// `sa` must be null or point to a valid `struct sockaddr`.
    pub(crate) unsafe fn raw_family(sa: *const bindings::sockaddr) -> u16 {
        if sa.is_null() {
            return 0;
        }
        // SAFETY: `sa` is a valid `sockaddr` (the caller's guarantee), which begins with its
        // `sa_family_t`.
        unsafe { sa.cast::<u16>().read() }
    }
}

/// A [`SockAddr`] as the kernel holds it: a `struct sockaddr_in` or `struct sockaddr_in6`.
pub(crate) enum RawSockAddr {
    /// `AF_INET`.
    V4(kernel::bindings::sockaddr_in),
    /// `AF_INET6`.
    V6(kernel::bindings::sockaddr_in6),
}

impl RawSockAddr {
    /// The address, as a `struct sockaddr` valid for [`RawSockAddr::len`] bytes while `self` is
    /// borrowed.
    pub(crate) fn as_ptr(&self) -> *const bindings::sockaddr {
        match self {
            Self::V4(sin) => core::ptr::from_ref(sin).cast(),
            Self::V6(sin6) => core::ptr::from_ref(sin6).cast(),
        }
    }

    /// The size of the address structure.
    pub(crate) fn len(&self) -> usize {
        match self {
            Self::V4(_) => size_of::<kernel::bindings::sockaddr_in>(),
            Self::V6(_) => size_of::<kernel::bindings::sockaddr_in6>(),
        }
    }
}

/// `IB_CM_REJ_STALE_CONN` (`enum ib_cm_rej_reason`), a reject reason that means "retry", as
/// [`Handler::rejected`] receives it.
pub(crate) const IB_CM_REJ_STALE_CONN: i32 = bindings::ib_cm_rej_reason_IB_CM_REJ_STALE_CONN as i32;

/// Connection parameters of [`Id::connect`] and [`Id::accept`] (`struct rdma_conn_param`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ConnParam<'a> {
    /// Private data sent with the request or reply (at most 255 bytes; less on some fabrics).
    pub(crate) private_data: &'a [u8],
    /// Incoming RDMA Reads the local side accepts at once.
    pub(crate) responder_resources: u8,
    /// Outgoing RDMA Reads the local side issues at once.
    pub(crate) initiator_depth: u8,
    /// Whether hardware flow control is used (IB only).
    pub(crate) flow_control: u8,
    /// Transport retries (IB only, 0..=7).
    pub(crate) retry_count: u8,
    /// Receiver-not-ready retries (IB only, 0..=7, 7 is infinite).
    pub(crate) rnr_retry_count: u8,
}

impl ConnParam<'_> {
    /// The `struct rdma_conn_param` of `rdma_connect` and `rdma_accept` (the fields for an id
    /// without a QP zero); `EINVAL` if the private data is too long.
    fn to_raw(self) -> Result<bindings::rdma_conn_param> {
        Ok(bindings::rdma_conn_param {
            private_data: self.private_data.as_ptr().cast(),
            private_data_len: u8::try_from(self.private_data.len()).map_err(|_| EINVAL)?,
            responder_resources: self.responder_resources,
            initiator_depth: self.initiator_depth,
            flow_control: self.flow_control,
            retry_count: self.retry_count,
            rnr_retry_count: self.rnr_retry_count,
            ..Default::default()
        })
    }
}

/// The events of a cm id, one method per event class the C transports handle.
///
/// Methods run in process context, one at a time per id (rdma_cm serializes them), and may
/// sleep. The exception is [`Handler::connect_request`] of a listener bound to a wildcard
/// address: rdma_cm listens on each device with a child id that shares the listener's handler
/// and serializes only its own requests, so requests that arrive on two devices run at once.
/// They receive the handler only: the owner of the [`Id`] acts on the events (resolves the
/// route, accepts, ...) from its own context. Every method defaults to doing nothing.
pub(crate) trait Handler: Send + Sync + Sized + 'static {
    /// Handler of the connections a listener adopts (use `Self` when there are none).
    type Conn: Handler;

    /// `RDMA_CM_EVENT_ADDR_RESOLVED`: [`Id::resolve_addr`] succeeded.
    fn addr_resolved(&self) {}
    /// `RDMA_CM_EVENT_ADDR_ERROR`: address resolution failed with `err`.
    fn addr_error(&self, _err: Error) {}
    /// `RDMA_CM_EVENT_ROUTE_RESOLVED`: [`Id::resolve_route`] succeeded.
    fn route_resolved(&self) {}
    /// `RDMA_CM_EVENT_ROUTE_ERROR`: route resolution failed with `err`.
    fn route_error(&self, _err: Error) {}
    /// `RDMA_CM_EVENT_CONNECT_REQUEST` on a listener. Unless the handler calls
    /// [`ConnectRequest::adopt`], rdma_cm refuses and destroys the new id.
    fn connect_request(&self, _req: ConnectRequest<'_, Self::Conn>) {}
    /// `RDMA_CM_EVENT_ESTABLISHED`, with the peer's private data (may be empty).
    fn established(&self, _private_data: &[u8]) {}
    /// `RDMA_CM_EVENT_CONNECT_ERROR`.
    fn connect_error(&self, _err: Error) {}
    /// `RDMA_CM_EVENT_UNREACHABLE`.
    fn unreachable(&self, _err: Error) {}
    /// `RDMA_CM_EVENT_REJECTED`, with the reject reason (`rdma_reject_msg`) and private data.
    fn rejected(&self, _reason: i32, _private_data: &[u8]) {}
    /// `RDMA_CM_EVENT_DISCONNECTED`.
    fn disconnected(&self) {}
    /// `RDMA_CM_EVENT_DEVICE_REMOVAL`: the owner must drop the id and everything allocated on
    /// its device soon (from another context), or device removal waits.
    fn device_removal(&self) {}
    /// `RDMA_CM_EVENT_ADDR_CHANGE`.
    fn addr_change(&self) {}
    /// `RDMA_CM_EVENT_TIMEWAIT_EXIT`.
    fn timewait_exit(&self) {}
    /// Any other event (`enum rdma_cm_event_type` value and status).
    fn other(&self, _event: i32, _status: i32) {}
}

/// The `context` of a cm id: the handler, and what the adapter needs to keep the return value
/// of the C handler right.
struct Context<H> {
    handler: H,
    /// The task running an event of this id, or null. A wildcard listener's requests on two
    /// devices may run at once ([`Handler`]): the mark is then the last to start, and each
    /// clears only its own, so that a drop inside the other is at worst not seen as one (the
    /// listener's handler must not drop the listener: it would be leaked anyway).
    running: Atomic<*mut kernel::bindings::task_struct>,
    /// Set when the owner dropped the [`Id`] from inside one of its events.
    orphaned: Atomic<bool>,
}

/// The owned cm id behind an [`Id`], shared with the QP created on it.
///
/// # Invariants
///
/// - `id` is a live cm id this object owns; its `context` is `ctx`, which came from
///   `KBox::<Context<H>>::into_foreign`, and its event handler is `Adapter::<H>::event`.
/// - `ctx` is freed only after `id` is destroyed (by [`Drop`] or, when orphaned, by the
///   adapter once rdma_cm destroyed it).
pub(crate) struct Core<H: Handler> {
    id: NonNull<bindings::rdma_cm_id>,
    ctx: *mut c_void,
    /// Whether a QP exists on the id (rdma_cm allows one).
    has_qp: Atomic<bool>,
    _p: PhantomData<H>,
}

// SAFETY: The cm id may be used and destroyed from any thread; the handler is `Send + Sync`.
unsafe impl<H: Handler> Send for Core<H> {}
// SAFETY: rdma_cm serializes operations on an id internally; the handler is `Sync`.
unsafe impl<H: Handler> Sync for Core<H> {}

impl<H: Handler> Core<H> {
    fn context(&self) -> &Context<H> {
        // SAFETY: By the type invariants `ctx` came from `into_foreign` and is freed only after
        // `self` is gone.
        unsafe { KBox::<Context<H>>::borrow(self.ctx) }
    }

    pub(super) fn as_ptr(&self) -> *mut bindings::rdma_cm_id {
        self.id.as_ptr()
    }

    /// Claims the one QP slot of the id; `EBUSY` if a QP exists.
    pub(super) fn claim_qp(&self) -> Result {
        self.has_qp
            .cmpxchg(false, true, Acquire)
            .map(|_| ())
            .map_err(|_| EBUSY)
    }

    pub(super) fn release_qp(&self) {
        self.has_qp.store(false, Release);
    }
}

impl<H: Handler> Drop for Core<H> {
    fn drop(&mut self) {
        let ctx = self.context();
        if ctx.running.load(Acquire) == Task::current_raw() {
            // Inside one of this id's own events: `rdma_destroy_id` would deadlock. The adapter
            // sees the mark when the handler returns and lets rdma_cm destroy the id.
            ctx.orphaned.store(true, Release);
            return;
        }
        // SAFETY: By the type invariants `id` is live and owned; no handler of it runs on this
        // task, and `rdma_destroy_id` waits for one running elsewhere.
        unsafe { bindings::rdma_destroy_id(self.id.as_ptr()) };
        // SAFETY: The id is destroyed, so no event can borrow the context any more.
        drop(unsafe { KBox::<Context<H>>::from_foreign(self.ctx) });
        COUNTERS.ids.free();
    }
}

/// An RDMA CM id (`RDMA_PS_TCP`, RC) with its event [`Handler`].
///
/// Dropping it destroys the cm id once every QP created on it is gone (see the module
/// documentation for drops inside its own handler). An id lives in the network namespace of
/// the transport it serves (the RPC client's, or the service's), as in the C transports.
pub(crate) struct Id<H: Handler> {
    core: Arc<Core<H>>,
}

impl<H: Handler> Id<H> {
    /// Creates a cm id in namespace `net` whose events go to `handler` (`rdma_create_id`).
    pub(crate) fn new(net: Net<'_>, handler: H, flags: kernel::alloc::Flags) -> Result<Self> {
        let ctx = KBox::new(
            Context {
                handler,
                running: Atomic::new(core::ptr::null_mut()),
                orphaned: Atomic::new(false),
            },
            flags,
        )?;
        // Allocate the `Core` first so that nothing can fail once the id exists.
        let slot = UniqueArc::<Core<H>>::new_uninit(flags)?;
        let ctx = ctx.into_foreign();
        // SAFETY: `net` is live (type invariant); the handler matches the C typedef; `ctx` stays
        // valid until the id is destroyed (the invariants of `Core`).
        let id = unsafe {
            bindings::rpcrdma_shim_cm_create_id(net.ptr.as_ptr(), Some(Adapter::<H>::event), ctx)
        };
        let id = match kernel::error::from_err_ptr(id).and_then(|p| NonNull::new(p).ok_or(ENOMEM)) {
            Ok(id) => id,
            Err(e) => {
                // SAFETY: `ctx` came from `into_foreign` above and no id refers to it.
                drop(unsafe { KBox::<Context<H>>::from_foreign(ctx) });
                return Err(e);
            }
        };
        COUNTERS.ids.alloc();
        // INVARIANT: `id` is live and owned, its context is `ctx` and its handler the adapter's.
        let core = slot.write(Core {
            id,
            ctx,
            has_qp: Atomic::new(false),
            _p: PhantomData,
        });
        Ok(Self { core: core.into() })
    }

    pub(super) fn core(&self) -> &Arc<Core<H>> {
        &self.core
    }

    /// Starts resolving `dst` to a local device (`rdma_resolve_addr`); the outcome arrives as
    /// [`Handler::addr_resolved`] or [`Handler::addr_error`].
    pub(crate) fn resolve_addr(&self, dst: &SockAddr, timeout_ms: u32) -> Result {
        let a = dst.to_raw();
        // SAFETY: The id is live (type invariant of `Core`); `a` is a valid `sockaddr` that
        // outlives the call; no source address: rdma_cm picks one.
        to_result(unsafe {
            bindings::rdma_resolve_addr(
                self.core.as_ptr(),
                core::ptr::null_mut(),
                a.as_ptr(),
                timeout_ms as usize,
            )
        })
    }

    /// Starts resolving the route to the resolved address (`rdma_resolve_route`); the outcome
    /// arrives as [`Handler::route_resolved`] or [`Handler::route_error`].
    pub(crate) fn resolve_route(&self, timeout_ms: u32) -> Result {
        // SAFETY: The id is live.
        to_result(unsafe { bindings::rdma_resolve_route(self.core.as_ptr(), timeout_ms as usize) })
    }

    /// Binds the id to a local address (`rdma_bind_addr`), before [`Id::listen`].
    pub(crate) fn bind_addr(&self, src: &SockAddr) -> Result {
        let a = src.to_raw();
        // SAFETY: The id is live; `a` is a valid `sockaddr` that outlives the call, which only
        // reads it.
        to_result(unsafe { bindings::rdma_bind_addr(self.core.as_ptr(), a.as_ptr().cast_mut()) })
    }

    /// Listens for connection requests (`rdma_listen`); they arrive as
    /// [`Handler::connect_request`].
    pub(crate) fn listen(&self, backlog: i32) -> Result {
        // SAFETY: The id is live.
        to_result(unsafe { bindings::rdma_listen(self.core.as_ptr(), backlog) })
    }

    /// Sends a connection request (`rdma_connect`) once the route is resolved and the QP
    /// created; the outcome arrives as [`Handler::established`] or an error event.
    pub(crate) fn connect(&self, param: &ConnParam<'_>) -> Result {
        let mut p = param.to_raw()?;
        // SAFETY: The id is live; `p` and the private data it points to outlive the call
        // (rdma_cm copies the private data, and does not write `p`).
        to_result(unsafe { bindings::rdma_connect(self.core.as_ptr(), &mut p) })
    }

    /// Accepts the connection request this id was adopted from (`rdma_accept`, under the id's
    /// handler lock). Not from within one of the id's own events: that would deadlock.
    pub(crate) fn accept(&self, param: &ConnParam<'_>) -> Result {
        let mut p = param.to_raw()?;
        let id = self.core.as_ptr();
        // Outside the id's event handler, rdma_accept wants its handler lock (svc_rdma_accept).
        // SAFETY: The id is live; this is not one of its events (function requirement), so
        // the lock is not held.
        unsafe { bindings::rdma_lock_handler(id) };
        // SAFETY: As in `connect`; the handler lock is held.
        let r = to_result(unsafe { bindings::rdma_accept(id, &mut p) });
        // SAFETY: Taken above.
        unsafe { bindings::rdma_unlock_handler(id) };
        r
    }

    /// Disconnects (`rdma_disconnect`); [`Handler::disconnected`] follows.
    pub(crate) fn disconnect(&self) -> Result {
        // SAFETY: The id is live.
        to_result(unsafe { bindings::rdma_disconnect(self.core.as_ptr()) })
    }

    /// Whether the id's connection is managed by the IB CM (InfiniBand, RoCE: its messages
    /// are MADs on the port's GSI QP) and its port cannot send: its net device is down or
    /// without carrier, or the port is not `ACTIVE`. The net device is asked first: it goes
    /// down before the port's state follows (in the `NETDEV_DOWN` notifier).
    pub(crate) fn mad_port_down(&self) -> bool {
        let mut s = bindings::rpcrdma_shim_port_state::default();
        // SAFETY: The id is live; `s` is a valid output.
        unsafe { bindings::rpcrdma_shim_cm_id_port_state(self.core.as_ptr(), &mut s) };
        s.ib_cm && ((s.netdev && !s.netdev_up) || (s.state_known && !s.active))
    }

    /// Waits, polling every `poll_ms`, while [`Id::mad_port_down`] holds, for `max_ms` at most
    /// and until `stop` returns true (a device being removed is not waited for). Returns how
    /// long it waited, in milliseconds, and whether the port is still down. May sleep.
    pub(crate) fn wait_mad_port_up(
        &self,
        max_ms: u32,
        poll_ms: u32,
        stop: impl Fn() -> bool,
    ) -> (u32, bool) {
        let mut waited = 0;
        while waited < max_ms && self.mad_port_down() && !stop() {
            fsleep(Delta::from_millis(poll_ms.into()));
            waited += poll_ms;
        }
        (waited, self.mad_port_down())
    }

    /// The port of the device the id is bound to (after address resolution, or on an adopted
    /// id).
    pub(crate) fn port_num(&self) -> u32 {
        // SAFETY: The id is live; its port is set with its device and read as a plain value.
        unsafe { (*self.core.as_ptr()).port_num }
    }

    /// The device the id is bound to (after address resolution, or on an adopted id), with a
    /// reference of its own; `ENODEV` if there is none or it is going away.
    pub(crate) fn device(&self) -> Result<Device> {
        // SAFETY: The id is live; its `device` is null or a device the id keeps registered.
        let dev = unsafe { (*self.core.as_ptr()).device };
        // SAFETY: `dev` is null or a registered device (see above).
        unsafe { Device::get(dev) }
    }
}

/// A connection request on a listener, valid during [`Handler::connect_request`].
///
/// # Invariants
///
/// `id` is the new cm id of the request, whose event rdma_cm is delivering on this task with
/// the id's handler lock held; `adopted` is the adapter's record of an adoption.
pub(crate) struct ConnectRequest<'a, C: Handler> {
    id: *mut bindings::rdma_cm_id,
    event: &'a Event,
    adopted: &'a Cell<*mut c_void>,
    _p: PhantomData<C>,
}

impl<C: Handler> ConnectRequest<'_, C> {
    /// The private data of the request (may be empty).
    pub(crate) fn private_data(&self) -> &[u8] {
        private_data(self.event)
    }

    /// The peer's initiator depth.
    pub(crate) fn initiator_depth(&self) -> u8 {
        self.event.conn.initiator_depth
    }

    /// Takes ownership of the new cm id, whose events go to `handler` from now on. The owner
    /// then creates a QP and calls [`Id::accept`] or [`Id::reject`], usually from another
    /// context. If this fails, rdma_cm refuses and destroys the request.
    pub(crate) fn adopt(self, handler: C, flags: kernel::alloc::Flags) -> Result<Id<C>> {
        let ctx = KBox::new(
            Context {
                handler,
                // This event runs on the new id: mark it, so that a drop inside the handler
                // is detected (the adapter clears the mark).
                running: Atomic::new(Task::current_raw()),
                orphaned: Atomic::new(false),
            },
            flags,
        )?;
        let id = NonNull::new(self.id).ok_or(EINVAL)?;
        let slot = UniqueArc::<Core<C>>::new_uninit(flags)?;
        let ctx = ctx.into_foreign();
        // SAFETY: The id is live, and by the type invariants rdma_cm holds its handler lock on
        // this task, so no other event of it reads the handler or context concurrently.
        unsafe {
            (*self.id).context = ctx;
            (*self.id).event_handler = Some(Adapter::<C>::event);
        }
        self.adopted.set(ctx);
        COUNTERS.ids.alloc();
        // INVARIANT: the id is owned now, with `ctx` as context and `C`'s adapter as handler.
        let core = slot.write(Core {
            id,
            ctx,
            has_qp: Atomic::new(false),
            _p: PhantomData,
        });
        Ok(Id { core: core.into() })
    }
}

/// What the handlers are told of a `struct rdma_cm_event`, copied from it.
///
/// # Invariants
///
/// `conn.private_data` is null or rdma_cm's buffer of `conn.private_data_len` bytes, valid
/// during the event this was copied from, which outlives the copy.
struct Event {
    /// `event`: the `enum rdma_cm_event_type` value.
    kind: u32,
    /// `status`: a -errno, or the reject reason for `REJECTED`.
    status: c_int,
    /// `param.conn` of `CONNECT_REQUEST`, `ESTABLISHED` and `REJECTED`, which alone read it;
    /// zeroes (no private data) for any other event.
    conn: bindings::rdma_conn_param,
}

impl Event {
    /// Copies the parts of `event` the handlers read.
    ///
    /// # Safety
    ///
    /// `event` is the valid event rdma_cm is delivering, and the copy is dropped before the
    /// event's handler returns.
    unsafe fn new(event: *const bindings::rdma_cm_event) -> Self {
        // SAFETY: By the safety requirements `event` is valid for reads.
        let (kind, status) = unsafe { ((*event).event, (*event).status) };
        let conn = match kind {
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_REQUEST
            | bindings::rdma_cm_event_type_RDMA_CM_EVENT_ESTABLISHED
            | bindings::rdma_cm_event_type_RDMA_CM_EVENT_REJECTED => {
                // SAFETY: As above; rdma_cm fills `param.conn` (plain data: a pointer and
                // integers) for these events.
                unsafe { (*event).param.conn }
            }
            _ => bindings::rdma_conn_param::default(),
        };
        // INVARIANT: `conn` is rdma_cm's, valid during the event (the safety requirements), or
        // has no private data.
        Self { kind, status, conn }
    }
}

fn private_data(ev: &Event) -> &[u8] {
    if ev.conn.private_data.is_null() {
        return &[];
    }
    // SAFETY: By the type invariants of `Event`, `private_data` is rdma_cm's buffer of
    // `private_data_len` bytes, valid during the event, which outlives `ev`.
    unsafe {
        core::slice::from_raw_parts(ev.conn.private_data.cast(), ev.conn.private_data_len.into())
    }
}

fn status(ev: &Event) -> Error {
    Error::from_errno(ev.status)
}

/// Bridges rdma_cm events to a [`Handler`].
struct Adapter<H: Handler>(PhantomData<H>);

impl<H: Handler> Adapter<H> {
    /// # Safety
    ///
    /// Called by rdma_cm for an id created or adopted with this adapter, whose context is a
    /// live `Context<H>` (or, for `CONNECT_REQUEST`, a new id carrying its listener's context).
    unsafe extern "C" fn event(
        id: *mut bindings::rdma_cm_id,
        event: *mut bindings::rdma_cm_event,
    ) -> c_int {
        // SAFETY: rdma_cm passes a valid event for the duration of the call, which `ev` does
        // not outlive.
        let ev = unsafe { Event::new(event) };
        // SAFETY: `id` is valid during its event, and its context is set before events can be
        // delivered to this handler.
        let ctx_ptr = unsafe { (*id).context };
        // SAFETY: By the function's safety requirements `ctx_ptr` is a live `Context<H>`: it is
        // freed only after the id is destroyed, which waits for this event (or is done by us
        // below).
        let ctx = unsafe { KBox::<Context<H>>::borrow(ctx_ptr) };
        let h = &ctx.handler;
        let kind = ev.kind;
        ctx.running.store(Task::current_raw(), Release);
        let adopted = Cell::new(core::ptr::null_mut());
        match kind {
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_RESOLVED => h.addr_resolved(),
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_ERROR => h.addr_error(status(&ev)),
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ROUTE_RESOLVED => h.route_resolved(),
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ROUTE_ERROR => h.route_error(status(&ev)),
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_REQUEST => {
                // INVARIANT: `id` is the new id of this request, its handler lock held.
                h.connect_request(ConnectRequest {
                    id,
                    event: &ev,
                    adopted: &adopted,
                    _p: PhantomData,
                })
            }
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ESTABLISHED => {
                h.established(private_data(&ev))
            }
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_ERROR => {
                h.connect_error(status(&ev))
            }
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_UNREACHABLE => h.unreachable(status(&ev)),
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_REJECTED => {
                h.rejected(ev.status, private_data(&ev))
            }
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_DISCONNECTED => h.disconnected(),
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_DEVICE_REMOVAL => h.device_removal(),
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_CHANGE => h.addr_change(),
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_TIMEWAIT_EXIT => h.timewait_exit(),
            _ => h.other(i32::try_from(kind).unwrap_or(i32::MAX), ev.status),
        }
        // Only our own mark: a request on another device may have started since (see
        // `Context::running`).
        let _ = ctx
            .running
            .cmpxchg(Task::current_raw(), core::ptr::null_mut(), Release);

        if kind == bindings::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_REQUEST {
            if ctx.orphaned.load(Acquire) {
                // The listener was dropped inside its own event; its id cannot be destroyed
                // from here (the return value is about the new id), so it is leaked.
                pr_err!("cm listener dropped inside its own connect request handler: leaked\n");
            }
            let new = adopted.get();
            if new.is_null() {
                // Not adopted: rdma_cm refuses and destroys the new id.
                return 1;
            }
            // SAFETY: `new` is the live `Context<H::Conn>` of the adopted id, which cannot be
            // destroyed before this event ends.
            let nctx = unsafe { KBox::<Context<H::Conn>>::borrow(new) };
            nctx.running.store(core::ptr::null_mut(), Release);
            if nctx.orphaned.load(Acquire) {
                // SAFETY: The owner dropped the adopted id; rdma_cm destroys it when we return
                // non-zero and delivers no more events, so the context is ours to free.
                drop(unsafe { KBox::<Context<H::Conn>>::from_foreign(new) });
                COUNTERS.ids.free();
                return 1;
            }
            return 0;
        }
        if ctx.orphaned.load(Acquire) {
            // SAFETY: The owner dropped the `Id` inside this event; rdma_cm destroys the id when
            // we return non-zero and delivers no more events, so the context is ours to free.
            drop(unsafe { KBox::<Context<H>>::from_foreign(ctx_ptr) });
            COUNTERS.ids.free();
            return 1;
        }
        0
    }
}

// What the server transport needs of cm ids besides the above.
impl<H: Handler> Id<H> {
    /// Restricts an IPv6 listener to IPv6 (`rdma_set_afonly`), so that an IPv4 listener can
    /// share its port. Before [`Id::bind_addr`].
    pub(crate) fn set_afonly(&self, afonly: bool) -> Result {
        // SAFETY: The id is live.
        to_result(unsafe {
            bindings::rpcrdma_shim_cm_set_afonly(self.core.as_ptr(), i32::from(afonly))
        })
    }

    /// The local and the peer's address (`route.addr.src_addr` and `dst_addr`), each `None`
    /// while unset.
    pub(crate) fn addrs(&self) -> (Option<SockAddr>, Option<SockAddr>) {
        let len = size_of::<bindings::__kernel_sockaddr_storage>();
        let id = self.core.as_ptr();
        // SAFETY: The id is live; this only takes the addresses of two of its fields.
        let (local, peer) = unsafe {
            (
                (&raw const (*id).route.addr.src_addr).cast::<bindings::sockaddr>(),
                (&raw const (*id).route.addr.dst_addr).cast::<bindings::sockaddr>(),
            )
        };
        // SAFETY: Both point to a `struct sockaddr_storage` of the live id (`route.addr`),
        // aligned for any address and `len` bytes long. rdma_cm writes them only while it
        // resolves or binds the id, which its owner does not do while it asks for them.
        unsafe {
            (
                SockAddr::from_raw(local, len),
                SockAddr::from_raw(peer, len),
            )
        }
    }

    /// Whether the id's port speaks iWARP, InfiniBand or RoCE.
    pub(crate) fn fabric_ok(&self) -> bool {
        // SAFETY: The id is live.
        unsafe { bindings::rpcrdma_shim_cm_id_fabric_ok(self.core.as_ptr()) }
    }

    /// `rdma_rw_mr_factor`: how many rdma_rw contexts (MRs, or on a device that needs none,
    /// work requests of `max_sge_rd` pages) moving `pages` pages takes on the id's port.
    pub(crate) fn rw_mr_factor(&self, pages: u32) -> u32 {
        // SAFETY: The id is live.
        unsafe { bindings::rpcrdma_shim_cm_id_rw_mr_factor(self.core.as_ptr(), pages) }
    }
}

impl SockAddr {
    /// The address without the port, for messages: see [`Host`].
    pub(crate) fn host(&self) -> Host<'_> {
        Host(self)
    }
}

/// The address of a [`SockAddr`] as the kernel's `%pI4` and `%pI6c` print it: `a.b.c.d`, or the
/// RFC 5952 text of an IPv6 address (lower-case hex groups, the longest run of two or more zero
/// groups, the first of equal ones, shortened to `::`; IPv4-mapped as `::ffff:a.b.c.d`).
pub(crate) struct Host<'a>(&'a SockAddr);

impl kernel::fmt::Display for Host<'_> {
    fn fmt(&self, f: &mut kernel::fmt::Formatter<'_>) -> kernel::fmt::Result {
        let addr = match self.0 {
            SockAddr::V4 {
                addr: [a, b, c, d], ..
            } => return write!(f, "{a}.{b}.{c}.{d}"),
            SockAddr::V6 { addr, .. } => addr,
        };
        if addr[..10].iter().all(|&b| b == 0) && addr[10] == 0xff && addr[11] == 0xff {
            let [a, b, c, d] = [addr[12], addr[13], addr[14], addr[15]];
            return write!(f, "::ffff:{a}.{b}.{c}.{d}");
        }
        let mut g = [0u16; 8];
        for (i, pair) in addr.chunks_exact(2).enumerate() {
            g[i] = u16::from_be_bytes([pair[0], pair[1]]);
        }
        // The longest run of zero groups: (start, length).
        let (mut run, mut i) = ((g.len(), 0), 0);
        while i < g.len() {
            let start = i;
            while i < g.len() && g[i] == 0 {
                i += 1;
            }
            if i - start > run.1 {
                run = (start, i - start);
            }
            i += 1;
        }
        if run.1 < 2 {
            run = (g.len(), 0);
        }
        let mut i = 0;
        while i < g.len() {
            if i == run.0 {
                f.write_str("::")?;
                i += run.1;
                continue;
            }
            if i > 0 && i != run.0 + run.1 {
                f.write_str(":")?;
            }
            write!(f, "{:x}", g[i])?;
            i += 1;
        }
        Ok(())
    }
}

impl kernel::fmt::Display for SockAddr {
    /// `a.b.c.d:port` or `[ipv6]:port`, the address as [`Host`] prints it.
    fn fmt(&self, f: &mut kernel::fmt::Formatter<'_>) -> kernel::fmt::Result {
        match self {
            Self::V4 { port, .. } => {
                self.host().fmt(f)?;
                write!(f, ":{port}")
            }
            Self::V6 { port, .. } => {
                f.write_str("[")?;
                self.host().fmt(f)?;
                write!(f, "]:{port}")
            }
        }
    }
}
