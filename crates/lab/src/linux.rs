//! Building and removing the lab on Linux, through libraries rather than commands.
//!
//! Links (veth pairs, their peers in namespaces, aliases, up), addresses, static neighbours,
//! routes, the DUT's bridge and the tbf/pfifo qdiscs go through rtnetlink ([`netlink`]: the
//! netlink-packet-route messages on a netlink-sys socket opened inside the namespace concerned);
//! named namespaces are made and removed as iproute2 does, by bind-mounting a thread's namespace
//! on /run/netns/NAME ([`netns`]); sysctls are /proc writes from a thread inside the namespace;
//! BPF goes through libbpf: the sink and the XDP DUT through bpf_link, the impairment program
//! through libbpf's tc hook (clsact). No `ip` or `tc` process runs, and no command output is
//! parsed: a failure carries the kernel's own words (its extended acknowledgement). The one
//! process the lab starts is its delay line (delay.rs). Namespaces are entered with setns(2) on
//! a short-lived thread, never with `ip netns exec`, which remounts /sys and hides bpffs.

use std::io;
use std::ops::Deref;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use linerate_xdp::{AttachMode, PinnedSink, Sink, SinkCounters};

use crate::{
    DutKind, ImpairCounters, Impairments, Lab, LabConfig, LabError, NatRules, addresses,
    validate_name,
};

pub mod bird;
mod delay;
pub mod device;
mod dut;
mod nat;
mod netlink;
mod netns;

use netlink::Rtnl;

pub use delay::run_delay_line;

/// Where a lab's sink is pinned: /sys/fs/bpf/linerate/<name>.
pub(crate) fn pin_dir(name: &str) -> PathBuf {
    Path::new("/sys/fs/bpf/linerate").join(name)
}

pub(crate) fn netns_path(netns: &str) -> PathBuf {
    Path::new("/run/netns").join(netns)
}

pub(crate) fn iface_exists(iface: &str) -> bool {
    Path::new("/sys/class/net").join(iface).exists()
}

/// Where linerate keeps what says a lab is its own and the per-name locks. /run is emptied at
/// boot, as the namespaces and links it describes are.
pub(crate) const STATE_DIR: &str = "/run/linerate";

/// The lab's marker: written after `up` has seen that nothing of the name exists and before it
/// creates anything, removed by `down` last. It holds the facts a process that cannot enter the
/// namespace (not root) needs to describe the lab.
pub(crate) fn marker_path(name: &str) -> PathBuf {
    Path::new(STATE_DIR).join("labs").join(name)
}

/// The interface alias (`ip link set … alias`) both veth ends carry.
pub(crate) fn alias(name: &str) -> String {
    format!("linerate lab {name}")
}

fn has_our_alias(name: &str, iface: &str) -> bool {
    std::fs::read_to_string(Path::new("/sys/class/net").join(iface).join("ifalias"))
        .is_ok_and(|a| a.trim_end() == alias(name))
}

/// True when the parts named after `name` were made by linerate: the marker is there, or the
/// sender carries the alias (a marker lost with a cleaned /run).
fn is_ours(lab: &Lab) -> bool {
    marker_path(&lab.name).exists() || has_our_alias(&lab.name, &lab.sender)
}

/// Whether a path exists; None when this process may not look (bpffs is root's).
fn exists(path: &Path) -> Option<bool> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => Some(true),
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => None,
        Err(_) => Some(false),
    }
}

pub(crate) fn state_io(what: String) -> impl FnOnce(io::Error) -> LabError {
    move |source| match source.kind() {
        io::ErrorKind::PermissionDenied => LabError::NotRoot { what },
        _ => LabError::Io { what, source },
    }
}

