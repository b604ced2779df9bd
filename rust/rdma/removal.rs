// SPDX-License-Identifier: GPL-2.0

//! Device removal notifications through the module's `ib_client` (the C module's
//! `rpcrdma_rn_register` / `rpcrdma_rn_unregister`, `net/sunrpc/xprtrdma/ib_client.c`).
//!
//! [`Client`] registers the `ib_client` "rpcrdma_rs" (the object is C's, `shim/ib_client.c`;
//! its callbacks and registry are here) for the module's lifetime. The client keeps a list of
//! the devices it knows ([`DEVICES`]) and, per device, the notifications registered on it. A
//! connection that allocated resources on a device holds a [`Notification`] on it: when the
//! device is being unregistered, the ib_core calls the client's remove callback (before
//! rdma_cm's, as clients are removed in reverse order of registration), which takes the device
//! off the list (a late registration fails with `ENETUNREACH`), calls
//! [`RemovalHandler::device_removed`] of every notification on the device and then waits until
//! each of them is dropped. The owner must therefore drop the notification, after everything
//! it allocated on the device, soon after the callback: removal (and `rdma link delete`) waits
//! for it.
//!
//! The same client hears of each port's link going down and up (`IB_EVENT_PORT_ERR`,
//! `IB_EVENT_PORT_ACTIVE`, through the shim's per-device `ib_event_handler`) and passes it on
//! to every notification on the device ([`RemovalHandler::port_changed`]).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h) (`struct ib_client`,
//! `struct ib_event_handler`)

use core::ffi::{
    c_int,
    c_void, //
};

use kernel::{
    error::to_result,
    new_condvar,
    new_mutex,
    prelude::*,
    str::CStr,
    sync::{
        atomic::{
            Atomic,
            Relaxed, //
        },
        Arc,
        CondVar,
        CondVarTimeoutResult,
        Mutex, //
    },
    time::msecs_to_jiffies, //
};

use super::{
    verbs::Device,
    COUNTERS, //
};
use crate::bindings;

/// Seconds between warnings while a removal waits for notifications to go.
const WARN_SECS: u32 = 10;

kernel::sync::global_lock! {
    // SAFETY: Initialized by `Client::register` before the ib_client, the only other user
    // besides `Notification`s (which need a registered client), is registered.
    unsafe(uninit) static DEVICES: Mutex<KVec<Arc<Rd>>> = KVec::new();
}

/// Whether [`DEVICES`] is initialized.
static DEVICES_INIT: Atomic<bool> = Atomic::new(false);

/// The client's data on one device (`struct rpcrdma_device` in the C module): the
/// notifications registered on it. On [`DEVICES`] from the client's `add` callback until its
/// `remove` callback starts.
///
/// Lock order: [`DEVICES`], then `state`.
#[pin_data]
struct Rd {
    /// The device, only compared with others (its address while the client knows it).
    device: usize,
    #[pin]
    state: Mutex<RdState>,
    /// Signalled when the last notification goes while the device is being removed.
    #[pin]
    gone: CondVar,
}

/// What [`Rd::state`] protects.
struct RdState {
    /// The notifications on the device, in registration order.
    rns: KVec<Rn>,
    /// The id of the next notification.
    next_id: u64,
    /// Whether the device's removal started (it is off [`DEVICES`]).
    removing: bool,
}

/// One notification on an [`Rd`].
struct Rn {
    /// Tells the [`Notification`] that owns this entry apart from the others on the device.
    id: u64,
    handler: Arc<dyn RemovalHandler>,
}

