// SPDX-License-Identifier: GPL-2.0

//! Cancelling a delayed work item held through an [`Arc`].
//!
//! `kernel::workqueue` can queue an `Arc<T>` as a delayed work item, but has no way to take it
//! back: a per-connection timer (the version 2 keep-alive) would make every close wait out its
//! interval, or leave a queued item behind a module being unloaded. [`cancel_sync`] is
//! `cancel_delayed_work_sync()` for such an item, and gives back the reference the queue held.
//!
//! C header: [`include/linux/workqueue.h`](srctree/include/linux/workqueue.h)

use kernel::{
    bindings, container_of,
    sync::Arc,
    workqueue::{
        HasDelayedWork,
        Work,
        WorkItem, //
    },
};

/// Cancels the delayed work item of `this`, waiting for a running instance of it to end, and
/// returns whether it was queued (its timer pending, or on a queue). The reference a queued
/// item held is dropped here. May sleep; must not be called from the work item itself.
///
/// An item that queues itself again while this runs is cancelled too (as
/// `cancel_delayed_work_sync()` promises); the caller makes sure that nothing queues it after
/// this returns.
pub(crate) fn cancel_sync<T, const ID: u64>(this: &Arc<T>) -> bool
where
    T: WorkItem<ID, Pointer = Arc<T>> + HasDelayedWork<T, ID>,
{
    let ptr = Arc::as_ptr(this).cast_mut();
    // SAFETY: `ptr` points at a live `T`: `this` holds a reference on it.
    let work = unsafe { T::raw_get_work(ptr) };
    // SAFETY: `work` points at the valid `Work<T, ID>` inside `*ptr`.
    let work = unsafe { Work::raw_get(work) };
    // SAFETY: By `HasDelayedWork`'s safety requirements, the `work_struct` of `T` is the `work`
    // field of a `struct delayed_work`, inside the same allocation.
    let dwork = unsafe { container_of!(work, bindings::delayed_work, work) };
    // SAFETY: `dwork` was initialized by `DelayedWork::new` and stays valid while `this` lives.
    let queued = unsafe { bindings::cancel_delayed_work_sync(dwork) };
    if queued {
        // SAFETY: A queued `Arc<T>` item owns the reference its `__enqueue` turned into a raw
        // pointer with `Arc::into_raw`: a pointer to the same `T`, `ptr`. The cancel took the
        // item off its timer or queue, so that reference will never be given to `run`: it is
        // ours to drop.
        drop(unsafe { Arc::from_raw(ptr) });
    }
    queued
}