/// An exclusive lock on a lab name (flock on /run/linerate/lab-<name>.lock), so two commands
/// never build, use or remove the same lab at once. Released when dropped or when the process
/// dies. Whoever removes the lab removes the file too, still holding the lock (`unlink`), so
/// the test suite's thousands of one-off names leave nothing behind; a process that opened the
/// file before it went and locks it afterwards finds it no longer at the path and takes the
/// lock again on the file there now, so one name never has two holders.
#[derive(Debug)]
pub struct LabLock {
    _file: nix::fcntl::Flock<std::fs::File>,
    path: PathBuf,
}

impl LabLock {
    /// Takes the lock or says that another process holds it; never waits.
    pub fn take(name: &str) -> Result<Self, LabError> {
        use std::os::unix::fs::MetadataExt;
        validate_name(name)?;
        std::fs::create_dir_all(STATE_DIR).map_err(state_io(format!("creating {STATE_DIR}")))?;
        let path = Path::new(STATE_DIR).join(format!("lab-{name}.lock"));
        loop {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .map_err(state_io(format!("opening {}", path.display())))?;
            let file =
                match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
                    Ok(file) => file,
                    Err((_, nix::errno::Errno::EWOULDBLOCK)) => {
                        return Err(LabError::Busy { name: name.into() });
                    }
                    Err((_, errno)) => {
                        return Err(LabError::Io {
                            what: format!("locking {}", path.display()),
                            source: errno.into(),
                        });
                    }
                };
            let held = file
                .metadata()
                .map_err(state_io(format!("reading {}", path.display())))?;
            let there = std::fs::metadata(&path).ok();
            if there.is_some_and(|m| m.dev() == held.dev() && m.ino() == held.ino()) {
                return Ok(Self { _file: file, path });
            }
        }
    }

    /// Removes the lock file while the lock is still held (the lab is gone); released on drop.
    pub fn unlink(&self) {
        if let Err(e) = std::fs::remove_file(&self.path)
            && e.kind() != io::ErrorKind::NotFound
        {
            eprintln!("linerate-lab: removing {} failed: {e}", self.path.display());
        }
    }
}

impl Lab {
    /// Behind a router the receiver is on a subnet of its own ([`crate::routed_addresses`]).
    fn route_receiver(&mut self) {
        if self.dut.as_ref().is_some_and(|d| d.gateways.is_some()) {
            let (sender, _, _, receiver) = crate::routed_addresses(&self.name);
            (self.sender_ip, self.receiver_ip) = (sender, receiver);
        }
    }

    /// The plain facts of a lab named `name` as `Lab::up` builds it; the MACs are filled in from
    /// the interfaces.
    fn layout(name: &str, queues: u32) -> Lab {
        let (sender_ip, receiver_ip) = addresses(name);
        Lab {
            name: name.to_owned(),
            sender: format!("{name}0"),
            receiver: format!("{name}1"),
            netns: format!("{name}-sink"),
            sender_mac: [0; 6],
            receiver_mac: [0; 6],
            sender_ip,
            receiver_ip,
            queues,
            dut: None,
        }
    }

    /// Creates netns `<name>-sink`, veth `<name>0` (root namespace) ↔ `<name>1` (in the
    /// namespace) with `queues` tx and rx queues each, IPv6 off on both ends, the /30 of
    /// [`crate::addresses`] (198.18.0.0/15), both up, static neighbour entries both ways, then
    /// attaches the sink to `<name>1` in driver mode and pins it under
    /// /sys/fs/bpf/linerate/<name>. If anything fails midway, removes what it created before
    /// returning the error. Error if a lab of that name exists.
    pub fn up(config: &LabConfig) -> Result<Lab, LabError> {
        Self::up_locked(config, None).map(|(lab, _lock)| lab)
    }

    /// [`Lab::up`] with a device under test between the pair: netns `<name>-dut` holding
    /// `<name>d0` (peer of the sender) and `<name>d1` (peer of the receiver), forwarding as
    /// `dut` says. None builds the direct pair.
    pub fn up_with_dut(config: &LabConfig, dut: Option<DutKind>) -> Result<Lab, LabError> {
        Self::up_locked(config, dut).map(|(lab, _lock)| lab)
    }

