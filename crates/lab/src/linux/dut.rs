//! The device under test: netns `<name>-dut` between the sender and the sink, forwarding as a
//! router, a bridge or an XDP redirect, and the impairments on its egress toward the sink.
//!
//! ```text
//! root ns            <name>-dut                                   <name>-sink
//! <name>0 ──veth── <name>d0 ─(route | bridge | XDP)─ <name>d1 ──veth── <name>1 (XDP sink)
//!                                                    egress: clsact bpf/impair.bpf.c, tbf
//!                              delay line: <name>q0 ─veth─ <name>q1 ─ AF_PACKET ─┘
//! ```

use std::io;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::time::Duration;

use libbpf_rs::{MapCore, MapFlags, TC_EGRESS, TC_INGRESS, TcHookBuilder};
use linerate_xdp::{AttachMode, MapAbi, Sink};

use netlink_packet_route::tc::TcHandle;

use super::netlink::{self, Rtnl};
use super::{
    STATE_DIR, alias, delay, fmt_mac, in_netns, link_mac, marker_path, netns, netns_path,
    open_netns, parse_mac, pin_dir, state_io, write_sysctl, write_sysctl_in,
};
use crate::{Dut, DutKind, ImpairCounters, Impairments, Lab, LabError};

pub(crate) fn netns(name: &str) -> String {
    format!("{name}-dut")
}

/// The veth pair the delay line reads from: the impairment program redirects frames into
/// `<name>q0`; the delay line reads them on `<name>q1`.
pub(crate) fn divert_ends(name: &str) -> (String, String) {
    (format!("{name}q0"), format!("{name}q1"))
}

fn bridge(name: &str) -> String {
    format!("{name}br")
}

pub(crate) fn layout(name: &str, kind: DutKind) -> Dut {
    Dut {
        kind,
        netns: netns(name),
        ingress: format!("{name}d0"),
        egress: format!("{name}d1"),
        ingress_mac: [0; 6],
        gateways: kind.is_router().then(|| {
            let (_, ingress, egress, _) = crate::routed_addresses(name);
            (ingress, egress)
        }),
        impairments: Impairments::default(),
        delay_line_running: false,
    }
}

/// Pins under the lab's pin directory.
const DUT_LINK_PIN: &str = "dut-link";
const IMPAIR_MAP_PIN: &str = "impair-counters";
const ROUTER_PASS_PIN: &str = "router-pass";

/// The record of the impairments in force, for `lab status` and the delay line.
pub(crate) fn impair_path(name: &str) -> PathBuf {
    PathBuf::from(STATE_DIR)
        .join("labs")
        .join(format!("{name}.impair"))
}

/// `struct impair_config` of `bpf/impair.bpf.c`, its read-only data.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct ImpairRodata {
    loss: u32,
    duplicate: u32,
    divert_ifindex: u32,
    pad: u32,
}

const IMPAIR_ABI: [MapAbi; 2] = [
    MapAbi::of::<u32, ImpairCounters>("impair_counters"),
    MapAbi::rodata::<ImpairRodata>(),
];

