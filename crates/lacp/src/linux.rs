//! A thread per LAG, in its members' network namespace, with an AF_PACKET socket per member
//! bound to the Slow Protocols EtherType: it feeds the LAG's [`Machine`] what arrives, sends
//! what it says, and publishes the members' state for metrics. Dropping [`Lags`] stops and
//! joins every thread (their sockets close with them).

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::LacpError;
use crate::machine::Machine;
use crate::pdu::{ETHERTYPE, SLOW_PROTOCOLS_MAC, SUBTYPE_LACP, SUBTYPE_MARKER, field};
use crate::spec::{LagSpec, LagView, Protocol};

/// How long the thread waits for a frame before it runs the timers and looks at its flags.
const WAKE: Duration = Duration::from_millis(50);

#[derive(Debug)]
struct Shared {
    stop: AtomicBool,
    /// LACP started (`protocol.all`), as last asked.
    running: AtomicBool,
    /// Per member: LACP not stopped on it alone (`protocol.lacp.admin`).
    admin: Vec<AtomicBool>,
    /// The thread's turns so far: a change is in the view once two more have ended.
    turns: AtomicU64,
    view: Mutex<LagView>,
}

#[derive(Debug)]
struct LagThread {
    /// The members' OTG ports, in order.
    ports: Vec<String>,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// The LAGs of a config, each on a thread of its own, LACP running from the start.
#[derive(Debug)]
pub struct Lags {
    lags: Vec<LagThread>,
}

impl Lags {
    /// Opens every member's socket (an error names the LAG and the port) and starts each LAG's
    /// thread; on an error the LAGs started are stopped again.
    pub fn start(specs: Vec<LagSpec>) -> Result<Lags, LacpError> {
        let mut lags = Lags { lags: Vec::new() };
        for spec in specs {
            lags.lags.push(LagThread::start(spec)?);
        }
        Ok(lags)
    }

    /// LACP started or stopped on every LAG (static LAGs have nothing to start); answers once
    /// every thread has taken it, so the next metrics say it.
    pub fn set_running(&self, on: bool) {
        for l in &self.lags {
            l.shared.running.store(on, Ordering::Relaxed);
        }
        self.settle();
    }

    /// Waits (up to a second) for each thread to end two more turns: the one it may be in, and
    /// one that began after a change (of its flags, or of its members' links).
    pub fn settle(&self) {
        let at: Vec<u64> = self
            .lags
            .iter()
            .map(|l| l.shared.turns.load(Ordering::Acquire))
            .collect();
        let deadline = Instant::now() + Duration::from_secs(1);
        for (l, at) in self.lags.iter().zip(at) {
            while l.shared.turns.load(Ordering::Acquire) < at + 2 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }

    /// LACP started (`up`) or stopped on the members that are these OTG ports; answers once
    /// every thread has taken it.
    pub fn set_admin(&self, ports: &[String], up: bool) {
        for l in &self.lags {
            for (i, p) in l.ports.iter().enumerate() {
                if ports.contains(p) {
                    l.shared.admin[i].store(up, Ordering::Relaxed);
                }
            }
        }
        self.settle();
    }

    /// Every LAG's state, in the config's order.
    pub fn views(&self) -> Vec<LagView> {
        self.lags
            .iter()
            .map(|l| {
                l.shared
                    .view
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone()
            })
            .collect()
    }
}

impl Drop for LagThread {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A member's socket and interface, opened in the LAG's namespace.
struct Link {
    socket: OwnedFd,
    iface: String,
}

impl LagThread {
    fn start(spec: LagSpec) -> Result<LagThread, LacpError> {
        let netns = one_netns(&spec)?;
        let ns_file = match &netns {
            Some(ns) => Some(
                std::fs::File::open(std::path::Path::new("/run/netns").join(ns)).map_err(
                    |source| LacpError::Io {
                        lag: spec.name.clone(),
                        what: format!("opening network namespace {ns}"),
                        source,
                    },
                )?,
            ),
            None => None,
        };
        let view = LagView {
            name: spec.name.clone(),
            min_links: spec.min_links,
            lacp: matches!(spec.protocol, Protocol::Lacp { .. }),
            members: Machine::new(&spec).views(),
        };
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            running: AtomicBool::new(true),
            admin: spec.members.iter().map(|_| AtomicBool::new(true)).collect(),
            turns: AtomicU64::new(0),
            view: Mutex::new(view),
        });
        let (ready, said) = mpsc::channel();
        // A thread name holds 15 bytes.
        let mut name = format!("lacp {}", spec.name);
        while name.len() > 15 {
            name.pop();
        }
        let lag = spec.name.clone();
        let ports = spec.members.iter().map(|m| m.port.clone()).collect();
        let thread = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name(name)
                .spawn(move || {
                    // Only this thread enters the namespace; it stays there to its end.
                    let opened = ns_file
                        .as_ref()
                        .map_or(Ok(()), linerate_sys::enter_netns)
                        .map_err(|source| LacpError::Io {
                            lag: spec.name.clone(),
                            what: format!(
                                "entering network namespace {}",
                                netns.as_deref().unwrap_or_default()
                            ),
                            source,
                        })
                        .and_then(|()| open_links(&spec));
                    match opened {
                        Ok((links, spec)) => {
                            let _ = ready.send(Ok(()));
                            run(&spec, &links, &shared);
                        }
                        Err(e) => {
                            let _ = ready.send(Err(e));
                        }
                    }
                })
                .map_err(|source| LacpError::Io {
                    lag: lag.clone(),
                    what: "starting its thread".into(),
                    source,
                })?
        };
        let mut started = LagThread {
            ports,
            shared,
            thread: Some(thread),
        };
        match said.recv() {
            Ok(Ok(())) => Ok(started),
            Ok(Err(e)) => Err(e),
            Err(_) => {
                let _ = started.thread.take().map(JoinHandle::join);
                Err(LacpError::Io {
                    lag,
                    what: "its thread".into(),
                    source: std::io::Error::other("ended before it opened its ports"),
                })
            }
        }
    }
}