    /// `up`, returning the lab's lock still held.
    fn up_locked(config: &LabConfig, dut: Option<DutKind>) -> Result<(Lab, LabLock), LabError> {
        config.validate()?;
        let name = config.name.as_str();
        if !nix::unistd::geteuid().is_root() {
            return Err(LabError::NotRoot {
                what: format!("creating lab {name}"),
            });
        }
        let mut layout = Lab::layout(name, config.queues);
        layout.dut = dut.map(|kind| dut::layout(name, kind));
        layout.route_receiver();
        if is_ours(&layout) {
            return Err(LabError::Exists { name: name.into() });
        }
        let lock = LabLock::take(name)?;
        let ours = is_ours(&layout);
        let taken: Vec<String> = [
            (
                iface_exists(&layout.sender),
                format!("interface {}", layout.sender),
            ),
            (
                netns_path(&layout.netns).exists(),
                format!("network namespace {}", layout.netns),
            ),
            (
                netns_path(&dut::netns(name)).exists(),
                format!("network namespace {}", dut::netns(name)),
            ),
            (
                pin_dir(name).exists(),
                format!("{}", pin_dir(name).display()),
            ),
        ]
        .into_iter()
        .filter_map(|(exists, what)| exists.then_some(what))
        .collect();
        if ours {
            return Err(LabError::Exists { name: name.into() });
        }
        if !taken.is_empty() {
            // Nothing of ours has this name: the lock file was ours alone.
            lock.unlink();
            return Err(LabError::NotOurs {
                name: name.into(),
                parts: taken.join(", "),
            });
        }
        // Nothing of this name existed, so on failure everything of this name is ours to remove.
        build(&layout).inspect_err(|_| match Lab::remove(name) {
            Ok(()) => lock.unlink(),
            Err(cleanup) => {
                eprintln!("linerate-lab: cleaning up the half-built lab {name} failed: {cleanup}")
            }
        })?;
        let lab = Lab::find(name)?.ok_or_else(|| LabError::Incomplete {
            name: name.into(),
            missing: "everything, right after it was built".into(),
        })?;
        Ok((lab, lock))
    }

    /// Finds an existing lab (reads its interfaces, MACs, queue count); None when absent.
    /// A lab of which only some parts exist is an error that says how to remove it.
    /// Interfaces and namespaces of the name that linerate did not make are refused, never taken
    /// for a lab. Without root, what cannot be looked at (the pins, the namespace's inside) is
    /// taken from the marker rather than called missing.
    pub fn find(name: &str) -> Result<Option<Lab>, LabError> {
        validate_name(name)?;
        let mut lab = Lab::layout(name, 0);
        let has_sender = iface_exists(&lab.sender);
        let has_netns = netns_path(&lab.netns).exists();
        let has_pins = exists(&pin_dir(name));
        if !has_sender && !has_netns && has_pins != Some(true) && !marker_path(name).exists() {
            return Ok(None);
        }
        if !is_ours(&lab) {
            let parts: Vec<String> = [
                (has_sender, format!("interface {}", lab.sender)),
                (has_netns, format!("network namespace {}", lab.netns)),
                (
                    has_pins == Some(true),
                    format!("{}", pin_dir(name).display()),
                ),
            ]
            .into_iter()
            .filter_map(|(exists, what)| exists.then_some(what))
            .collect();
            return Err(LabError::NotOurs {
                name: name.into(),
                parts: parts.join(", "),
            });
        }
        let incomplete = |missing: String| LabError::Incomplete {
            name: name.into(),
            missing,
        };
        if !has_sender {
            return Err(incomplete(format!("interface {}", lab.sender)));
        }
        if !has_netns {
            return Err(incomplete(format!("network namespace {}", lab.netns)));
        }
        if has_pins == Some(false) {
            return Err(incomplete(format!(
                "the sink pins under {}",
                pin_dir(name).display()
            )));
        }
        lab.sender_mac = link_mac(None, &lab.sender)?;
        lab.receiver_mac = if nix::unistd::geteuid().is_root() {
            link_mac(Some(&lab.netns), &lab.receiver)
                .map_err(|_| incomplete(format!("interface {} in {}", lab.receiver, lab.netns)))?
        } else {
            // Entering the namespace needs CAP_SYS_ADMIN: the marker remembers the MAC.
            marker_mac(name)
                .ok_or_else(|| incomplete(format!("the marker {}", marker_path(name).display())))?
        };
        lab.queues = tx_queues(&lab.sender)?;
        lab.dut = dut::find(&lab)?;
        lab.route_receiver();
        Ok(Some(lab))
    }