pub(crate) fn build(lab: &Lab, dut: &Dut, dut_line: &str) -> Result<(), LabError> {
    let (sink_ns, dut_ns) = (lab.netns.as_str(), dut.netns.as_str());
    netns::add(dut_ns)?;
    let mut root = Rtnl::open(None)?;
    let mut inside = Rtnl::open(Some(dut_ns))?;
    let mut sink = Rtnl::open(Some(sink_ns))?;
    let queues = Some(lab.queues);
    root.add_veth(
        &lab.sender,
        &dut.ingress,
        queues,
        Some(open_netns(dut_ns)?.as_fd()),
    )?;
    inside.add_veth(
        &dut.egress,
        &lab.receiver,
        queues,
        Some(open_netns(sink_ns)?.as_fd()),
    )?;
    let mark = alias(&lab.name);
    for (ns, dev) in [
        (None, &lab.sender),
        (Some(sink_ns), &lab.receiver),
        (Some(dut_ns), &dut.ingress),
        (Some(dut_ns), &dut.egress),
    ] {
        let rtnl = match ns {
            None => &mut root,
            Some(ns) if ns == sink_ns => &mut sink,
            Some(_) => &mut inside,
        };
        rtnl.set_alias(dev, &mark)?;
        // IPv6 off before the links come up: no router solicitation, DAD or MLD frame ever
        // reaches the sink.
        let path = format!("/proc/sys/net/ipv6/conf/{dev}/disable_ipv6");
        match ns {
            None => write_sysctl(&path, "1")?,
            Some(ns) => write_sysctl_in(ns, &path, "1")?,
        }
    }
    root.add_address(&lab.sender, lab.sender_ip, 30)?;
    sink.add_address(&lab.receiver, lab.receiver_ip, 30)?;
    let sender_mac = root.mac(&lab.sender)?;
    let receiver_mac = sink.mac(&lab.receiver)?;
    let ingress_mac = inside.mac(&dut.ingress)?;
    let egress_mac = inside.mac(&dut.egress)?;
    write_marker(lab, dut_line, &receiver_mac, &ingress_mac)?;
    // What the sender and the sink take each other's MAC to be: a router stands between them at
    // layer 2; a bridge or the XDP DUT do not.
    let (toward_sink, toward_sender) = match dut.kind {
        DutKind::Router | DutKind::Bgp | DutKind::Nat => (ingress_mac, egress_mac),
        DutKind::Bridge | DutKind::Xdp => (receiver_mac, sender_mac),
    };
    if dut.kind == DutKind::Bridge {
        add_bridge(&mut inside, lab, dut)?;
    }
    if dut.kind == DutKind::Nat {
        // No sink: the receive end's stack is the servers' host. The pin directory still
        // holds the DUT's own pins.
        let dir = pin_dir(&lab.name);
        std::fs::create_dir_all(&dir).map_err(state_io(format!("creating {}", dir.display())))?;
    } else {
        // The sink goes on before the links come up, so it sees every frame from the first.
        let mut xdp_sink = Sink::attach(&lab.receiver, Some(sink_ns), AttachMode::Drv)?;
        xdp_sink.pin(&pin_dir(&lab.name))?;
        drop(xdp_sink); // the pins keep it attached
    }
    if dut.kind == DutKind::Xdp {
        attach_xdp_dut(lab, dut)?;
    }
    if dut.kind.is_router() {
        attach_router_pass(lab, dut)?;
    }
    sink.set_up(&lab.receiver)?;
    for dev in [&dut.egress, &dut.ingress] {
        inside.set_up(dev)?;
    }
    if dut.kind == DutKind::Bridge {
        inside.set_up(&bridge(&lab.name))?;
    }
    if let Some((ingress_ip, egress_ip)) = dut.gateways {
        write_sysctl_in(dut_ns, "/proc/sys/net/ipv4/ip_forward", "1")?;
        // An address on each end and its connected route, no neighbour entry: the router ARPs
        // for the sink (whose namespace's stack answers: the sink passes ARP) and for the
        // sender as a router in a rack would.
        inside.add_address(&dut.ingress, ingress_ip, 30)?;
        inside.add_address(&dut.egress, egress_ip, 30)?;
        if dut.kind == DutKind::Bgp {
            let (west, _, _, east) = crate::routed_addresses(&lab.name);
            // The backup subnet: a second device on the receive end peers there, so one
            // port offers the DUT a preferred and a next-best egress (docs/convergence.md).
            let backup = crate::backup_addresses(&lab.name);
            inside.add_address(&dut.egress, backup.0, 30)?;
            // IPv6 on the DUT's two links (the test ports' devices bring their own): the
            // sessions for IPv6 ranges, whose next hop must be on a connected IPv6 subnet.
            let (west6, ingress6, egress6, east6) = crate::routed_addresses6(&lab.name);
            ipv6_on_links(dut)?;
            inside.add_ip(&dut.ingress, ingress6.into(), 64)?;
            inside.add_ip(&dut.egress, egress6.into(), 64)?;
            let sessions = super::bird::Sessions {
                west: (ingress_ip, west),
                east: (egress_ip, east),
                backup,
                west6: (ingress6, west6),
                east6: (egress6, east6),
            };
            super::bird::start(&lab.name, dut_ns, &sessions)?;
        }
        if dut.kind == DutKind::Nat {
            super::nat::start(dut)?;
        }
    } else {
        // A bridge or the XDP DUT: one subnet, and static neighbours, so no ARP frame reaches
        // the sink.
        root.set_neighbour(&lab.sender, lab.receiver_ip, toward_sink)?;
        sink.set_neighbour(&lab.receiver, lab.sender_ip, toward_sender)?;
    }
    root.set_up(&lab.sender)?;
    Ok(())
}

