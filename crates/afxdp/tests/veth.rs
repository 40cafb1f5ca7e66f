//! AF_XDP on a real veth pair. Each test builds its own pair: `<ns>a` in the root namespace (the
//! sender) and `<ns>b` inside a fresh network namespace (the receiver, whose kernel counters are
//! the truth), and removes both in a drop guard, panic or not. Needs root; with CI=true a non-root
//! run fails instead of skipping.
#![cfg(target_os = "linux")]

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use linerate_afxdp::{AfXdpError, XdpMode, XskOptions, XskPort};
use linerate_port::{Port, PortError, QueueConfig, TxDesc, TxQueue, Usage};

const FRAME_LEN: u32 = 60;
const ETHERTYPE_LOCAL_EXPERIMENTAL: u16 = 0x88B5;

fn root_or_skip() -> bool {
    linerate_lab::root_or_skip("AF_XDP tests (veth pairs, network namespaces, AF_XDP sockets)")
}

fn run(args: &[&str]) -> String {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {args:?}: {e}"));
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A veth pair with two queues each way: `sender` here, `receiver` in namespace `ns`.
struct Lab {
    ns: String,
    sender: String,
    receiver: String,
}

impl Lab {
    fn new() -> Lab {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let ns = format!(
            "axt{}x{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let lab = Lab {
            sender: format!("{ns}a"),
            receiver: format!("{ns}b"),
            ns,
        };
        // The guard exists before the first command, so a failure halfway still cleans up.
        run(&["ip", "netns", "add", &lab.ns]);
        run(&[
            "ip",
            "link",
            "add",
            &lab.sender,
            "numtxqueues",
            "2",
            "numrxqueues",
            "2",
            "type",
            "veth",
            "peer",
            "name",
            &lab.receiver,
            "numtxqueues",
            "2",
            "numrxqueues",
            "2",
            "netns",
            &lab.ns,
        ]);
        // No IPv6 on the pair: no router solicitations or MLD reports to blur the count.
        run(&[
            "sysctl",
            "-qw",
            &format!("net.ipv6.conf.{}.disable_ipv6=1", lab.sender),
        ]);
        run(&[
            "ip",
            "netns",
            "exec",
            &lab.ns,
            "sysctl",
            "-qw",
            &format!("net.ipv6.conf.{}.disable_ipv6=1", lab.receiver),
        ]);
        run(&["ip", "link", "set", &lab.sender, "up"]);
        run(&["ip", "-n", &lab.ns, "link", "set", &lab.receiver, "up"]);
        lab
    }

    fn receiver_stat(&self, name: &str) -> u64 {
        let path = format!("/sys/class/net/{}/statistics/{name}", self.receiver);
        run(&["ip", "netns", "exec", &self.ns, "cat", &path])
            .parse()
            .unwrap()
    }

    /// (rx_packets, rx_bytes) at the receiver.
    fn received(&self) -> (u64, u64) {
        (
            self.receiver_stat("rx_packets"),
            self.receiver_stat("rx_bytes"),
        )
    }

    fn receiver_mac(&self) -> [u8; 6] {
        let path = format!("/sys/class/net/{}/address", self.receiver);
        let text = run(&["ip", "netns", "exec", &self.ns, "cat", &path]);
        let mut mac = [0u8; 6];
        for (byte, part) in mac.iter_mut().zip(text.split(':')) {
            *byte = u8::from_str_radix(part, 16).unwrap();
        }
        mac
    }

    /// Waits until the receiver has counted `packets` more than `before`, or 5 s pass.
    fn wait_received(&self, before: (u64, u64), packets: u64) -> (u64, u64) {
        let start = Instant::now();
        loop {
            let now = self.received();
            if now.0 - before.0 >= packets || start.elapsed() > Duration::from_secs(5) {
                return (now.0 - before.0, now.1 - before.1);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        // Deleting the namespace deletes the receiver, and a veth goes with its peer.
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).status();
        let _ = Command::new("ip")
            .args(["link", "del", &self.sender])
            .stderr(std::process::Stdio::null())
            .status();
    }
}

fn copy_options() -> XskOptions {
    XskOptions {
        mode: XdpMode::Copy,
        ..XskOptions::default()
    }
}

fn config(queue_id: u32) -> QueueConfig {
    QueueConfig {
        queue_id,
        slots: 4096,
        slot_size: 2048,
        batch: 64,
    }
}

/// Writes one 60-byte frame into every slot, then sends `n` of them and drains.
fn send(queue: &mut dyn TxQueue, dst: [u8; 6], n: u64) -> Duration {
    let slots = queue.slots();
    for slot in 0..slots {
        let frame = &mut queue.slot_mut(slot)[..FRAME_LEN as usize];
        frame.fill(0);
        frame[0..6].copy_from_slice(&dst);
        frame[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x01]);
        frame[12..14].copy_from_slice(&ETHERTYPE_LOCAL_EXPERIMENTAL.to_be_bytes());
        frame[14..18].copy_from_slice(&slot.to_be_bytes());
    }
    let start = Instant::now();
    let mut descs = [TxDesc::default(); 64];
    let (mut sent, mut completed, mut next_slot) = (0u64, 0u64, 0u32);
    while sent < n {
        let want = (n - sent).min(descs.len() as u64) as u32;
        let granted = queue.reserve(want);
        for desc in &mut descs[..granted as usize] {
            *desc = TxDesc {
                slot: next_slot,
                len: FRAME_LEN,
            };
            next_slot = (next_slot + 1) % slots;
        }
        queue.submit(&descs[..granted as usize]).unwrap();
        sent += u64::from(granted);
        completed += u64::from(queue.reap().unwrap());
    }
    completed += u64::from(queue.drain(Duration::from_secs(5)).unwrap());
    let elapsed = start.elapsed();
    assert_eq!(completed, n, "every submitted frame completes exactly once");
    elapsed
}

fn open_err(port: &XskPort, config: &QueueConfig) -> PortError {
    match port.open_queue(config) {
        Ok(queue) => panic!("queue opened in mode {}", queue.mode()),
        Err(e) => e,
    }
}

fn stat(queue: &dyn TxQueue, name: &str) -> u64 {
    queue
        .stats()
        .extra
        .iter()
        .find(|(k, _)| *k == name)
        .unwrap_or_else(|| panic!("no {name} in stats"))
        .1
}

#[test]
fn copy_mode_delivers_exactly_n_frames() {
    if !root_or_skip() {
        return;
    }
    let lab = Lab::new();
    let port = XskPort::open(&lab.sender, copy_options()).unwrap();
    assert_eq!(port.info().queues, 2);
    assert_eq!(port.info().driver.as_deref(), Some("veth"));
    assert_eq!(port.info().backend, "afxdp");
    let mut queue = port.open_queue(&config(0)).unwrap();
    assert_eq!(queue.mode(), "copy");
    assert_eq!(queue.slots(), 4096);
    assert_eq!(queue.slot_size(), 2048);

    const N: u64 = 100_000;
    let before = lab.received();
    let elapsed = send(queue.as_mut(), lab.receiver_mac(), N);
    let (packets, bytes) = lab.wait_received(before, N);
    assert_eq!(packets, N);
    assert_eq!(bytes, N * u64::from(FRAME_LEN));
    assert_eq!(stat(queue.as_ref(), "tx_invalid_descs"), 0);
    eprintln!(
        "one queue, copy mode: {N} frames in {elapsed:?} = {:.3} Mpps; stats {:?}",
        N as f64 / elapsed.as_secs_f64() / 1e6,
        queue.stats().extra
    );
}

#[test]
fn two_queues_on_two_threads_deliver_exactly_2n() {
    if !root_or_skip() {
        return;
    }
    let lab = Lab::new();
    let port = XskPort::open(&lab.sender, copy_options()).unwrap();
    let dst = lab.receiver_mac();
    const N: u64 = 100_000;
    let before = lab.received();
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..2)
            .map(|q| {
                let mut queue = port.open_queue(&config(q)).unwrap();
                s.spawn(move || send(queue.as_mut(), dst, N))
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
    });
    let (packets, bytes) = lab.wait_received(before, 2 * N);
    assert_eq!(packets, 2 * N);
    assert_eq!(bytes, 2 * N * u64::from(FRAME_LEN));
}