impl Rd {
    /// The client's `add` callback (`rpcrdma_add_one`): a new device is registered, or the
    /// client is. Returns 0 with the client's data on the device in `*data`, or a negative
    /// errno (then the client has no data on the device).
    ///
    /// # Safety
    ///
    /// Called by the shim's ib_client with a registered device; `data` is valid for a write.
    unsafe extern "C" fn add(device: *mut bindings::ib_device, data: *mut *mut c_void) -> c_int {
        let rd = match Arc::pin_init(
            pin_init!(Rd {
                device: device as usize,
                state <- new_mutex!(RdState {
                    rns: KVec::new(),
                    next_id: 0,
                    removing: false,
                }),
                gone <- new_condvar!("rpcrdma_rs_removal"),
            }),
            GFP_KERNEL,
        ) {
            Ok(rd) => rd,
            Err(e) => return e.to_errno(),
        };
        if let Err(e) = DEVICES.lock().push(rd.clone(), GFP_KERNEL) {
            return Error::from(e).to_errno();
        }
        // SAFETY: `data` is valid for a write (function requirement). The `Arc` reference
        // handed over is lent to `port_event` and taken back by `remove`.
        unsafe { *data = rd.into_raw().cast_mut().cast() };
        0
    }

    /// The shim's port event callback: port `port` of the device went down (`PORT_ERR`) or
    /// came up (`PORT_ACTIVE`, `active`). Tells every notification on the device.
    ///
    /// # Safety
    ///
    /// Called by the shim's ib_client, in process context, with the `data` its `add` callback
    /// gave, before its `remove` callback for the device runs.
    unsafe extern "C" fn port_event(data: *mut c_void, port: u32, active: bool) {
        // SAFETY: `data` is the reference `add` handed over, which `remove` has not taken back
        // yet (function requirement): the `Rd` lives at least until this returns.
        let rd = unsafe { &*data.cast_const().cast::<Rd>() };
        let st = rd.state.lock();
        if st.removing {
            return;
        }
        for rn in st.rns.iter() {
            rn.handler.port_changed(port, active);
        }
    }

    /// The client's `remove` callback (`rpcrdma_remove_one`): `device` is being unregistered
    /// (or the client is). Calls every notification's handler, then waits until every
    /// notification on the device is dropped, that is until every connection let go of it.
    ///
    /// # Safety
    ///
    /// Called by the shim's ib_client, once, with the `data` its `add` callback gave for the
    /// registered `device`, after the last [`Rd::port_event`] for it.
    unsafe extern "C" fn remove(device: *mut bindings::ib_device, data: *mut c_void) {
        // SAFETY: `data` is the reference `add` handed over, given back once, here.
        let rd = unsafe { Arc::<Rd>::from_raw(data.cast_const().cast()) };
        DEVICES.lock().retain(|r| !Arc::ptr_eq(r, &rd));
        let mut st = rd.state.lock();
        st.removing = true;
        for rn in st.rns.iter() {
            rn.handler.device_removed();
        }
        if st.rns.is_empty() {
            return;
        }
        // SAFETY: The device is registered until this callback returns.
        let name = unsafe { device_name(device) };
        pr_info!(
            "{} is being removed: waiting for {} connection(s) to let go of it\n",
            name,
            st.rns.len()
        );
        while !st.rns.is_empty() {
            let timeout = msecs_to_jiffies(WARN_SECS * 1000);
            match rd.gone.wait_interruptible_timeout(&mut st, timeout) {
                CondVarTimeoutResult::Timeout => pr_warn!(
                    "{} removal still waits for {} connection(s)\n",
                    name,
                    st.rns.len()
                ),
                CondVarTimeoutResult::Woken { .. } => {}
                // A signal pending for the task removing the device: wait without a timer.
                CondVarTimeoutResult::Signal { .. } => rd.gone.wait(&mut st),
            }
        }
        pr_info!("{}: every connection let go of it\n", name);
    }
}

/// The name of `device` (`dev_name`).
///
/// # Safety
///
/// `device` stays registered for `'a`.
unsafe fn device_name<'a>(device: *mut bindings::ib_device) -> &'a CStr {
    // SAFETY: The device is valid for `'a` (the caller's guarantee), and so is its name, a
    // NUL-terminated string.
    unsafe { CStr::from_char_ptr(bindings::rpcrdma_shim_device_name(device)) }
}