    /// What the sink has counted so far, through the pinned map.
    pub fn sink_counters(&self) -> Result<SinkCounters, LabError> {
        Ok(PinnedSink::open(&pin_dir(&self.name))?.counters()?)
    }

    /// What runs on the receive end: the sink, or a running receiver's program; a program left
    /// by a receiver that died is replaced by the sink here ([`PinnedSink::receive_end`]).
    pub fn receive_end(&self) -> Result<linerate_xdp::ReceiveEnd, LabError> {
        Ok(PinnedSink::open(&pin_dir(&self.name))?.receive_end()?)
    }

    /// Sets the impairments of lab `name`'s DUT egress (replacing any before; the default
    /// clears them), holding the lab's lock meanwhile. `delay_line` is the linerate binary, which
    /// runs the delay line as `<it> lab delay-line --name <name>` when delay is asked for.
    pub fn impair(
        name: &str,
        impairments: &Impairments,
        delay_line: &Path,
    ) -> Result<Lab, LabError> {
        impairments.validate()?;
        validate_name(name)?;
        if !nix::unistd::geteuid().is_root() {
            return Err(LabError::NotRoot {
                what: format!("impairing lab {name}"),
            });
        }
        let lock = LabLock::take(name)?;
        let Some(lab) = Lab::find(name)? else {
            lock.unlink();
            return Err(LabError::NotFound { name: name.into() });
        };
        dut::impair(&lab, impairments, delay_line)?;
        Ok(Lab::find(name)?.unwrap_or(lab))
    }

    /// Sets what lab `name`'s NAT DUT holds to (its ports, its limit of connections),
    /// replacing its rules; conntrack keeps the translations it holds.
    pub fn set_nat(name: &str, rules: &NatRules) -> Result<Lab, LabError> {
        validate_name(name)?;
        if !nix::unistd::geteuid().is_root() {
            return Err(LabError::NotRoot {
                what: format!("setting lab {name}'s NAT"),
            });
        }
        let lock = LabLock::take(name)?;
        let Some(lab) = Lab::find(name)? else {
            lock.unlink();
            return Err(LabError::NotFound { name: name.into() });
        };
        set_nat(&lab, rules)?;
        Ok(lab)
    }

    /// New connections the NAT's limit has dropped so far; None: no limit set.
    pub fn nat_limit_drops(&self) -> Result<Option<u64>, LabError> {
        match &self.dut {
            Some(dut) if dut.kind == DutKind::Nat => nat::limit_drops(dut),
            _ => Err(LabError::NotNat {
                name: self.name.clone(),
            }),
        }
    }

    /// What the impairment program has counted (zeroes without one).
    pub fn impair_counters(&self) -> Result<ImpairCounters, LabError> {
        dut::counters(&self.name)
    }

    /// Where the marker of lab `name` lives: the file that says linerate made it.
    pub fn marker_path(name: &str) -> PathBuf {
        marker_path(name)
    }

    /// The directory the sink is pinned under.
    pub fn pin_dir(&self) -> PathBuf {
        pin_dir(&self.name)
    }