#[test]
fn auto_mode_falls_back_to_copy_on_veth() {
    if !root_or_skip() {
        return;
    }
    let lab = Lab::new();
    let port = XskPort::open(&lab.sender, XskOptions::default()).unwrap();
    let mut queue = port.open_queue(&config(1)).unwrap();
    assert_eq!(queue.mode(), "copy");
    let before = lab.received();
    send(queue.as_mut(), lab.receiver_mac(), 1000);
    assert_eq!(lab.wait_received(before, 1000), (1000, 60_000));
}

#[test]
fn slots_are_sized_for_the_mode_the_queue_will_bind() {
    if !root_or_skip() {
        return;
    }
    let lab = Lab::new();
    let slots = |mode| {
        let options = XskOptions {
            mode,
            ..XskOptions::default()
        };
        XskPort::open(&lab.sender, options).unwrap().min_slots()
    };
    let copy = slots(XdpMode::Copy);
    // veth tells the kernel it has no zero-copy, so Auto sizes for the copy it will bind.
    assert_eq!(slots(XdpMode::Auto), copy);
    assert!(
        copy < slots(XdpMode::ZeroCopy),
        "copy mode asks fewer slots"
    );
    // And a queue opened with that many sends.
    let port = XskPort::open(&lab.sender, XskOptions::default()).unwrap();
    let mut queue = port
        .open_queue(&QueueConfig {
            slots: copy,
            ..config(0)
        })
        .unwrap();
    assert_eq!(queue.slots(), copy);
    assert_eq!(queue.mode(), "copy");
    let before = lab.received();
    send(queue.as_mut(), lab.receiver_mac(), 1000);
    assert_eq!(lab.wait_received(before, 1000), (1000, 60_000));
}