/// The callbacks of the shim's ib_client.
static OPS: bindings::rpcrdma_shim_ib_client_ops = bindings::rpcrdma_shim_ib_client_ops {
    add: Some(Rd::add),
    remove: Some(Rd::remove),
    port_event: Some(Rd::port_event),
};

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
        if !DEVICES_INIT.xchg(true, Relaxed) {
            // SAFETY: Called once: `DEVICES_INIT` was false, and nothing used `DEVICES` yet
            // (only the client's callbacks and notifications do, which need the client).
            unsafe { DEVICES.init() };
        }
        // SAFETY: The shim's client is not registered yet: only `Client` registers it, and
        // the module creates one. `OPS` is static.
        to_result(unsafe { bindings::rpcrdma_shim_ib_client_register(&OPS) })
            .inspect_err(|_| release_devices())?;
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
        release_devices();
    }
}

/// Frees [`DEVICES`]' buffer once the client is unregistered (every device's `remove` took
/// its entry off): a static is never dropped, so its vector would outlive the module. Found
/// by kmemleak on the debug kernel (8 bytes per load).
fn release_devices() {
    let old = core::mem::take(&mut *DEVICES.lock());
    drop(old);
}

/// What a [`Notification`]'s owner does when its device is being removed.
pub(crate) trait RemovalHandler: Send + Sync + 'static {
    /// The device is being removed: schedule the teardown of everything allocated on it,
    /// including the [`Notification`], and return. Runs in process context, with the device's
    /// notifications locked: it must not block for long, and must not drop any notification
    /// itself (that would deadlock). Called at most once.
    fn device_removed(&self);

    /// Port `port` of the device went down (`IB_EVENT_PORT_ERR`) or came up
    /// (`IB_EVENT_PORT_ACTIVE`, `active`). Runs in process context with the device's
    /// notifications locked, as [`RemovalHandler::device_removed`], and never after it. The
    /// default ignores it.
    fn port_changed(&self, _port: u32, _active: bool) {}
}

/// A registration for the removal of one device (`rpcrdma_notification`). Dropping it
/// unregisters, after which the handler is neither running nor called again.
///
/// # Invariants
///
/// `rd.state.rns` holds one entry with `id`, whose handler is `_handler`, until `self` is
/// dropped.
pub(crate) struct Notification<H: RemovalHandler> {
    rd: Arc<Rd>,
    id: u64,
    _handler: Arc<H>,
}

impl<H: RemovalHandler> Notification<H> {
    /// Registers `handler` for the removal of `dev`. `ENETUNREACH` if the device is already
    /// being removed (or unknown to the client), as `rpcrdma_rn_register`. May sleep.
    pub(crate) fn new(dev: &Device, handler: H, flags: kernel::alloc::Flags) -> Result<Self> {
        let handler = Arc::new(handler, flags)?;
        let devices = DEVICES.lock();
        let rd = devices
            .iter()
            .find(|rd| rd.device == dev.as_ptr() as usize)
            .cloned()
            // Unknown to the client (its add failed) or being removed.
            .ok_or(ENETUNREACH)?;
        let mut st = rd.state.lock();
        let id = st.next_id;
        st.next_id += 1;
        let entry: Arc<dyn RemovalHandler> = handler.clone();
        st.rns.push(Rn { id, handler: entry }, flags)?;
        drop(st);
        drop(devices);
        COUNTERS.removals.alloc();
        // INVARIANT: The entry with `id` and `handler` was pushed above.
        Ok(Self {
            rd,
            id,
            _handler: handler,
        })
    }
}

impl<H: RemovalHandler> Drop for Notification<H> {
    fn drop(&mut self) {
        let mut st = self.rd.state.lock();
        // By the type invariants the entry is there; removing keeps the others in order.
        if let Some(i) = st.rns.iter().position(|rn| rn.id == self.id) {
            drop(st.rns.remove(i));
        }
        if st.removing && st.rns.is_empty() {
            self.rd.gone.notify_all();
        }
        drop(st);
        COUNTERS.removals.free();
    }
}