/// The lab's marker file: its name, the DUT line, and the MACs `lab up` found.
fn write_marker(
    lab: &Lab,
    dut_line: &str,
    receiver_mac: &[u8; 6],
    ingress_mac: &[u8; 6],
) -> Result<(), LabError> {
    let marker = marker_path(&lab.name);
    std::fs::write(
        &marker,
        format!(
            "lab {}\n{dut_line}receiver-mac {}\ndut-mac {}\n",
            lab.name,
            fmt_mac(receiver_mac),
            fmt_mac(ingress_mac)
        ),
    )
    .map_err(state_io(format!("writing {}", marker.display())))
}

/// The bridge DUT: a bridge in the DUT's namespace over its two ends, IPv6 off.
fn add_bridge(inside: &mut Rtnl, lab: &Lab, dut: &Dut) -> Result<(), LabError> {
    let br = bridge(&lab.name);
    // Snooping off: with it the bridge joins the all-snoopers group (224.0.0.106) and
    // sends IGMP reports toward the sink, which would count them.
    inside.add_bridge_without_snooping(&br)?;
    write_sysctl_in(
        &dut.netns,
        &format!("/proc/sys/net/ipv6/conf/{br}/disable_ipv6"),
        "1",
    )?;
    for port in [&dut.ingress, &dut.egress] {
        inside.set_master(port, &br)?;
    }
    Ok(())
}

/// Loads `bpf/dut_fwd.bpf.c`, points its devmap at the DUT's egress and attaches it to the
/// DUT's ingress (native XDP), pinned so it outlives this process.
/// `bpf/pass.bpf.c` on the router's end toward the sink. A veth delivers XDP frames (XDP_TX, a
/// redirect) only to a peer that runs XDP: with it, the answers a receiver on the lab's receive
/// end sends from XDP (its hosts' ARP and ND, in the driver mode the pinned sink's link has)
/// reach the router as a NIC's would. Every frame passes on to the router's stack unchanged.
/// The end toward the sender gets none on purpose: live frames sent on `<name>0` would then
/// reach the router too, and a router lab's default transmitter would change from AF_XDP to
/// live, whose bursts into a veth lose frames at the veth's own queue (a back-to-back search
/// finds 64 frames) and whose paced spinning starves the delay line. A host on `<name>0`
/// answers from the generic hook instead (`linerate_hosts::answer_mode`).
fn attach_router_pass(lab: &Lab, dut: &Dut) -> Result<(), LabError> {
    let object =
        linerate_xdp::load_object_checked("pass", linerate_xdp::pass_object(), &[], |_| Ok(()))?;
    let mut link =
        linerate_xdp::attach_object(&object, &dut.egress, Some(&dut.netns), AttachMode::Drv)?;
    link.pin(&pin_dir(&lab.name).join(ROUTER_PASS_PIN))?;
    Ok(())
}

