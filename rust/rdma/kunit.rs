// SPDX-License-Identifier: GPL-2.0

//! KUnit tests of the RDMA abstractions; they run when the module loads (CONFIG_KUNIT=y).
//!
//! `loopback_qp` runs on a real (soft) RDMA device when one has the address 192.0.2.1 (the
//! kselftest `rdma_abstractions.sh` sets that up with rxe and with siw) and is skipped otherwise.

use kernel::{
    prelude::*,
    str::CStr, //
};

use crate::bindings;

/// Marks the running KUnit test skipped, with `reason`; does nothing outside a test.
pub(crate) fn kunit_skip(reason: &CStr) {
    // SAFETY: `reason` is a NUL-terminated string valid for the call; the shim checks whether a
    // test runs on this task.
    unsafe { bindings::rpcrdma_shim_kunit_skip(reason.as_char_ptr()) };
}

#[kernel::macros::kunit_tests(rpcrdma_rs_rdma)]
mod tests {
    use kernel::{
        c_str,
        prelude::*,
        str::CString,
        sync::{
            atomic::{
                Atomic,
                Relaxed, //
            },
            Arc,
            Completion, //
        },
    };

    use super::kunit_skip;
    use crate::bindings;
    use crate::rdma::{
        cm::{
            ConnParam,
            Handler,
            Id,
            Net,
            RawSockAddr,
            SockAddr, //
        },
        removal::{
            Notification,
            RemovalHandler, //
        },
        verbs::{
            posted_ahead,
            Attrs,
            Cq,
            Direction,
            DmaBuf,
            Done,
            Pd,
            Qp,
            QpCaps,
            Wc,
            Wr,
            IB_WC_WR_FLUSH_ERR, //
        },
        COUNTERS,
    };

    const NOT_YET: i32 = i32::MIN;

    #[pin_data]
    struct Events {
        #[pin]
        addr: Completion,
        #[pin]
        route: Completion,
        addr_status: Atomic<i32>,
        route_status: Atomic<i32>,
        recv_status: Atomic<i32>,
        recvs: Atomic<i32>,
    }

    struct Client {
        ev: Arc<Events>,
    }

    impl Handler for Client {
        type Conn = Self;

        fn addr_resolved(&self) {
            self.ev.addr_status.store(0, Relaxed);
            self.ev.addr.complete_all();
        }

        fn addr_error(&self, err: Error) {
            self.ev.addr_status.store(err.to_errno(), Relaxed);
            self.ev.addr.complete_all();
        }

        fn route_resolved(&self) {
            self.ev.route_status.store(0, Relaxed);
            self.ev.route.complete_all();
        }

        fn route_error(&self, err: Error) {
            self.ev.route_status.store(err.to_errno(), Relaxed);
            self.ev.route.complete_all();
        }
    }

    struct Recv {
        ev: Arc<Events>,
    }

    impl Done for Recv {
        fn done(wr: KBox<Wr<Self>>, wc: &Wc) {
            wr.data().ev.recv_status.store(wc.status(), Relaxed);
            wr.data().ev.recvs.add(1, Relaxed);
        }
    }

    /// A removal handler that counts its calls.
    struct Removed(Arc<Events>);

    impl RemovalHandler for Removed {
        fn device_removed(&self) {
            self.0.recvs.add(100, Relaxed);
        }
    }

    #[test]
    fn conn_param_private_data_limit() {
        let long = [0u8; 256];
        let p = ConnParam {
            private_data: &long,
            ..Default::default()
        };
        struct Nop;
        impl Handler for Nop {
            type Conn = Self;
        }
        // No device is needed to see the length check refuse before calling rdma_cm.
        let id = Net::init().and_then(|net| Id::new(net, Nop, GFP_KERNEL));
        assert!(id.is_ok());
        if let Ok(id) = id {
            assert_eq!(id.connect(&p), Err(EINVAL));
        }
        assert_eq!(COUNTERS.ids.live(), 0);
    }