    /// Removes the pins, the veth pair and the netns. Safe to run twice and on a half-built lab.
    /// Refuses (and leaves alone) interfaces and namespaces of the name that linerate did not
    /// make, and a lab another linerate process is building or using.
    pub fn down(name: &str) -> Result<(), LabError> {
        validate_name(name)?;
        let lab = Lab::layout(name, 0);
        let present = iface_exists(&lab.sender)
            || netns_path(&lab.netns).exists()
            || netns_path(&dut::netns(name)).exists()
            || exists(&pin_dir(name)) == Some(true);
        if !is_ours(&lab) {
            if !present {
                return Ok(());
            }
            return match Lab::find(name) {
                Err(e @ LabError::NotOurs { .. }) => Err(e),
                _ => Err(LabError::NotOurs {
                    name: name.into(),
                    parts: format!("{} or {}", lab.sender, lab.netns),
                }),
            };
        }
        if !nix::unistd::geteuid().is_root() {
            return Err(LabError::NotRoot {
                what: format!("removing lab {name}"),
            });
        }
        let lock = LabLock::take(name)?;
        Lab::remove(name)?;
        lock.unlink();
        Ok(())
    }

    /// Removes every part of lab `name`, which the caller knows is ours and holds the lock of.
    fn remove(name: &str) -> Result<(), LabError> {
        let lab = Lab::layout(name, 0);
        // The marker vouches for the namespace; the alias for the pair and, through its peer,
        // for the namespace too.
        let marked = marker_path(name).exists();
        let ours = marked || has_our_alias(name, &lab.sender);
        // The DUT's delay line, pins and state go first: the sink's pin directory holds them.
        let mut results = if ours { dut::remove(name) } else { Vec::new() };
        // Unpinning drops the last reference to the link: the sink detaches.
        results.push(PinnedSink::unpin(&pin_dir(name)).map_err(LabError::from));
        if iface_exists(&lab.sender) && ours {
            // Deleting one end of a veth pair deletes both.
            results.push(Rtnl::open(None).and_then(|mut root| root.del_link(&lab.sender)));
        }
        let dut_netns = dut::netns(name);
        for ns in [dut_netns.as_str(), lab.netns.as_str()] {
            if netns_path(ns).exists() && ours {
                results.push(netns::del(ns));
            }
        }
        // The marker goes last, once nothing it vouches for is left.
        if results.iter().all(Result::is_ok) {
            results.push(match std::fs::remove_file(marker_path(name)) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(LabError::Io {
                    what: format!("removing {}", marker_path(name).display()),
                    source: e,
                }),
                _ => Ok(()),
            });
        }
        results.into_iter().collect()
    }
}