fn attach_xdp_dut(lab: &Lab, dut: &Dut) -> Result<(), LabError> {
    let object = linerate_xdp::load_object_checked(
        "dut_fwd",
        linerate_xdp::dut_fwd_object(),
        &[
            MapAbi::of::<u32, u32>("dut_ports"),
            MapAbi::of::<u32, crate::SinkCounters>("dut_counters"),
        ],
        |_| Ok(()),
    )?;
    let ports = object
        .maps()
        .find(|m| m.name() == "dut_ports")
        .ok_or_else(|| LabError::Command {
            command: "loading bpf/dut_fwd.bpf.c".into(),
            stderr: "the object has no map dut_ports".into(),
        })
        .and_then(|m| {
            libbpf_rs::MapHandle::try_from(&m).map_err(|e| LabError::Command {
                command: "opening the XDP DUT's devmap".into(),
                stderr: format!("{e:#}"),
            })
        })?;
    let egress = dut.egress.clone();
    // The kernel resolves a devmap's ifindex in the namespace of the thread that writes it: the
    // write must happen inside the DUT's namespace, or the index names a root-namespace device.
    in_netns(&dut.netns, move || {
        let index = linerate_xdp::ifindex(&egress)?;
        ports
            .update(&0u32.to_ne_bytes(), &index.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| LabError::Command {
                command: format!("filling the XDP DUT's devmap with {egress}"),
                stderr: format!("{e:#}"),
            })
    })?;
    let mut link =
        linerate_xdp::attach_object(&object, &dut.ingress, Some(&dut.netns), AttachMode::Drv)?;
    link.pin(&pin_dir(&lab.name).join(DUT_LINK_PIN))?;
    Ok(())
}

/// The DUT of lab `lab` as its marker, namespace and state files describe it; None for the
/// direct pair.
pub(crate) fn find(lab: &Lab) -> Result<Option<Dut>, LabError> {
    let name = &lab.name;
    let marker = std::fs::read_to_string(marker_path(name)).unwrap_or_default();
    let kind = marker
        .lines()
        .find_map(|l| l.strip_prefix("dut "))
        .and_then(DutKind::parse);
    let has_netns = netns_path(&netns(name)).exists();
    let incomplete = |missing: String| LabError::Incomplete {
        name: name.clone(),
        missing,
    };
    let Some(kind) = kind else {
        if has_netns {
            return Err(incomplete(format!(
                "the DUT's line in the marker {}",
                marker_path(name).display()
            )));
        }
        return Ok(None);
    };
    let mut dut = layout(name, kind);
    if !has_netns {
        return Err(incomplete(format!("network namespace {}", dut.netns)));
    }
    dut.ingress_mac = if nix::unistd::geteuid().is_root() {
        link_mac(Some(&dut.netns), &dut.ingress)
            .map_err(|_| incomplete(format!("interface {} in {}", dut.ingress, dut.netns)))?
    } else {
        marker
            .lines()
            .find_map(|l| l.strip_prefix("dut-mac "))
            .and_then(parse_mac)
            .ok_or_else(|| incomplete(format!("the marker {}", marker_path(name).display())))?
    };
    dut.impairments = std::fs::read_to_string(impair_path(name))
        .map(|t| Impairments::from_text(&t))
        .unwrap_or_default();
    dut.delay_line_running = delay::running(name).is_some();
    Ok(Some(dut))
}

/// Stops the delay line and removes the DUT's pins and state; the namespace goes with the lab.
pub(crate) fn remove(name: &str) -> Vec<Result<(), LabError>> {
    let dir = pin_dir(name);
    vec![
        delay::stop(name),
        super::bird::stop(name),
        linerate_xdp::unpin_link(&dir.join(DUT_LINK_PIN)).map_err(LabError::from),
        linerate_xdp::unpin_link(&dir.join(ROUTER_PASS_PIN)).map_err(LabError::from),
        linerate_xdp::unpin(&dir.join(IMPAIR_MAP_PIN)).map_err(LabError::from),
        remove_file(&impair_path(name)),
    ]
}

fn remove_file(path: &std::path::Path) -> Result<(), LabError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(LabError::Io {
            what: format!("removing {}", path.display()),
            source: e,
        }),
        _ => Ok(()),
    }
}

