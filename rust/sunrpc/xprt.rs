// SPDX-License-Identifier: GPL-2.0

//! Client transport class: what `mount -o proto=rdma` reaches through `xprt_create_transport`.
//!
//! C header: [`include/linux/sunrpc/xprt.h`](srctree/include/linux/sunrpc/xprt.h)

use core::marker::PhantomData;

use kernel::{
    error::to_result,
    prelude::*, //
};

use crate::bindings;

/// Address families a transport can be asked to reach.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    /// `AF_INET`, netid `rdma`.
    Inet,
    /// `AF_INET6`, netid `rdma6`.
    Inet6,
    /// Anything else (sunrpc validated nothing yet).
    Other(u16),
}

impl From<u16> for Family {
    fn from(v: u16) -> Self {
        match v {
            2 => Self::Inet,
            10 => Self::Inet6,
            v => Self::Other(v),
        }
    }
}

/// The arguments of a transport setup (`struct xprt_create`), borrowed for the call.
///
/// # Invariants
///
/// `ptr` points to a valid `struct xprt_create` for the lifetime `'a`.
pub(crate) struct CreateArgs<'a> {
    ptr: *const bindings::xprt_create,
    _p: PhantomData<&'a bindings::xprt_create>,
}

impl CreateArgs<'_> {
    /// Address family of the server to reach.
    pub(crate) fn family(&self) -> Family {
        // SAFETY: By the type invariant `self.ptr` is a valid `struct xprt_create`.
        Family::from(unsafe { bindings::rpcrdma_shim_xprt_create_family(self.ptr) })
    }
}

/// The client-side RDMA transport.
///
/// The transport logic implements this trait; [`Registration`] bridges it to the C class.
pub(crate) trait Transport {
    /// Sets up a new `struct rpc_xprt` for `args` (`xprt_class::setup`).
    ///
    /// Until the transport is complete it returns an error, which sunrpc passes to the mount.
    fn setup(args: &CreateArgs<'_>) -> Result<core::convert::Infallible>;
}

/// Bridges the C callbacks to a [`Transport`].
struct Adapter<T: Transport>(PhantomData<T>);

impl<T: Transport> Adapter<T> {
    const OPS: bindings::rpcrdma_shim_xprt_ops = bindings::rpcrdma_shim_xprt_ops {
        setup: Some(Self::setup_callback),
    };

    /// # Safety
    ///
    /// Called by sunrpc with a valid `struct xprt_create` that outlives the call.
    unsafe extern "C" fn setup_callback(
        args: *mut bindings::xprt_create,
    ) -> *mut bindings::rpc_xprt {
        // INVARIANT: sunrpc passes a valid `xprt_create` for the duration of the call.
        let args = CreateArgs {
            ptr: args,
            _p: PhantomData,
        };
        match T::setup(&args) {
            Ok(never) => match never {},
            Err(e) => e.to_ptr(),
        }
    }
}

/// The `XPRT_TRANSPORT_RDMA` ident shared by the client and server classes.
pub(crate) fn ident() -> i32 {
    // SAFETY: The function only returns a constant.
    unsafe { bindings::rpcrdma_shim_xprt_ident() }
}

/// A registration of the `rdma` client transport class; unregistered on drop.
///
/// # Invariants
///
/// While a `Registration` exists, the C class is registered with `Adapter::<T>::OPS`.
pub(crate) struct Registration<T: Transport> {
    _p: PhantomData<T>,
}

impl<T: Transport> Registration<T> {
    /// Registers the class. Fails with `EEXIST` if another module (rpcrdma.ko) holds the ident.
    pub(crate) fn new() -> Result<Self> {
        let ops: &'static bindings::rpcrdma_shim_xprt_ops = &Adapter::<T>::OPS;
        // SAFETY: `ops` is a static table whose callbacks stay valid while the module is loaded,
        // which outlives the registration (it is undone in `drop`).
        to_result(unsafe { bindings::rpcrdma_shim_xprt_register(ops) })?;
        // INVARIANT: The class was registered just above.
        Ok(Self { _p: PhantomData })
    }
}

impl<T: Transport> Drop for Registration<T> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the class is registered; unregistering waits for nothing
        // and no new `setup` call can start afterwards.
        unsafe { bindings::rpcrdma_shim_xprt_unregister() };
    }
}