/// The namespace every member of the LAG is in (a LAG is one system's).
fn one_netns(spec: &LagSpec) -> Result<Option<String>, LacpError> {
    let ns = |loc: &str| loc.split_once('@').map(|(_, n)| n.to_owned());
    let first = spec.members.first().and_then(|m| ns(&m.location));
    for m in &spec.members {
        let this = ns(&m.location);
        if this != first {
            return Err(LacpError::Namespaces {
                lag: spec.name.clone(),
                a: first.unwrap_or_else(|| "the server's".into()),
                b: this.unwrap_or_else(|| "the server's".into()),
            });
        }
    }
    Ok(first)
}

/// Each member's socket, in this thread's namespace, and the spec with every member's MAC
/// (the interface's own where the config gives none).
fn open_links(spec: &LagSpec) -> Result<(Vec<Link>, LagSpec), LacpError> {
    let mut spec = spec.clone();
    let mut links = Vec::new();
    for m in &mut spec.members {
        let iface = m.location.split('@').next().unwrap_or_default().to_owned();
        let (lag, port) = (spec.name.clone(), m.port.clone());
        let failed = |what: &str, source: std::io::Error| LacpError::Io {
            lag: lag.clone(),
            what: format!("port {port} ({iface}): {what}"),
            source,
        };
        let info = linerate_port::iface::Interface::read(&iface)
            .map_err(|e| failed("reading the interface", std::io::Error::other(e)))?;
        m.mac = m.mac.or(info.mac);
        let socket = slow_protocols_socket(info.ifindex)
            .map_err(|e| failed("opening its Slow Protocols socket", e))?;
        links.push(Link { socket, iface });
    }
    Ok((links, spec))
}

/// An AF_PACKET socket that receives only Slow Protocols frames arriving at `ifindex`, and
/// that the link's NIC lets the group address through to.
fn slow_protocols_socket(ifindex: u32) -> std::io::Result<OwnedFd> {
    let fd = linerate_sys::packet_socket(ifindex, ETHERTYPE.to_be())?;
    let mut mr_address = [0u8; 8];
    mr_address[..6].copy_from_slice(&SLOW_PROTOCOLS_MAC);
    let group = libc::packet_mreq {
        mr_ifindex: ifindex as i32,
        mr_type: libc::PACKET_MR_MULTICAST as u16,
        mr_alen: 6,
        mr_address,
    };
    linerate_sys::set_opt(&fd, libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &group)?;
    Ok(fd)
}

/// Whether `iface` (in this thread's namespace) is up and running.
fn link_up(iface: &str) -> bool {
    let both = (libc::IFF_UP | libc::IFF_RUNNING) as u32;
    linerate_port::iface::link_flags(iface).is_some_and(|f| f & both == both)
}

/// The LAG's loop, until `stop`.
fn run(spec: &LagSpec, links: &[Link], shared: &Shared) {
    let start = Instant::now();
    let mut machine = Machine::new(spec);
    let mut buf = [0u8; 2048];
    while !shared.stop.load(Ordering::Relaxed) {
        let now = start.elapsed();
        for (i, l) in links.iter().enumerate() {
            machine.set_link(i, link_up(&l.iface), now);
            machine.set_admin(i, shared.admin[i].load(Ordering::Relaxed), now);
        }
        machine.set_running(shared.running.load(Ordering::Relaxed), now);
        for (i, l) in links.iter().enumerate() {
            // LACPDUs go to the machines; a Marker PDU is answered at once (the Marker
            // Responder); OAM (subtype 3) shares the EtherType and is not ours.
            while let Ok(n) = linerate_sys::recv_frame(&l.socket, &mut buf) {
                let frame = &buf[..n.min(buf.len())];
                match frame.get(field::SUBTYPE) {
                    Some(&SUBTYPE_LACP) => machine.receive(i, frame, now),
                    Some(&SUBTYPE_MARKER) => {
                        if let Some(answer) = machine.marker(i, frame) {
                            let _ = linerate_sys::send_frame(&l.socket, &answer);
                        }
                    }
                    _ => {}
                }
            }
        }
        for (i, frame) in machine.step(now) {
            // A link gone down refuses it (ENETDOWN): the machine sees the link next turn.
            let _ = linerate_sys::send_frame(&links[i].socket, &frame);
        }
        {
            let mut view = shared.view.lock().unwrap_or_else(PoisonError::into_inner);
            view.members = machine.views();
        }
        shared.turns.fetch_add(1, Ordering::Release);
        match links.first() {
            Some(l) => {
                let _ = linerate_sys::wait_readable(&l.socket, WAKE);
            }
            None => std::thread::sleep(WAKE),
        }
    }
}