/// Sets the impairments of lab `lab`'s DUT egress, replacing any before: the BPF program for
/// loss, duplication and the delay line's diversion, tbf (or pfifo) for rate and queue limit,
/// the delay line's process for delay, jitter and reorder; a tbf on the DUT's other port for
/// the reverse rate. `Impairments::default()` clears.
/// `delay_line` is the program to start the delay line with (`<it> lab delay-line --name N`).
pub(crate) fn impair(
    lab: &Lab,
    imp: &Impairments,
    delay_line: &std::path::Path,
) -> Result<(), LabError> {
    imp.validate()?;
    let name = lab.name.as_str();
    let dut = lab
        .dut
        .as_ref()
        .ok_or_else(|| LabError::NoDut { name: name.into() })?;
    if dut.kind == DutKind::Xdp && !imp.is_none() {
        return Err(LabError::XdpDutImpair { name: name.into() });
    }
    clear(lab, dut)?;
    if imp.is_none() {
        return Ok(());
    }
    let state = impair_path(name);
    std::fs::write(&state, imp.to_text())
        .map_err(state_io(format!("writing {}", state.display())))?;
    let result = apply(lab, dut, imp, delay_line);
    if result.is_err() {
        let _ = clear(lab, dut);
    }
    result
}

fn apply(
    lab: &Lab,
    dut: &Dut,
    imp: &Impairments,
    delay_line: &std::path::Path,
) -> Result<(), LabError> {
    let name = lab.name.as_str();
    let ns = dut.netns.as_str();
    let mut divert_ifindex = 0;
    if imp.needs_delay_line() {
        let (q0, q1) = divert_ends(name);
        // Looked up in the namespace itself: /sys/class/net shows the namespace sysfs was
        // mounted in, not the calling thread's.
        if in_netns(ns, || Ok(linerate_xdp::ifindex(&q0).is_err()))? {
            let mut inside = Rtnl::open(Some(ns))?;
            inside.add_veth(&q0, &q1, None, None)?;
            for dev in [&q0, &q1] {
                write_sysctl_in(
                    ns,
                    &format!("/proc/sys/net/ipv6/conf/{dev}/disable_ipv6"),
                    "1",
                )?;
                inside.set_up(dev)?;
            }
        }
        divert_ifindex = in_netns(ns, || Ok(linerate_xdp::ifindex(&q0)?))?;
        delay::start(name, delay_line)?;
    }
    if imp.loss > 0.0 || imp.duplicate > 0.0 || divert_ifindex != 0 {
        attach_impair(lab, dut, imp, divert_ifindex)?;
    }
    if imp.rate_bps.is_some() || imp.limit.is_some() {
        shape(dut, imp)?;
    }
    if let Some(rate_bps) = imp.reverse_rate_bps {
        // The reverse direction's egress is the DUT's port toward the sender.
        Rtnl::open(Some(&dut.netns))?.replace_qdisc(
            &dut.ingress,
            TcHandle::ROOT,
            TcHandle { major: 1, minor: 0 },
            "tbf",
            netlink::tbf_options(tbf(rate_bps)),
        )?;
    }
    Ok(())
}

