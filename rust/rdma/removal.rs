// SPDX-License-Identifier: GPL-2.0

//! Device removal notifications through the module's `ib_client` (the C module's
//! `rpcrdma_rn_register` / `rpcrdma_rn_unregister`, `net/sunrpc/xprtrdma/ib_client.c`).
//!
//! [`Client`] registers the `ib_client` "rpcrdma_rs" (`shim/ib_client.c`) for the module's
//! lifetime. A connection that allocated resources on a device holds a [`Notification`] on
//! it: when the device is being unregistered, the ib_core calls the client's remove callback
//! (before rdma_cm's, as clients are removed in reverse order of registration), which calls
//! [`RemovalHandler::device_removed`] of every notification on the device and then waits until
//! each of them is dropped. The owner must therefore drop the notification, after everything
//! it allocated on the device, soon after the callback: removal (and `rdma link delete`) waits
//! for it.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h) (`struct ib_client`)

use core::{
    ffi::c_void,
    marker::PhantomData,
    ptr::NonNull, //
};

use kernel::{
    error::to_result,
    prelude::*,
    types::ForeignOwnable, //
};

use super::{
    verbs::Device,
    COUNTERS, //
};
use crate::bindings;

/// The module's `ib_client`, registered while this object lives.
///
/// # Invariants
///
/// The shim's `ib_client` is registered; this is the only object that unregisters it.
pub(crate) struct Client {
    _p: (),
}

impl Client {
    /// Registers the `ib_client` (`ib_register_client`), which adds the per-device data of
    /// every RDMA device, present and future. Once per module, before any [`Notification`].
    pub(crate) fn register() -> Result<Self> {
        // SAFETY: The shim's client is not registered yet: only `Client` registers it, and
        // the module creates one.
        to_result(unsafe { bindings::rpcrdma_shim_ib_client_register() })?;
        // INVARIANT: registered above.
        Ok(Self { _p: () })
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // SAFETY: By the type invariants the client is registered, and only we unregister it.
        // The remove callback of each device waits for the notifications left on it, and there
        // are none: the transports that own them are unregistered before this is dropped.
        unsafe { bindings::rpcrdma_shim_ib_client_unregister() };
    }
}

/// What a [`Notification`]'s owner does when its device is being removed.
pub(crate) trait RemovalHandler: Send + Sync + 'static {
    /// The device is being removed: schedule the teardown of everything allocated on it,
    /// including the [`Notification`], and return. Runs in process context, with the registry
    /// of notifications locked: it must not block for long, and must not drop any
    /// notification itself (that would deadlock). Called at most once.
    fn device_removed(&self);
}

/// A registration for the removal of one device (`rpcrdma_notification`). Dropping it
/// unregisters, after which the handler is neither running nor called again.
///
/// # Invariants
///
/// `rn` is a live notification of the shim, registered with [`Notification::done`] as its
/// callback and `data` as the callback's argument; `data` came from
/// `KBox::<H>::into_foreign` and is freed only after `rn` is unregistered.
pub(crate) struct Notification<H: RemovalHandler> {
    rn: NonNull<bindings::rpcrdma_shim_rn>,
    data: *mut c_void,
    _p: PhantomData<H>,
}

// SAFETY: The notification may be unregistered from any thread; the handler is `Send + Sync`.
unsafe impl<H: RemovalHandler> Send for Notification<H> {}
// SAFETY: `&Notification` only gives access to the handler, which is `Sync`.
unsafe impl<H: RemovalHandler> Sync for Notification<H> {}

impl<H: RemovalHandler> Notification<H> {
    /// Registers `handler` for the removal of `dev`. `ENETUNREACH` if the device is already
    /// being removed (or unknown to the client), as `rpcrdma_rn_register`. May sleep.
    pub(crate) fn new(dev: &Device, handler: H, flags: kernel::alloc::Flags) -> Result<Self> {
        let data = KBox::new(handler, flags)?.into_foreign();
        // SAFETY: `dev` holds a reference on the device, so it is valid during the call; the
        // callback matches the C typedef, and `data` stays valid until the notification is
        // unregistered (the type invariants).
        let rn =
            unsafe { bindings::rpcrdma_shim_rn_register(dev.as_ptr(), Some(Self::done), data) };
        let rn = match kernel::error::from_err_ptr(rn).and_then(|p| NonNull::new(p).ok_or(ENOMEM)) {
            Ok(rn) => rn,
            Err(e) => {
                // SAFETY: `data` came from `into_foreign` above and was not registered.
                drop(unsafe { KBox::<H>::from_foreign(data) });
                return Err(e);
            }
        };
        COUNTERS.removals.alloc();
        // INVARIANT: `rn` is registered with `done` and `data`, which came from `into_foreign`.
        Ok(Self {
            rn,
            data,
            _p: PhantomData,
        })
    }

    /// The shim's callback.
    ///
    /// # Safety
    ///
    /// Called by the shim with the `data` of a registered notification, which is therefore a
    /// live `KBox<H>` (it is freed only after the unregistration, which waits for this call).
    unsafe extern "C" fn done(data: *mut c_void) {
        // SAFETY: By the function's safety requirements `data` is a live `KBox<H>`.
        let h = unsafe { KBox::<H>::borrow(data) };
        h.device_removed();
    }
}

impl<H: RemovalHandler> Drop for Notification<H> {
    fn drop(&mut self) {
        // SAFETY: By the type invariants `rn` is registered; it is unregistered once, here. On
        // return its callback is neither running nor called again.
        unsafe { bindings::rpcrdma_shim_rn_unregister(self.rn.as_ptr()) };
        // SAFETY: `data` came from `into_foreign` and nothing refers to it any more.
        drop(unsafe { KBox::<H>::from_foreign(self.data) });
        COUNTERS.removals.free();
    }
}
