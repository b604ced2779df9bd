// SPDX-License-Identifier: GPL-2.0

//! Server transport class: the `svc_xprt_class` named `rdma` that nfsd listens on.
//!
//! C header: [`include/linux/sunrpc/svc_xprt.h`](srctree/include/linux/sunrpc/svc_xprt.h)

use core::marker::PhantomData;

use kernel::{
    error::to_result,
    prelude::*, //
};

use super::xprt::Family;
use crate::bindings;

/// The arguments of `xpo_create`: where to listen, borrowed for the call.
///
/// # Invariants
///
/// `sa` is null or points to a valid `struct sockaddr` for the lifetime `'a`.
pub(crate) struct CreateArgs<'a> {
    sa: *const bindings::sockaddr,
    flags: i32,
    _p: PhantomData<&'a bindings::sockaddr>,
}

impl CreateArgs<'_> {
    /// Address family of the listening address.
    pub(crate) fn family(&self) -> Family {
        // SAFETY: By the type invariant `self.sa` is null or a valid `struct sockaddr`, which
        // the helper accepts.
        Family::from(unsafe { bindings::rpcrdma_shim_sockaddr_family(self.sa) })
    }

    /// The `SVC_SOCK_*` flags of the request.
    pub(crate) fn flags(&self) -> i32 {
        self.flags
    }
}

/// The server-side RDMA transport.
pub(crate) trait Transport {
    /// Creates a listener (`svc_xprt_ops::xpo_create`).
    ///
    /// Until the transport is complete it returns an error, which nfsd reports to the writer of
    /// `/proc/fs/nfsd/portlist`.
    fn create(args: &CreateArgs<'_>) -> Result<core::convert::Infallible>;
}

/// Bridges the C callbacks to a [`Transport`].
struct Adapter<T: Transport>(PhantomData<T>);

impl<T: Transport> Adapter<T> {
    const OPS: bindings::rpcrdma_shim_svc_ops = bindings::rpcrdma_shim_svc_ops {
        create: Some(Self::create_callback),
    };

    /// # Safety
    ///
    /// Called by sunrpc with `sa` null or valid for `salen` bytes, outliving the call.
    unsafe extern "C" fn create_callback(
        _serv: *mut bindings::svc_serv,
        _net: *mut bindings::net,
        sa: *mut bindings::sockaddr,
        _salen: c_int,
        flags: c_int,
    ) -> *mut bindings::svc_xprt {
        // INVARIANT: sunrpc passes a null or valid `sockaddr` for the duration of the call.
        let args = CreateArgs {
            sa,
            flags,
            _p: PhantomData,
        };
        match T::create(&args) {
            Ok(never) => match never {},
            Err(e) => e.to_ptr(),
        }
    }
}

/// A registration of the `rdma` server transport class; unregistered on drop.
///
/// # Invariants
///
/// While a `Registration` exists, the C class is registered with `Adapter::<T>::OPS`.
pub(crate) struct Registration<T: Transport> {
    _p: PhantomData<T>,
}

impl<T: Transport> Registration<T> {
    /// Registers the class. Fails with `EEXIST` if another module (rpcrdma.ko) holds the name.
    pub(crate) fn new() -> Result<Self> {
        let ops: &'static bindings::rpcrdma_shim_svc_ops = &Adapter::<T>::OPS;
        // SAFETY: `ops` is a static table whose callbacks stay valid while the module is loaded,
        // which outlives the registration (it is undone in `drop`).
        to_result(unsafe { bindings::rpcrdma_shim_svc_register(ops) })?;
        // INVARIANT: The class was registered just above.
        Ok(Self { _p: PhantomData })
    }
}

impl<T: Transport> Drop for Registration<T> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the class is registered.
        unsafe { bindings::rpcrdma_shim_svc_unregister() };
    }
}