#[test]
fn a_queue_released_can_be_opened_again_at_once() {
    if !root_or_skip() {
        return;
    }
    let lab = Lab::new();
    let port = XskPort::open(&lab.sender, copy_options()).unwrap();
    for _ in 0..5 {
        let mut queue = port.open_queue(&config(0)).unwrap();
        send(queue.as_mut(), lab.receiver_mac(), 100);
    }
}

#[test]
fn unknown_interface_is_a_usage_error() {
    if !root_or_skip() {
        return;
    }
    let err = XskPort::open("axnosuch0", copy_options()).unwrap_err();
    assert!(
        matches!(err, AfXdpError::Port(PortError::NoSuchInterface(_))),
        "{err}"
    );
    let err = PortError::from(err);
    assert!(err.is_usage());
    assert!(
        err.to_string()
            .contains("interface axnosuch0 does not exist"),
        "{err}"
    );
}

#[test]
fn queue_beyond_the_device_is_a_usage_error() {
    if !root_or_skip() {
        return;
    }
    let lab = Lab::new();
    let port = XskPort::open(&lab.sender, copy_options()).unwrap();
    let err = open_err(&port, &config(2));
    assert!(
        matches!(
            err,
            PortError::NoSuchQueue {
                queue: 2,
                available: 2,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.is_usage());
}

#[test]
fn the_same_queue_twice_is_in_use() {
    if !root_or_skip() {
        return;
    }
    let lab = Lab::new();
    let port = XskPort::open(&lab.sender, copy_options()).unwrap();
    let _first = port.open_queue(&config(0)).unwrap();
    let start = Instant::now();
    let err = open_err(&port, &config(0));
    assert!(
        matches!(err, PortError::QueueInUse { queue: 0, .. }),
        "{err}"
    );
    assert!(err.is_usage());
    assert!(
        start.elapsed() >= Duration::from_millis(900),
        "EBUSY is retried for about a second first"
    );
    // Another queue of the same port is free.
    port.open_queue(&config(1)).unwrap();
}

#[test]
fn forced_zero_copy_on_veth_fails_clearly() {
    if !root_or_skip() {
        return;
    }
    let lab = Lab::new();
    let options = XskOptions {
        mode: XdpMode::ZeroCopy,
        ..XskOptions::default()
    };
    let port = XskPort::open(&lab.sender, options).unwrap();
    let err = open_err(&port, &config(0));
    let text = err.to_string();
    assert!(
        text.contains("veth")
            && text.contains("no zero-copy AF_XDP: use the copy or auto XDP mode"),
        "{text}"
    );
    assert!(err.is_usage());
}

#[test]
fn a_down_interface_is_refused() {
    if !root_or_skip() {
        return;
    }
    let lab = Lab::new();
    run(&["ip", "link", "set", &lab.sender, "down"]);
    let err = XskPort::open(&lab.sender, copy_options()).unwrap_err();
    assert!(
        matches!(err, AfXdpError::Port(PortError::InterfaceDown { .. })),
        "{err}"
    );
}

#[test]
fn slots_larger_than_a_page_are_refused() {
    if !root_or_skip() {
        return;
    }
    let lab = Lab::new();
    let port = XskPort::open(&lab.sender, copy_options()).unwrap();
    let err = open_err(
        &port,
        &QueueConfig {
            slot_size: 9000,
            ..config(0)
        },
    );
    assert!(
        matches!(
            err.backend_error::<AfXdpError>(),
            Some(AfXdpError::SlotTooLarge {
                slot_size: 9000,
                ..
            })
        ),
        "{err}"
    );
    assert!(err.is_usage());
}

#[test]
fn odd_slot_counts_are_honoured_exactly() {
    if !root_or_skip() {
        return;
    }
    let lab = Lab::new();
    let port = XskPort::open(&lab.sender, copy_options()).unwrap();
    // 1000 slots: TX ring 512; 1500 bytes: 2048-byte chunks; the UMEM is exactly 1000 chunks.
    let mut queue = port
        .open_queue(&QueueConfig {
            queue_id: 0,
            slots: 1000,
            slot_size: 1500,
            batch: 64,
        })
        .unwrap();
    assert_eq!(queue.slots(), 1000);
    assert_eq!(queue.slot_mut(999).len(), 2048);
    let before = lab.received();
    send(queue.as_mut(), lab.receiver_mac(), 10_000);
    assert_eq!(lab.wait_received(before, 10_000), (10_000, 600_000));
    assert_eq!(stat(queue.as_ref(), "tx_ring_size"), 512);
}

/// Drops every capability of the calling thread only (capabilities are per thread on Linux), so
/// a root test can see what a non-root run sees without touching the rest of the process.
fn drop_thread_capabilities() {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    let header = Header {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capset reads one header and two data structs (version 3), both live for the call.
    let rc = unsafe { libc::syscall(libc::SYS_capset, &header, data.as_ptr()) };
    assert_eq!(rc, 0, "capset: {}", std::io::Error::last_os_error());
}

#[test]
fn without_privileges_opening_a_queue_says_run_as_root() {
    if !root_or_skip() {
        return;
    }
    let lab = Lab::new();
    let port = XskPort::open(&lab.sender, copy_options()).unwrap();
    let err = std::thread::scope(|s| {
        s.spawn(|| {
            drop_thread_capabilities();
            open_err(&port, &config(0))
        })
        .join()
        .unwrap()
    });
    assert!(matches!(err, PortError::NotPermitted { .. }), "{err}");
    assert!(err.is_usage());
    assert!(err.to_string().contains("run with sudo"), "{err}");
}

/// Not a timed test: one queue, 64-byte frames (60 in the buffer), the receiver dropping in XDP
/// (the linerate sink) so the kernel's copy-mode path is what is measured.
/// `cargo test --release -p linerate-afxdp --test veth -- --ignored --nocapture`
#[test]
#[ignore = "benchmark: run by hand in release mode"]
fn throughput_into_the_xdp_sink() {
    if !root_or_skip() {
        return;
    }
    let lab = Lab::new();
    let sink =
        linerate_xdp::Sink::attach(&lab.receiver, Some(&lab.ns), linerate_xdp::AttachMode::Drv)
            .unwrap();
    let port = XskPort::open(&lab.sender, copy_options()).unwrap();
    const N: u64 = 5_000_000;
    for queues in [1u32, 2] {
        let before = sink.counters().unwrap();
        let start = Instant::now();
        std::thread::scope(|s| {
            let dst = lab.receiver_mac();
            let workers: Vec<_> = (0..queues)
                .map(|q| {
                    let mut queue = port.open_queue(&config(q)).unwrap();
                    s.spawn(move || {
                        pin_to_cpu(q as usize);
                        send(queue.as_mut(), dst, N)
                    })
                })
                .collect();
            for w in workers {
                w.join().unwrap();
            }
        });
        let elapsed = start.elapsed();
        let got = sink.counters().unwrap().since(before);
        assert_eq!(got.packets, N * u64::from(queues));
        eprintln!(
            "{queues} queue(s): {} frames counted at the sink in {elapsed:?} = {:.3} Mpps",
            got.packets,
            got.packets as f64 / elapsed.as_secs_f64() / 1e6
        );
    }
}

/// Pins the calling thread to one CPU (the engine does this for real workers).
fn pin_to_cpu(cpu: usize) {
    // SAFETY: cpu_set_t is plain data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a live cpu_set_t; the kernel reads size_of::<cpu_set_t>() bytes of it.
    let rc = unsafe {
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set)
    };
    assert_eq!(
        rc,
        0,
        "sched_setaffinity: {}",
        std::io::Error::last_os_error()
    );
}

#[test]
fn an_interface_going_down_mid_run_is_an_error_not_a_hang() {
    if !root_or_skip() {
        return;
    }
    let lab = Lab::new();
    let port = XskPort::open(&lab.sender, copy_options()).unwrap();
    let mut queue = port.open_queue(&config(0)).unwrap();
    send(queue.as_mut(), lab.receiver_mac(), 1000);
    run(&["ip", "link", "set", &lab.sender, "down"]);
    let granted = queue.reserve(64);
    let descs: Vec<TxDesc> = (0..granted)
        .map(|slot| TxDesc {
            slot,
            len: FRAME_LEN,
        })
        .collect();
    let result = queue
        .submit(&descs)
        .and_then(|()| queue.drain(Duration::from_millis(500)).map(|_| ()));
    eprintln!("after link down: {result:?}");
    let err = result.unwrap_err();
    assert!(matches!(err, PortError::InterfaceDown { .. }), "{err}");
}

#[test]
fn a_forced_pass_program_is_attached_for_the_queues_and_gone_after() {
    if !root_or_skip() {
        return;
    }
    let lab = Lab::new();
    let has_xdp = || run(&["ip", "link", "show", "dev", &lab.sender]).contains("xdp");
    for (attach, mode) in [
        (linerate_afxdp::AttachMode::Drv, "copy (drv pass program)"),
        (linerate_afxdp::AttachMode::Skb, "copy (skb pass program)"),
    ] {
        let options = XskOptions {
            attach,
            ..copy_options()
        };
        let port = XskPort::open(&lab.sender, options).unwrap();
        let mut q0 = port.open_queue(&config(0)).unwrap();
        let q1 = port.open_queue(&config(1)).unwrap();
        assert_eq!(q0.mode(), mode);
        assert_eq!(q1.mode(), mode);
        assert!(has_xdp(), "program attached while queues are open");
        let before = lab.received();
        send(q0.as_mut(), lab.receiver_mac(), 1000);
        assert_eq!(lab.wait_received(before, 1000), (1000, 60_000));
        drop((port, q0, q1));
        assert!(!has_xdp(), "program detached with the last queue");
    }
}