/// Loads `bpf/impair.bpf.c` with the thresholds and attaches it to tc clsact egress of the DUT's
/// egress through libbpf's tc hook; pins its counters.
fn attach_impair(
    lab: &Lab,
    dut: &Dut,
    imp: &Impairments,
    divert_ifindex: u32,
) -> Result<(), LabError> {
    let rodata = ImpairRodata {
        loss: Impairments::threshold(imp.loss),
        duplicate: Impairments::threshold(imp.duplicate),
        divert_ifindex,
        pad: 0,
    };
    let object = linerate_xdp::load_object_checked(
        "impair",
        linerate_xdp::impair_object(),
        &IMPAIR_ABI,
        |open| {
            let mut map = open
                .maps_mut()
                .find(|m| m.name().to_string_lossy().ends_with(".rodata"))
                .ok_or_else(|| {
                    libbpf_rs::Error::from(io::Error::other("the object has no .rodata"))
                })?;
            let data = map.initial_value_mut().ok_or_else(|| {
                libbpf_rs::Error::from(io::Error::other(".rodata has no initial value"))
            })?;
            // SAFETY: ImpairRodata is #[repr(C)] plain integers; viewing it as bytes is sound.
            let bytes = unsafe {
                std::slice::from_raw_parts(
                    (&raw const rodata).cast::<u8>(),
                    size_of::<ImpairRodata>(),
                )
            };
            data[..bytes.len()].copy_from_slice(bytes);
            Ok(())
        },
    )?;
    let program = object.progs().next().ok_or_else(|| LabError::Command {
        command: "loading bpf/impair.bpf.c".into(),
        stderr: "the object holds no program".into(),
    })?;
    let prog_fd = program.as_fd();
    let egress = dut.egress.clone();
    in_netns(&dut.netns, move || {
        let index = linerate_xdp::ifindex(&egress)?;
        let mut hook = TcHookBuilder::new(prog_fd)
            .ifindex(index as i32)
            .replace(true)
            .handle(1)
            .priority(1)
            .hook(TC_EGRESS);
        let tc_error = |what: &str, e: libbpf_rs::Error| LabError::Command {
            command: format!("{what} on {egress}"),
            stderr: format!("{e:#}"),
        };
        hook.create()
            .map_err(|e| tc_error("creating the clsact qdisc", e))?;
        hook.attach()
            .map_err(|e| tc_error("attaching bpf/impair.bpf.c to tc egress", e))?;
        Ok(())
    })?;
    let map = object
        .maps()
        .find(|m| m.name() == "impair_counters")
        .ok_or_else(|| LabError::Command {
            command: "loading bpf/impair.bpf.c".into(),
            stderr: "the object has no map impair_counters".into(),
        })?;
    linerate_xdp::pin_fd(map.as_fd(), &pin_dir(&lab.name).join(IMPAIR_MAP_PIN))?;
    Ok(())
}

/// Rate and queue limit on the DUT's egress root: tbf (with a pfifo child for `--limit`), or a
/// pfifo alone, with handles 1: (root) and 10: (the child) as `tc` would name them.
fn shape(dut: &Dut, imp: &Impairments) -> Result<(), LabError> {
    let mut inside = Rtnl::open(Some(&dut.netns))?;
    let dev = dut.egress.as_str();
    let root = TcHandle { major: 1, minor: 0 };
    let Some(rate_bps) = imp.rate_bps else {
        let limit = imp.limit.unwrap_or(1000);
        return inside.replace_qdisc(
            dev,
            TcHandle::ROOT,
            root,
            "pfifo",
            netlink::pfifo_options(limit),
        );
    };
    inside.replace_qdisc(
        dev,
        TcHandle::ROOT,
        root,
        "tbf",
        netlink::tbf_options(tbf(rate_bps)),
    )?;
    if let Some(limit) = imp.limit {
        inside.replace_qdisc(
            dev,
            TcHandle { major: 1, minor: 1 },
            TcHandle {
                major: 0x10,
                minor: 0,
            },
            "pfifo",
            netlink::pfifo_options(limit),
        )?;
    }
    Ok(())
}

/// tbf for `rate_bps` bits per second: a burst of 5 ms at the rate, at least two full frames
/// (tbf refuses frames over the burst). tc-tbf(8) asks for at least rate/HZ: tokens that arrive
/// while the bucket is full are lost, so a bucket shorter than the time the dequeue timer may
/// wait (a tick at HZ 250 is 4 ms, and longer on a busy 2-vCPU machine) shapes below the rate.
/// With 1 ms the lab's shaper passed 1–5 % less than its rate under a bidirectional test's load.
/// A queue of what leaves within 50 ms plus the burst (tc's `latency 50ms`); `--limit` replaces
/// that queue with a pfifo of frames.
fn tbf(rate_bps: u64) -> netlink::Tbf {
    let rate = rate_bps / 8;
    let burst = (rate / 200).max(2 * 1518);
    let limit = rate / 20 + burst;
    netlink::Tbf {
        rate,
        burst: u32::try_from(burst).unwrap_or(u32::MAX),
        limit: u32::try_from(limit).unwrap_or(u32::MAX),
    }
}