fn build(lab: &Lab) -> Result<(), LabError> {
    let ns = lab.netns.as_str();
    let marker = marker_path(&lab.name);
    if let Some(dir) = marker.parent() {
        std::fs::create_dir_all(dir).map_err(state_io(format!("creating {}", dir.display())))?;
    }
    let dut_line = lab
        .dut
        .as_ref()
        .map(|d| format!("dut {}\n", d.kind))
        .unwrap_or_default();
    std::fs::write(&marker, format!("lab {}\n{dut_line}", lab.name))
        .map_err(state_io(format!("writing {}", marker.display())))?;
    netns::add(ns)?;
    if let Some(d) = &lab.dut {
        return dut::build(lab, d, &dut_line);
    }
    let mut root = Rtnl::open(None)?;
    let mut sink = Rtnl::open(Some(ns))?;
    let sink_ns = open_netns(ns)?;
    root.add_veth(
        &lab.sender,
        &lab.receiver,
        Some(lab.queues),
        Some(sink_ns.as_fd()),
    )?;
    let mark = alias(&lab.name);
    root.set_alias(&lab.sender, &mark)?;
    sink.set_alias(&lab.receiver, &mark)?;
    // IPv6 off before the links come up, so no router solicitation, DAD or MLD frame ever
    // reaches the sink: it counts only what we send.
    write_sysctl(
        &format!("/proc/sys/net/ipv6/conf/{}/disable_ipv6", lab.sender),
        "1",
    )?;
    write_sysctl_in(
        ns,
        &format!("/proc/sys/net/ipv6/conf/{}/disable_ipv6", lab.receiver),
        "1",
    )?;
    root.add_address(&lab.sender, lab.sender_ip, 30)?;
    sink.add_address(&lab.receiver, lab.receiver_ip, 30)?;
    // Static neighbours: no ARP frames either.
    let sender_mac = root.mac(&lab.sender)?;
    let receiver_mac = sink.mac(&lab.receiver)?;
    std::fs::write(
        &marker,
        format!(
            "lab {}\nreceiver-mac {}\n",
            lab.name,
            fmt_mac(&receiver_mac)
        ),
    )
    .map_err(state_io(format!("writing {}", marker.display())))?;
    root.set_neighbour(&lab.sender, lab.receiver_ip, receiver_mac)?;
    sink.set_neighbour(&lab.receiver, lab.sender_ip, sender_mac)?;
    // The sink goes on before the links come up, so it sees every frame from the first.
    let mut xdp_sink = Sink::attach(&lab.receiver, Some(ns), AttachMode::Drv)?;
    xdp_sink.pin(&pin_dir(&lab.name))?;
    drop(xdp_sink); // the pins keep it attached
    sink.set_up(&lab.receiver)?;
    root.set_up(&lab.sender)?;
    Ok(())
}

/// A handle of network namespace `netns` (its /run/netns file), to create a link's peer in it.
pub(crate) fn open_netns(netns: &str) -> Result<std::fs::File, LabError> {
    let path = netns_path(netns);
    std::fs::File::open(&path).map_err(|source| LabError::Io {
        what: format!("opening {}", path.display()),
        source,
    })
}

/// The MAC address of `iface` (in `netns`).
pub(crate) fn link_mac(netns: Option<&str>, iface: &str) -> Result<[u8; 6], LabError> {
    Rtnl::open(netns)?.mac(iface)
}

/// The number of tx queues of `iface` in the root namespace (the lab makes rx equal).
fn tx_queues(iface: &str) -> Result<u32, LabError> {
    let dir = Path::new("/sys/class/net").join(iface).join("queues");
    let entries = std::fs::read_dir(&dir).map_err(|source| LabError::Io {
        what: format!("reading {}", dir.display()),
        source,
    })?;
    let count = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("tx-"))
        .count();
    Ok(count as u32)
}

pub(crate) fn write_sysctl(path: &str, value: &str) -> Result<(), LabError> {
    std::fs::write(path, value).map_err(|source| match source.kind() {
        io::ErrorKind::PermissionDenied => LabError::NotRoot {
            what: format!("writing {path}"),
        },
        _ => LabError::Io {
            what: format!("writing {path}"),
            source,
        },
    })
}

/// Writes a sysctl of network namespace `netns`: /proc/sys/net resolves to the namespace of the
/// thread that opens it.
pub(crate) fn write_sysctl_in(netns: &str, path: &str, value: &str) -> Result<(), LabError> {
    in_netns(netns, || write_sysctl(path, value))
}

/// Runs `f` in network namespace `netns` on a short-lived thread: setns(2) changes the calling
/// thread's namespace only, so the caller's stays as it was.
pub(crate) fn in_netns<T: Send>(
    netns: &str,
    f: impl FnOnce() -> Result<T, LabError> + Send,
) -> Result<T, LabError> {
    let file = open_netns(netns)?;
    linerate_xdp::in_netns_file(file, f, |errno| match errno {
        nix::errno::Errno::EPERM => LabError::NotRoot {
            what: format!("entering network namespace {netns}"),
        },
        errno => LabError::Io {
            what: format!("entering network namespace {netns}"),
            source: errno.into(),
        },
    })
}