    /// `SockAddr`'s text is what `%pI4`/`%pI6c` print (RFC 5952 for IPv6).
    #[test]
    fn sockaddr_text() -> Result {
        let v6 = |g: [u16; 8]| {
            let mut addr = [0u8; 16];
            for (i, x) in g.iter().enumerate() {
                addr[2 * i..2 * i + 2].copy_from_slice(&x.to_be_bytes());
            }
            SockAddr::V6 {
                addr,
                port: 20049,
                scope_id: 0,
            }
        };
        let cases = [
            (
                SockAddr::V4 {
                    addr: [192, 0, 2, 1],
                    port: 20049,
                },
                c_str!("192.0.2.1:20049"),
            ),
            (
                v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 1]),
                c_str!("[2001:db8::1]:20049"),
            ),
            (v6([0; 8]), c_str!("[::]:20049")),
            (v6([0, 0, 0, 0, 0, 0, 0, 1]), c_str!("[::1]:20049")),
            (v6([0xfe80, 0, 0, 0, 0, 0, 0, 0]), c_str!("[fe80::]:20049")),
            (
                v6([0x2001, 0xdb8, 0, 1, 0, 0, 0, 1]),
                c_str!("[2001:db8:0:1::1]:20049"),
            ),
            (
                v6([0x2001, 0, 0, 1, 0, 0, 1, 1]),
                c_str!("[2001::1:0:0:1:1]:20049"),
            ),
            (
                v6([1, 2, 3, 4, 5, 6, 7, 8]),
                c_str!("[1:2:3:4:5:6:7:8]:20049"),
            ),
            (
                v6([0, 0, 0, 0, 0, 0xffff, 0xc000, 0x0201]),
                c_str!("[::ffff:192.0.2.1]:20049"),
            ),
        ];
        for (addr, want) in cases {
            let got = CString::try_from_fmt(fmt!("{addr}"))?;
            assert_eq!(got.to_bytes(), want.to_bytes());
        }
        Ok(())
    }

    /// `SockAddr` to a `struct sockaddr_in`/`sockaddr_in6` and back, checked against the
    /// kernel's own reading of it (`%pISpc`, and `%pISc` against `Host`); a wrong family, or an
    /// address shorter than its family's structure, parses as `None`.
    #[test]
    fn sockaddr_raw() -> Result {
        let cases = [
            SockAddr::V4 {
                addr: [192, 0, 2, 1],
                port: 20049,
            },
            SockAddr::V6 {
                addr: [
                    0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x12, 0x34,
                ],
                port: 2049,
                scope_id: 3,
            },
        ];
        for addr in cases {
            let raw = addr.to_raw();
            // SAFETY: `raw` is an aligned address structure of `raw.len()` bytes.
            let back = unsafe { SockAddr::from_raw(raw.as_ptr(), raw.len()) };
            assert_eq!(back, Some(addr));
            // SAFETY: As above, one byte short.
            let short = unsafe { SockAddr::from_raw(raw.as_ptr(), raw.len() - 1) };
            assert_eq!(short, None);
            let mut buf = [0u8; 64];
            // SAFETY: `buf` is writable for its length; the format takes one `struct sockaddr`,
            // which `raw` is.
            unsafe {
                kernel::bindings::snprintf(
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    c_str!("%pISpc").as_char_ptr(),
                    raw.as_ptr(),
                )
            };
            let theirs = CStr::from_bytes_until_nul(&buf).map_err(|_| EINVAL)?;
            let ours = CString::try_from_fmt(fmt!("{addr}"))?;
            assert_eq!(theirs.to_bytes(), ours.to_bytes());
        }
        let mut other = cases[0].to_raw();
        if let RawSockAddr::V4(sin) = &mut other {
            sin.sin_family = 1;
        }
        // SAFETY: `other` is an aligned address structure of `other.len()` bytes.
        let back = unsafe { SockAddr::from_raw(other.as_ptr(), other.len()) };
        assert_eq!(back, None);
        // SAFETY: A null address is accepted.
        let null = unsafe { SockAddr::from_raw(core::ptr::null(), 0) };
        assert_eq!(null, None);
        Ok(())
    }

    #[test]
    fn qp_caps_clamp() {
        let attrs = Attrs {
            max_qp_wr: 128,
            max_send_sge: 4,
            max_recv_sge: 1,
            ..Default::default()
        };
        let want = QpCaps {
            max_send_wr: 1000,
            max_recv_wr: 10,
            max_send_sge: 16,
            max_recv_sge: 2,
            max_inline_data: 0,
        };
        let got = want.clamp(&attrs);
        assert_eq!(got.max_send_wr, 127);
        assert_eq!(got.max_recv_wr, 10);
        assert_eq!(got.max_send_sge, 4);
        assert_eq!(got.max_recv_sge, 1);
    }

    /// How many `REG_MR`s of a chain the device refused it took ([`posted_ahead`]): those
    /// ahead of the first it refused, all of them if it refused the Send or did not say.
    #[test]
    fn regs_posted_by_bad_wr() {
        let wrs: [bindings::ib_send_wr; 4] = core::array::from_fn(|_| Default::default());
        let p: [*const bindings::ib_send_wr; 4] = core::array::from_fn(|i| &raw const wrs[i]);
        // Three `REG_MR`s, then the Send.
        let regs = &p[..3];
        assert_eq!(posted_ahead(p[0], regs), 0);
        assert_eq!(posted_ahead(p[1], regs), 1);
        assert_eq!(posted_ahead(p[2], regs), 2);
        assert_eq!(posted_ahead(p[3], regs), 3);
        assert_eq!(posted_ahead(core::ptr::null(), regs), 3);
        assert_eq!(posted_ahead(p[3], &[]), 0);
    }

    /// How many `LOCAL_INV`s of a chain the device refused it took ([`posted_ahead`]): those
    /// ahead of the first it refused, all but the last (signaled) one if it refused that one or
    /// did not say, none of a chain of one.
    #[test]
    fn local_invs_posted_by_bad_wr() {
        let wrs: [bindings::ib_send_wr; 3] = core::array::from_fn(|_| Default::default());
        let p: [*const bindings::ib_send_wr; 3] = core::array::from_fn(|i| &raw const wrs[i]);
        // Three `LOCAL_INV`s, the last signaled.
        let ahead = &p[..2];
        assert_eq!(posted_ahead(p[0], ahead), 0);
        assert_eq!(posted_ahead(p[1], ahead), 1);
        assert_eq!(posted_ahead(p[2], ahead), 2);
        assert_eq!(posted_ahead(core::ptr::null(), ahead), 2);
        assert_eq!(posted_ahead(p[0], &p[..0]), 0);
        assert_eq!(posted_ahead(core::ptr::null(), &p[..0]), 0);
    }

    /// cm id, address and route resolution of 192.0.2.1, removal notifications, PD, CQ, QP, one
    /// Receive, drain, and teardown, with every counter back to zero.
    #[test]
    fn loopback_qp() -> Result {
        assert_eq!(COUNTERS.live(), 0);
        let ev = Arc::pin_init(
            pin_init!(Events {
                addr <- Completion::new(),
                route <- Completion::new(),
                addr_status: Atomic::new(NOT_YET),
                route_status: Atomic::new(NOT_YET),
                recv_status: Atomic::new(NOT_YET),
                recvs: Atomic::new(0),
            }),
            GFP_KERNEL,
        )?;
        {
            let id = Id::new(Net::init()?, Client { ev: ev.clone() }, GFP_KERNEL)?;
            let dst = SockAddr::V4 {
                addr: [192, 0, 2, 1],
                port: 20049,
            };
            if id.resolve_addr(&dst, 2000).is_err() {
                kunit_skip(c"no RDMA device has 192.0.2.1");
                return Ok(());
            }
            ev.addr.wait_for_completion();
            if ev.addr_status.load(Relaxed) != 0 {
                kunit_skip(c"no RDMA device has 192.0.2.1");
                return Ok(());
            }
            assert_eq!(id.resolve_route(2000), Ok(()));
            ev.route.wait_for_completion();
            assert_eq!(ev.route_status.load(Relaxed), 0);

            let dev = id.device()?;
            let attrs = dev.attrs();
            assert!(attrs.max_qp_wr > 0 && attrs.max_recv_sge > 0);
            // A removal notification on the device (through the module's ib_client), and
            // another one: both counted, neither called, both gone when dropped.
            let rn = Notification::new(&dev, Removed(ev.clone()), GFP_KERNEL)?;
            let rn2 = Notification::new(&dev, Removed(ev.clone()), GFP_KERNEL)?;
            assert_eq!(COUNTERS.removals.live(), 2);
            drop(rn);
            assert_eq!(COUNTERS.removals.live(), 1);
            assert_eq!(ev.recvs.load(Relaxed), 0);
            let pd = Pd::new(&dev, GFP_KERNEL)?;
            let cq = Cq::new(&dev, 16, 0, GFP_KERNEL)?;
            let caps = QpCaps {
                max_send_wr: 4,
                max_recv_wr: 4,
                max_send_sge: 2,
                max_recv_sge: 1,
                max_inline_data: 0,
            }
            .clamp(&attrs);
            let qp = Qp::new(&id, &pd, &cq, &cq, caps)?;
            assert!(qp.caps().max_recv_wr >= caps.max_recv_wr);
            // One QP per id.
            assert!(Qp::new(&id, &pd, &cq, &cq, caps).is_err());

            let buf = DmaBuf::new(&dev, 1024, Direction::FromDevice, GFP_KERNEL)?;
            let wr = Wr::recv(buf, Recv { ev: ev.clone() }, GFP_KERNEL)?;
            qp.post_recv(wr)?;
            assert_eq!(COUNTERS.posted.live(), 1);
            qp.drain();
            // The Receive came back, flushed, and was dropped by its handler.
            assert_eq!(ev.recvs.load(Relaxed), 1);
            assert_eq!(ev.recv_status.load(Relaxed), IB_WC_WR_FLUSH_ERR);
            assert_eq!(COUNTERS.posted.live(), 0);
            assert_eq!(COUNTERS.dma_maps.live(), 0);
            assert_eq!(COUNTERS.qps.live(), 1);
            assert_eq!(COUNTERS.cqs.live(), 1);
            assert_eq!(COUNTERS.pds.live(), 1);
            assert_eq!(COUNTERS.ids.live(), 1);

            // The cm id goes first here: the QP keeps it (and the CQ and PD) until it is gone.
            drop(id);
            assert_eq!(COUNTERS.ids.live(), 1);
            drop(pd);
            drop(cq);
            assert_eq!(COUNTERS.pds.live(), 1);
            drop(qp);
            assert_eq!(COUNTERS.qps.live(), 0);
            assert_eq!(COUNTERS.cqs.live(), 0);
            assert_eq!(COUNTERS.pds.live(), 0);
            assert_eq!(COUNTERS.ids.live(), 0);
            drop(rn2);
            assert_eq!(COUNTERS.removals.live(), 0);
            drop(dev);
        }
        assert_eq!(COUNTERS.live(), 0);
        Ok(())
    }
}