/// Removes every impairment: the delay line, the clsact qdisc (and the program with it), the
/// root qdisc, the counters pin and the record.
fn clear(lab: &Lab, dut: &Dut) -> Result<(), LabError> {
    let name = lab.name.as_str();
    delay::stop(name)?;
    let egress = dut.egress.clone();
    in_netns(&dut.netns, move || {
        let index = linerate_xdp::ifindex(&egress)?;
        // destroy() reads only the ifindex and the attach point, never the program fd.
        let stdin = io::stdin();
        let mut hook = TcHookBuilder::new(stdin.as_fd())
            .ifindex(index as i32)
            .hook(TC_INGRESS | TC_EGRESS);
        // Both attach points: libbpf then deletes the clsact qdisc, not only its filters.
        // Destroying clsact when there is none answers ENOENT or EINVAL: nothing to do, and
        // libbpf's printed "Cannot find specified qdisc" would only alarm.
        let previous = libbpf_rs::set_print(None);
        let _ = hook.destroy();
        libbpf_rs::set_print(previous);
        Ok(())
    })?;
    let mut inside = Rtnl::open(Some(&dut.netns))?;
    inside.del_root_qdisc(&dut.egress)?;
    inside.del_root_qdisc(&dut.ingress)?;
    linerate_xdp::unpin(&pin_dir(name).join(IMPAIR_MAP_PIN))?;
    remove_file(&impair_path(name))?;
    // Give the kernel a moment to free the old program's qdisc before a new one is made.
    std::thread::sleep(Duration::from_millis(10));
    Ok(())
}

/// What the impairment program has counted so far (zeroes when none is attached).
pub(crate) fn counters(name: &str) -> Result<ImpairCounters, LabError> {
    let path = pin_dir(name).join(IMPAIR_MAP_PIN);
    if !path.exists() {
        return Ok(ImpairCounters::default());
    }
    let map = libbpf_rs::MapHandle::from_pinned_path(&path).map_err(|e| LabError::Command {
        command: format!("opening {}", path.display()),
        stderr: format!("{e:#}"),
    })?;
    let per_cpu = map
        .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
        .map_err(|e| LabError::Command {
            command: format!("reading {}", path.display()),
            stderr: format!("{e:#}"),
        })?
        .unwrap_or_default();
    let mut total = ImpairCounters::default();
    for value in per_cpu {
        let word = |i: usize| {
            value
                .get(i * 8..i * 8 + 8)
                .map_or(0, |b| u64::from_ne_bytes(b.try_into().expect("8 bytes")))
        };
        total.seen += word(0);
        total.dropped += word(1);
        total.duplicated += word(2);
        total.diverted += word(3);
    }
    Ok(total)
}

/// IPv6 on the DUT's two links only, forwarding between them (the lab turns it off everywhere
/// else): no router advertisement taken, no address made up, no duplicate detection to wait
/// for.
pub(super) fn ipv6_on_links(dut: &Dut) -> Result<(), LabError> {
    for dev in [&dut.ingress, &dut.egress] {
        for (key, value) in [
            ("accept_ra", "0"),
            ("autoconf", "0"),
            ("accept_dad", "0"),
            ("disable_ipv6", "0"),
        ] {
            let path = format!("/proc/sys/net/ipv6/conf/{dev}/{key}");
            write_sysctl_in(&dut.netns, &path, value)?;
        }
    }
    write_sysctl_in(&dut.netns, "/proc/sys/net/ipv6/conf/all/forwarding", "1")
}