/// The receiver's MAC as the marker remembers it.
fn marker_mac(name: &str) -> Option<[u8; 6]> {
    let text = std::fs::read_to_string(marker_path(name)).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("receiver-mac "))
        .and_then(parse_mac)
}

/// A MAC as `ip link` and the marker write it: linerate_wire's one grammar.
pub(crate) fn parse_mac(text: &str) -> Option<[u8; 6]> {
    linerate_wire::parse_mac(text).ok()
}

pub(crate) fn fmt_mac(mac: &[u8; 6]) -> String {
    linerate_wire::format_mac(mac)
}

/// Test/CLI guard: creates a lab, holds its lock for as long as it lives (no other command
/// removes or rebuilds it meanwhile) and removes it on drop, even when a test panics.
#[derive(Debug)]
pub struct LabGuard {
    lab: Lab,
    lock: LabLock,
}

impl LabGuard {
    pub fn up(config: &LabConfig) -> Result<Self, LabError> {
        Self::up_with_dut(config, None)
    }

    /// [`Lab::up_with_dut`], guarded.
    pub fn up_with_dut(config: &LabConfig, dut: Option<DutKind>) -> Result<Self, LabError> {
        Lab::up_locked(config, dut).map(|(lab, lock)| LabGuard { lab, lock })
    }
}

impl LabGuard {
    /// [`Lab::impair`] on the guarded lab, whose lock this guard holds already.
    pub fn impair(&mut self, impairments: &Impairments, delay_line: &Path) -> Result<(), LabError> {
        impairments.validate()?;
        dut::impair(&self.lab, impairments, delay_line)?;
        if let Some(lab) = Lab::find(&self.lab.name)? {
            self.lab = lab;
        }
        Ok(())
    }
}

impl LabGuard {
    /// [`Lab::set_nat`] on the guarded lab, whose lock this guard holds already.
    pub fn set_nat(&self, rules: &NatRules) -> Result<(), LabError> {
        set_nat(&self.lab, rules)
    }
}

fn set_nat(lab: &Lab, rules: &NatRules) -> Result<(), LabError> {
    match &lab.dut {
        Some(dut) if dut.kind == DutKind::Nat => nat::set(dut, rules),
        _ => Err(LabError::NotNat {
            name: lab.name.clone(),
        }),
    }
}

impl Deref for LabGuard {
    type Target = Lab;
    fn deref(&self) -> &Lab {
        &self.lab
    }
}

impl Drop for LabGuard {
    fn drop(&mut self) {
        match Lab::remove(&self.lab.name) {
            Ok(()) => self.lock.unlink(),
            Err(e) => eprintln!("linerate-lab: removing lab {} failed: {e}", self.lab.name),
        }
    }
}

/// For root tests: true when running as root. Elsewhere the test is skipped with a printed
/// reason, except under `CI=true`, where a skip would hide that it never ran: then it fails.
pub fn root_or_skip(test: &str) -> bool {
    if nix::unistd::geteuid().is_root() {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{test} needs root, and CI=true forbids skipping it: run the tests as root"
    );
    eprintln!("skipping {test}: needs root (set CI=true to make this a failure)");
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macs_parse_and_print() {
        let mac = parse_mac("02:1a:ff:00:9b:10").unwrap();
        assert_eq!(mac, [0x02, 0x1a, 0xff, 0x00, 0x9b, 0x10]);
        assert_eq!(fmt_mac(&mac), "02:1a:ff:00:9b:10");
        assert_eq!(parse_mac("02:1a:ff:00:9b"), None);
        assert_eq!(parse_mac("02:1a:ff:00:9b:10:11"), None);
        assert_eq!(parse_mac("zz:1a:ff:00:9b:10"), None);
    }
}
