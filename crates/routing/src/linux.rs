//! Running the devices' daemons: per device a namespace, a macvlan of each of its ports and its
//! daemons as child processes started inside (a thread that entered the namespace spawns them,
//! so no `ip netns exec`): `bgpd` for BGP; `zebra`, `staticd` and `isisd` for IS-IS, `ospfd`
//! and `ospf6d` beside them for OSPFv2 and OSPFv3, whose packets a [`WireCounter`] counts on
//! the device's links; `lldpd` for an LLDP agent. Each
//! device's files are under /run/linerate/routing/<netns>/: configurations, pids, vty sockets
//! and logs. Dropping [`Routers`] stops the daemons and deletes the namespaces; a
//! linerate that was killed leaves them to the next one, which removes every set whose owner is
//! gone before it starts its own.

use std::fmt::Write as _;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde_json::Value;

use crate::frr::isis::IsisView;
use crate::frr::ospf::{self as ospf, OspfState, OspfView};
use crate::frr::ospf6::{self, Ospf6State, Ospf6View};
use crate::frr::{self, Prefixes, Session};
use crate::wire::WireCounter;
use crate::{Device, RoutingError};

/// Where each device's files live.
const RUN_DIR: &str = "/run/linerate/routing";
/// How long a daemon has to open its vty socket.
const START_WAIT: Duration = Duration::from_secs(10);

/// FRR's `bgpd`: `LINERATE_BGPD` or Debian's path.
pub fn bgpd_path() -> PathBuf {
    std::env::var_os("LINERATE_BGPD")
        .map_or_else(|| PathBuf::from("/usr/lib/frr/bgpd"), PathBuf::from)
}

/// lldpd: `LINERATE_LLDPD` or Debian's path; lldpcli is beside it.
fn lldpd_path() -> PathBuf {
    std::env::var_os("LINERATE_LLDPD")
        .map_or_else(|| PathBuf::from("/usr/sbin/lldpd"), PathBuf::from)
}

fn lldpcli_path() -> PathBuf {
    lldpd_path().with_file_name("lldpcli")
}

/// FRR's other daemons: `LINERATE_FRR_DIR` or Debian's directory.
fn frr_dir() -> PathBuf {
    std::env::var_os("LINERATE_FRR_DIR")
        .map_or_else(|| PathBuf::from("/usr/lib/frr"), PathBuf::from)
}

/// One of FRR's daemons.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Daemon {
    Bgpd,
    Zebra,
    Staticd,
    Isisd,
    Ospfd,
    Ospf6d,
    Lldpd,
}

impl Daemon {
    fn name(self) -> &'static str {
        match self {
            Daemon::Bgpd => "bgpd",
            Daemon::Zebra => "zebra",
            Daemon::Staticd => "staticd",
            Daemon::Isisd => "isisd",
            Daemon::Ospfd => "ospfd",
            Daemon::Ospf6d => "ospf6d",
            Daemon::Lldpd => "lldpd",
        }
    }

    fn path(self) -> PathBuf {
        match self {
            Daemon::Bgpd => bgpd_path(),
            Daemon::Lldpd => lldpd_path(),
            other => frr_dir().join(other.name()),
        }
    }

    /// Every daemon's name, for the files an orphaned set leaves.
    const ALL: [Daemon; 7] = [
        Daemon::Lldpd,
        Daemon::Bgpd,
        Daemon::Zebra,
        Daemon::Staticd,
        Daemon::Isisd,
        Daemon::Ospfd,
        Daemon::Ospf6d,
    ];
}

/// The control planes of a config's devices, running.
#[derive(Debug)]
pub struct Routers {
    devices: Vec<Running>,
}

#[derive(Debug)]
struct Running {
    spec: Device,
    netns: String,
    dir: PathBuf,
    /// In the order they were started (zebra before its clients).
    daemons: Vec<(Daemon, Child)>,
    /// The OSPF packets on the device's links, for a device with OSPF.
    wire: Option<WireCounter>,
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> RoutingError {
    let what = what.into();
    move |source| RoutingError::Io { what, source }
}

impl Routers {
    /// Checks every device, then gives each its namespace, links and daemon. Whatever was made
    /// before a failure is removed again.
    pub fn start(devices: Vec<Device>) -> Result<Routers, RoutingError> {
        for d in &devices {
            d.validate()?;
        }
        if devices.is_empty() {
            return Ok(Routers {
                devices: Vec::new(),
            });
        }
        let mut needed = Vec::new();
        if devices.iter().any(|d| d.bgp.is_some()) {
            needed.push(Daemon::Bgpd);
        }
        if devices
            .iter()
            .any(|d| d.isis.is_some() || d.ospf.is_some() || d.ospf6.is_some())
        {
            needed.extend([Daemon::Zebra, Daemon::Staticd]);
        }
        if devices.iter().any(|d| d.isis.is_some()) {
            needed.push(Daemon::Isisd);
        }
        if devices.iter().any(|d| d.ospf.is_some()) {
            needed.push(Daemon::Ospfd);
        }
        if devices.iter().any(|d| d.ospf6.is_some()) {
            needed.push(Daemon::Ospf6d);
        }
        if devices.iter().any(|d| d.lldp.is_some()) {
            needed.push(Daemon::Lldpd);
        }
        for d in needed {
            let path = d.path();
            if !path.exists() {
                return Err(RoutingError::NoDaemon {
                    path: path.display().to_string(),
                });
            }
        }
        sweep_orphans();
        let mut routers = Routers {
            devices: Vec::with_capacity(devices.len()),
        };
        for spec in devices {
            let netns = linerate_lab::unique_name("lrd");
            let dir = Path::new(RUN_DIR).join(&netns);
            owned_dir(&dir)?;
            linerate_lab::device::add_netns(&netns)?;
            routers.devices.push(Running {
                spec,
                netns,
                dir,
                daemons: Vec::new(),
                wire: None,
            });
            let r = routers.devices.last_mut().expect("pushed");
            r.plumb()?;
            if r.spec.ospf.is_some() || r.spec.ospf6.is_some() {
                let macs = r.spec.links.iter().map(|l| l.mac).collect();
                r.wire = Some(WireCounter::start(&r.netns, macs)?);
            }
        }
        // Every device's links and counters before any daemon: a first hello sent before its
        // peer's macvlan exists is lost, and OSPF sends the next one a hello interval later
        // (10 s by default) where the first, heard, takes the adjacency to Full in a second.
        for r in &mut routers.devices {
            r.start()?;
        }
        Ok(routers)
    }

    /// The devices, as given.
    pub fn devices(&self) -> impl Iterator<Item = &Device> {
        self.devices.iter().map(|r| &r.spec)
    }

    /// Every device's namespace, by device name (for a test or an operator to look inside).
    pub fn namespaces(&self) -> Vec<(String, String)> {
        self.devices
            .iter()
            .map(|r| (r.spec.name.clone(), r.netns.clone()))
            .collect()
    }

    /// Stops (`false`) or starts again (`true`) every daemon: OTG's `protocol.all`. A stopped
    /// daemon's sessions go down and its peers withdraw what it advertised.
    pub fn set_running(&mut self, run: bool) -> Result<(), RoutingError> {
        for r in &mut self.devices {
            if run {
                if r.daemons.is_empty() {
                    r.start()?;
                }
            } else {
                r.stop();
            }
        }
        Ok(())
    }

    /// Stops (`false`) or starts again (`true`) the daemons of device `name` alone (a
    /// benchmark's failure event on one path); false: no device of that name.
    pub fn set_device_running(&mut self, name: &str, run: bool) -> Result<bool, RoutingError> {
        let Some(r) = self.devices.iter_mut().find(|r| r.spec.name == name) else {
            return Ok(false);
        };
        if !run {
            r.stop();
        } else if r.daemons.is_empty() {
            r.start()?;
        }
        Ok(true)
    }

    /// Whether the daemons run (after start, or `set_running(true)`).
    pub fn running(&self) -> bool {
        self.devices.iter().any(|r| !r.daemons.is_empty())
    }

    /// Fails naming the first device whose daemon exited on its own, with its last log line.
    pub fn check(&mut self) -> Result<(), RoutingError> {
        self.devices.iter_mut().try_for_each(Running::check)
    }

    /// Every peer's session, as `(peer name, session)`; a stopped daemon's peers are Idle.
    pub fn sessions(&mut self) -> Result<Vec<(String, Session)>, RoutingError> {
        let mut out = Vec::new();
        for r in &mut self.devices {
            let Some(bgp) = &r.spec.bgp else { continue };
            let peers = bgp.peers.clone();
            r.check()?;
            let found = if r.daemons.is_empty() {
                Vec::new()
            } else {
                frr::sessions(&r.asked(Daemon::Bgpd, "show bgp neighbors json")?)
            };
            for p in &peers {
                let address = p.address.to_string();
                let s = found
                    .iter()
                    .find(|s| s.address == address)
                    .cloned()
                    .unwrap_or_else(|| Session {
                        address,
                        state: "Idle".into(),
                        ..Session::default()
                    });
                out.push((p.name.clone(), s));
            }
        }
        Ok(out)
    }

    /// The IPv4 and the IPv6 prefixes peer `peer` sent its device; None: no peer of that name.
    pub fn learned(&mut self, peer: &str) -> Result<Option<Prefixes>, RoutingError> {
        for r in &mut self.devices {
            let Some(p) = r
                .spec
                .bgp
                .iter()
                .flat_map(|b| &b.peers)
                .find(|p| p.name == peer)
            else {
                continue;
            };
            let address: IpAddr = p.address;
            r.check()?;
            if r.daemons.is_empty() {
                return Ok(Some(Prefixes::default()));
            }
            let v4 = frr::learned(
                &r.asked(Daemon::Bgpd, "show bgp ipv4 unicast json detail")?,
                address,
            );
            let v6 = frr::learned(
                &r.asked(Daemon::Bgpd, "show bgp ipv6 unicast json detail")?,
                address,
            );
            return Ok(Some(Prefixes { v4, v6 }));
        }
        Ok(None)
    }

    /// Advertises or withdraws route range `name` (BGP's, IS-IS's or OSPF's) on its device;
    /// false: no range of that name.
    pub fn announce(&mut self, name: &str, advertise: bool) -> Result<bool, RoutingError> {
        for r in &mut self.devices {
            if let Some(range) = r
                .spec
                .bgp
                .iter_mut()
                .flat_map(|b| &mut b.peers)
                .flat_map(|p| &mut p.routes)
                .find(|x| x.name == name)
            {
                range.advertised = advertise;
                let commands =
                    frr::announce(&r.spec, name, advertise)?.expect("the range is there");
                if !r.daemons.is_empty() {
                    r.check()?;
                    r.configure(Daemon::Bgpd, &commands)?;
                }
                return Ok(true);
            }
            let v2 = r
                .spec
                .ospf
                .as_ref()
                .is_some_and(|o| o.routes.iter().any(|x| x.name == name));
            let v3 = r
                .spec
                .ospf6
                .as_ref()
                .is_some_and(|o| o.routes.iter().any(|x| x.name == name));
            if v2 || v3 {
                let o = if v2 {
                    r.spec.ospf.as_mut()
                } else {
                    r.spec.ospf6.as_mut()
                }
                .expect("the router is there");
                if let Some(range) = o.routes.iter_mut().find(|x| x.name == name) {
                    range.advertised = advertise;
                }
                let change = if v2 {
                    ospf::announce(o, name, advertise)?
                } else {
                    ospf6::announce(o, name, advertise)?
                }
                .expect("the range is there");
                match change {
                    // A range's link is the device's own: its addresses come and go with the
                    // range, whether the daemon runs or not.
                    ospf::Change::Addresses(commands) => r.ip_batch(&commands)?,
                    ospf::Change::Staticd(commands) => {
                        if !r.daemons.is_empty() {
                            r.check()?;
                            r.configure(Daemon::Staticd, &commands)?;
                        }
                    }
                }
                return Ok(true);
            }
            let Some(isis) = r.spec.isis.as_mut() else {
                continue;
            };
            let Some(range) = isis.routes.iter_mut().find(|x| x.name == name) else {
                continue;
            };
            range.advertised = advertise;
            let commands = frr::isis::announce(isis, name, advertise)?.expect("the range is there");
            if !r.daemons.is_empty() {
                r.check()?;
                r.configure(Daemon::Staticd, &commands)?;
            }
            return Ok(true);
        }
        Ok(false)
    }

    /// Every IS-IS router's state by its OTG name; None for a router whose daemons are
    /// stopped.
    pub fn isis(&mut self) -> Result<Vec<(String, Option<IsisView>)>, RoutingError> {
        let mut out = Vec::new();
        for r in &mut self.devices {
            let Some(name) = r.spec.isis.as_ref().map(|i| i.name.clone()) else {
                continue;
            };
            r.check()?;
            if r.daemons.is_empty() {
                out.push((name, None));
                continue;
            }
            let adjacencies =
                frr::isis::adjacencies(&r.asked(Daemon::Isisd, "show isis neighbor detail json")?);
            let pdus = frr::isis::pdus(&r.asked(Daemon::Isisd, "show isis summary json")?);
            let names = frr::isis::hostnames(&r.told(Daemon::Isisd, "show isis hostname")?);
            let lsps =
                frr::isis::database(&r.told(Daemon::Isisd, "show isis database detail")?, &names);
            out.push((
                name,
                Some(IsisView {
                    adjacencies,
                    pdus,
                    lsps,
                }),
            ));
        }
        Ok(out)
    }

    /// Every OSPFv2 router's state by its OTG name, with the packets counted on its links;
    /// no view for a router whose daemons are stopped.
    pub fn ospf(&mut self) -> Result<Vec<OspfState>, RoutingError> {
        let mut out = Vec::new();
        for r in &mut self.devices {
            let Some(o) = r.spec.ospf.as_ref() else {
                continue;
            };
            let mut state = OspfState {
                name: o.name.clone(),
                interfaces: o
                    .interfaces
                    .iter()
                    .map(|i| format!("eth{}", i.link))
                    .collect(),
                ..OspfState::default()
            };
            r.check()?;
            state.counts = r.wire.as_ref().map(|w| w.counts(2)).unwrap_or_default();
            let log = r.dir.join("ospfd.log");
            if r.daemons.is_empty() {
                state.flaps = flaps(&log, 0);
                out.push(state);
                continue;
            }
            let neighbours =
                ospf::neighbours(&r.asked(Daemon::Ospfd, "show ip ospf neighbor detail json")?);
            let mut db =
                |what: &str| r.asked(Daemon::Ospfd, &format!("show ip ospf database {what} json"));
            let lsas = ospf::Lsdb {
                router: ospf::router_lsas(&db("router")?),
                network: ospf::network_lsas(&db("network")?),
                summary: ospf::summary_lsas(&db("summary")?, "summaryLinkStates"),
                asbr_summary: ospf::summary_lsas(&db("asbr-summary")?, "asbrSummaryLinkStates"),
                external: ospf::external_lsas(&db("external")?),
                nssa: ospf::nssa_lsas(&db("nssa-external")?),
            };
            state.flaps = flaps(&log, neighbours.iter().filter(|n| n.full()).count() as u64);
            state.view = Some(OspfView { neighbours, lsas });
            out.push(state);
        }
        Ok(out)
    }

    /// Every LLDP agent's counters and neighbours by its OTG name (zeros and none while its
    /// lldpd is stopped).
    pub fn lldp(&mut self) -> Result<Vec<crate::lldp::LldpState>, RoutingError> {
        let mut out = Vec::new();
        for r in &mut self.devices {
            let Some(l) = r.spec.lldp.as_ref() else {
                continue;
            };
            let mut state = crate::lldp::LldpState {
                name: l.name.clone(),
                ..Default::default()
            };
            r.check()?;
            if !r.daemons.is_empty() {
                state.counts = crate::lldp::statistics(&r.lldpcli("show statistics")?);
                state.neighbours = crate::lldp::neighbours(&r.lldpcli("show neighbors details")?);
            }
            out.push(state);
        }
        Ok(out)
    }

    /// Every OSPFv3 router's state by its OTG name, as [`Routers::ospf`].
    pub fn ospf6(&mut self) -> Result<Vec<Ospf6State>, RoutingError> {
        let mut out = Vec::new();
        for r in &mut self.devices {
            let Some(o) = r.spec.ospf6.as_ref() else {
                continue;
            };
            let me = o.router_id;
            let mut state = Ospf6State {
                name: o.name.clone(),
                interfaces: o
                    .interfaces
                    .iter()
                    .map(|i| format!("eth{}", i.link))
                    .collect(),
                ..Ospf6State::default()
            };
            r.check()?;
            state.counts = r.wire.as_ref().map(|w| w.counts(3)).unwrap_or_default();
            let log = r.dir.join("ospf6d.log");
            if r.daemons.is_empty() {
                state.flaps = flaps(&log, 0);
                out.push(state);
                continue;
            }
            let neighbours = ospf6::neighbours(
                &r.asked(Daemon::Ospf6d, "show ipv6 ospf6 neighbor detail json")?,
            );
            let lsas = ospf6::database(
                &r.asked(Daemon::Ospf6d, "show ipv6 ospf6 database detail json")?,
                me,
            );
            state.flaps = flaps(&log, neighbours.iter().filter(|n| n.full()).count() as u64);
            state.view = Some(Ospf6View { neighbours, lsas });
            out.push(state);
        }
        Ok(out)
    }
}

impl Running {
    /// The device's links in its namespace: `eth0`, `eth1`, … in the order of its links.
    fn plumb(&self) -> Result<(), RoutingError> {
        for (i, link) in self.spec.links.iter().enumerate() {
            let (iface, netns) = match link.port.split_once('@') {
                Some((i, n)) => (i, Some(n)),
                None => (link.port.as_str(), None),
            };
            let name = self.link_name(i);
            linerate_lab::device::add_port_link(
                iface,
                netns,
                &name,
                link.mac,
                &self.netns,
                &link.addrs,
            )?;
        }
        if let Some(o) = &self.spec.ospf {
            self.plumb_ranges(o, ospf::range_link)?;
        }
        if let Some(o) = &self.spec.ospf6 {
            self.plumb_ranges(o, ospf6::range_link)?;
        }
        Ok(())
    }

    /// The name of the device's link `i` in its namespace: an LLDP agent's is as its port id
    /// says; a router's eth0, eth1, ….
    fn link_name(&self, i: usize) -> String {
        match &self.spec.lldp {
            Some(l) => l.interface.clone(),
            None => format!("eth{i}"),
        }
    }

    /// Each OSPF range on a link gets its veth pair in the device's namespace, up, the range's
    /// prefixes as addresses of the device's side while it is advertised.
    fn plumb_ranges(&self, o: &crate::Ospf, link: fn(usize) -> String) -> Result<(), RoutingError> {
        let mut batch = String::new();
        for (i, r) in o.routes.iter().enumerate() {
            if !ospf::on_a_link(r) {
                continue;
            }
            let name = link(i);
            let _ = writeln!(batch, "link add {name} type veth peer name {name}p");
            if r.advertised {
                batch.push_str(&ospf::addresses(&name, &r.prefixes()?, true));
            }
            let _ = writeln!(batch, "link set {name}p up");
            let _ = writeln!(batch, "link set {name} up");
        }
        if batch.is_empty() {
            return Ok(());
        }
        self.ip_batch(&batch)
    }

    /// `ip -n <netns> -batch -`, fed `commands`.
    fn ip_batch(&self, commands: &str) -> Result<(), RoutingError> {
        use std::io::Write as _;
        let mut child = Command::new("ip")
            .args(["-n", &self.netns, "-batch", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(io("running ip"))?;
        child
            .stdin
            .take()
            .expect("piped")
            .write_all(commands.as_bytes())
            .map_err(io("feeding ip -batch"))?;
        let out = child.wait_with_output().map_err(io("running ip"))?;
        if !out.status.success() {
            return Err(RoutingError::Daemon {
                device: self.spec.name.clone(),
                daemon: "ip",
                why: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            });
        }
        Ok(())
    }

    /// Writes the device's configurations and starts its daemons: lldpd for an LLDP agent;
    /// bgpd for BGP; zebra, then its clients staticd, isisd, ospfd and ospf6d, for IS-IS and
    /// OSPF.
    fn start(&mut self) -> Result<(), RoutingError> {
        if let Some(l) = self.spec.lldp.clone() {
            return self.spawn_lldpd(&l);
        }
        if self.spec.bgp.is_some() {
            let conf = frr::config(&self.spec)?;
            self.spawn(Daemon::Bgpd, &conf)?;
        }
        if self.spec.isis.is_some() || self.spec.ospf.is_some() || self.spec.ospf6.is_some() {
            // FRR's daemons but bgpd cannot stay root (no -S): they drop to frr, which must
            // own the directory their pids, sockets and logs go to.
            let frr = nix::unistd::User::from_name("frr")
                .ok()
                .flatten()
                .ok_or_else(|| RoutingError::NoDaemon {
                    path: "the user frr (FRR's package makes it)".into(),
                })?;
            std::os::unix::fs::chown(&self.dir, Some(frr.uid.as_raw()), Some(frr.gid.as_raw()))
                .map_err(io(format!("handing {} to frr", self.dir.display())))?;
            let spawned = self.start_zebra_and_clients();
            if let Err(e) = spawned {
                self.stop();
                return Err(e);
            }
        }
        Ok(())
    }

    /// zebra, staticd with every static route of the device's ranges, then isisd and ospfd.
    fn start_zebra_and_clients(&mut self) -> Result<(), RoutingError> {
        let spec = self.spec.clone();
        let plain = frr::header(&spec.name);
        let (zebra, mut routes) = match &spec.isis {
            Some(isis) => (
                frr::isis::zebra_config(&spec, isis),
                frr::isis::static_routes(isis)?,
            ),
            None => (plain.clone(), String::new()),
        };
        if let Some(o) = &spec.ospf {
            routes.push_str(&ospf::static_routes(o)?);
        }
        if let Some(o) = &spec.ospf6 {
            routes.push_str(&ospf6::static_routes(o)?);
        }
        self.spawn(Daemon::Zebra, &zebra)?;
        self.spawn(Daemon::Staticd, &plain)?;
        // Through vtysh, not staticd's own file: vtysh commits a file's lines in one
        // transaction, where a daemon reading its file commits a line at a time against the
        // whole configuration so far — 10,000 routes took minutes that way, 7 s this way.
        if !routes.is_empty() {
            self.configure(Daemon::Staticd, &routes)?;
        }
        if let Some(isis) = &spec.isis {
            self.spawn(Daemon::Isisd, &frr::isis::isisd_config(&spec, isis))?;
        }
        if let Some(o) = &spec.ospf {
            self.spawn(Daemon::Ospfd, &ospf::ospfd_config(&spec, o))?;
        }
        if let Some(o) = &spec.ospf6 {
            self.spawn(Daemon::Ospf6d, &ospf6::ospf6d_config(&spec, o))?;
        }
        Ok(())
    }

    /// Starts the agent's lldpd with its lldpcli commands.
    fn spawn_lldpd(&mut self, l: &crate::lldp::Lldp) -> Result<(), RoutingError> {
        self.spawn(Daemon::Lldpd, &crate::lldp::lldpd_config(l))
    }

    /// Starts `daemon` with configuration `conf` and waits for its vty socket.
    fn spawn(&mut self, daemon: Daemon, conf: &str) -> Result<(), RoutingError> {
        let name = daemon.name();
        let file = self.dir.join(format!("{name}.conf"));
        std::fs::write(&file, conf).map_err(io(format!("writing {}", file.display())))?;
        let socket = self.dir.join(if daemon == Daemon::Lldpd {
            "lldpd.socket".to_owned()
        } else {
            format!("{name}.vty")
        });
        let _ = std::fs::remove_file(&socket);
        let out = std::fs::File::create(self.dir.join(format!("{name}.out")))
            .map_err(io(format!("creating {}", self.dir.display())))?;
        let err = out.try_clone().map_err(io("duplicating a log handle"))?;
        let mut command = Command::new(daemon.path());
        if let (Daemon::Lldpd, Some(l)) = (daemon, &self.spec.lldp) {
            // -d: in the foreground, its log on stderr; -k: no kernel version in the system
            // description; -I/-C: LLDP on the agent's link only, its chassis id that link's
            // MAC; no LLDP-MED, CDP or other protocols (their flags are not given).
            command
                .args(["-d", "-k", "-I", &l.interface, "-C", &l.interface, "-u"])
                .arg(&socket)
                .arg("-O")
                .arg(&file)
                .arg("-L")
                .arg(lldpcli_path());
        } else if daemon == Daemon::Bgpd {
            // -Z: no zebra (nothing is installed in a FIB of the device's); -S: stay root,
            // whose namespace this is.
            command.args(["-Z", "-S"]);
        } else {
            command
                .args(["-u", "frr", "-g", "frr", "-z"])
                .arg(self.dir.join("zserv.api"));
        }
        if daemon != Daemon::Lldpd {
            // FRR's: -P 0: no vty over TCP, only the socket in the device's directory.
            command
                .args(["-P", "0", "-f"])
                .arg(&file)
                .arg("-i")
                .arg(self.dir.join(format!("{name}.pid")))
                .arg("--vty_socket")
                .arg(&self.dir)
                .arg("--log")
                .arg(format!(
                    "file:{}",
                    self.dir.join(format!("{name}.log")).display()
                ));
        }
        command.stdin(Stdio::null()).stdout(out).stderr(err);
        let child = linerate_lab::device::within(&self.netns, || {
            command
                .spawn()
                .map_err(|source| linerate_lab::LabError::Io {
                    what: format!("starting {}", daemon.path().display()),
                    source,
                })
        })?;
        let id = child.id();
        self.daemons.push((daemon, child));
        if daemon == Daemon::Lldpd {
            // lldpd in the foreground writes no pid file: the sweep of an orphaned set and an
            // operator find it by this one.
            let pid = self.dir.join("lldpd.pid");
            std::fs::write(&pid, id.to_string())
                .map_err(io(format!("writing {}", pid.display())))?;
        }
        let deadline = Instant::now() + START_WAIT;
        while !socket.exists() {
            self.check()?;
            if Instant::now() > deadline {
                let e = self.failed(daemon, "did not open its vty socket within 10 s");
                self.stop();
                return Err(e);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// Stops every daemon, clients before zebra.
    fn stop(&mut self) {
        while let Some((_, mut child)) = self.daemons.pop() {
            // SIGTERM first: bgpd sends its peers a NOTIFICATION (Cease) as it goes, isisd
            // purges nothing but ends its adjacencies cleanly.
            let _ = signal(child.id() as i32, Signal::SIGTERM);
            let deadline = Instant::now() + Duration::from_secs(3);
            let mut gone = false;
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    gone = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            if !gone {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }

    fn failed(&self, daemon: Daemon, why: &str) -> RoutingError {
        let name = daemon.name();
        let log = std::fs::read_to_string(self.dir.join(format!("{name}.out"))).unwrap_or_default();
        let last = log.lines().rev().find(|l| !l.trim().is_empty());
        RoutingError::Daemon {
            device: self.spec.name.clone(),
            daemon: name,
            why: match last {
                Some(l) => format!("{why}: {}", l.trim()),
                None => why.to_owned(),
            },
        }
    }

    /// Fails naming the first daemon that exited on its own; the device's others are stopped
    /// with it (isisd without its zebra is no router).
    fn check(&mut self) -> Result<(), RoutingError> {
        let mut dead = None;
        for (daemon, child) in &mut self.daemons {
            if let Ok(Some(status)) = child.try_wait() {
                dead = Some((*daemon, status));
                break;
            }
        }
        let Some((daemon, status)) = dead else {
            return Ok(());
        };
        let e = self.failed(daemon, &format!("exited ({status})"));
        self.stop();
        Err(e)
    }

    /// One command's JSON answer; when there is none because the daemon has just died, its
    /// death is the answer: a daemon killed a moment before may not be reaped when `check`
    /// first looks, and vtysh then only says it reached no daemon.
    fn asked(&mut self, daemon: Daemon, command: &str) -> Result<Value, RoutingError> {
        let text = self.told(daemon, command)?;
        serde_json::from_str(&text).map_err(|e| RoutingError::Answer {
            device: self.spec.name.clone(),
            command: command.to_owned(),
            why: e.to_string(),
        })
    }

    /// One command's answer as text, with [`Running::asked`]'s care for a daemon that has
    /// just died.
    fn told(&mut self, daemon: Daemon, command: &str) -> Result<String, RoutingError> {
        let failed = match self.ask(daemon, command) {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        for _ in 0..50 {
            self.check()?;
            if self.daemons.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        Err(failed)
    }

    /// An lldpcli command's JSON answer, with [`Running::asked`]'s care for a daemon that has
    /// just died.
    fn lldpcli(&mut self, command: &str) -> Result<Value, RoutingError> {
        let out = Command::new(lldpcli_path())
            .arg("-u")
            .arg(self.dir.join("lldpd.socket"))
            .args(command.split(' '))
            .args(["-f", "json"])
            .output()
            .map_err(io("running lldpcli"))?;
        let unreadable = |why: String| RoutingError::Answer {
            device: self.spec.name.clone(),
            command: command.to_owned(),
            why,
        };
        if !out.status.success() {
            let e = unreadable(String::from_utf8_lossy(&out.stderr).trim().to_owned());
            for _ in 0..50 {
                self.check()?;
                std::thread::sleep(Duration::from_millis(10));
            }
            return Err(e);
        }
        serde_json::from_slice(&out.stdout).map_err(|e| unreadable(e.to_string()))
    }

    /// One command's answer.
    fn ask(&self, daemon: Daemon, command: &str) -> Result<String, RoutingError> {
        let out = self
            .vtysh(daemon)
            .args(["-c", command])
            .output()
            .map_err(io("running vtysh"))?;
        let unreadable = |why: String| RoutingError::Answer {
            device: self.spec.name.clone(),
            command: command.to_owned(),
            why,
        };
        if !out.status.success() {
            return Err(unreadable(
                String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Applies configuration `commands` to the running daemon.
    fn configure(&self, daemon: Daemon, commands: &str) -> Result<(), RoutingError> {
        let file = self.dir.join("change.conf");
        std::fs::write(&file, commands).map_err(io(format!("writing {}", file.display())))?;
        let out = self
            .vtysh(daemon)
            .arg("-f")
            .arg(&file)
            .output()
            .map_err(io("running vtysh"))?;
        if !out.status.success() {
            return Err(RoutingError::Answer {
                device: self.spec.name.clone(),
                command: "vtysh -f".into(),
                why: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            });
        }
        Ok(())
    }

    fn vtysh(&self, daemon: Daemon) -> Command {
        let mut c = Command::new("vtysh");
        c.arg("--vty_socket")
            .arg(&self.dir)
            .args(["-d", daemon.name()]);
        c
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
        let links: Vec<String> = (0..self.spec.links.len())
            .map(|i| self.link_name(i))
            .collect();
        let _ = linerate_lab::device::del_device_netns(&self.netns, &links);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// How often an adjacency left Full, from the daemon log at `path` ([`ospf::flaps`]).
fn flaps(path: &Path, full: u64) -> u64 {
    ospf::flaps(&std::fs::read_to_string(path).unwrap_or_default(), full)
}

/// Removes the namespaces and daemons of a linerate that is gone (killed before it could).
/// Makes `dir` with its `owner` file (this process) in it, whole: it is filled under a name
/// of its own and renamed into place, so another linerate's [`sweep_orphans`] never sees it
/// without its owner and removes it (and the namespace made next) as an orphan.
fn owned_dir(dir: &Path) -> Result<(), RoutingError> {
    let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let making = dir.with_file_name(format!(".{name}.making"));
    std::fs::create_dir_all(&making).map_err(io(format!("creating {}", making.display())))?;
    std::fs::write(making.join("owner"), std::process::id().to_string())
        .map_err(io(format!("writing {}", making.display())))?;
    std::fs::rename(&making, dir).map_err(io(format!("creating {}", dir.display())))
}

fn sweep_orphans() {
    let Ok(entries) = std::fs::read_dir(RUN_DIR) else {
        return;
    };
    for e in entries.filter_map(Result::ok) {
        let dir = e.path();
        // One being made (`owned_dir`) is its maker's; one left half made by a killed process
        // holds nothing that runs.
        if e.file_name().to_string_lossy().starts_with('.') {
            if e.metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|age| age.as_secs() > 60))
            {
                let _ = std::fs::remove_dir_all(&dir);
            }
            continue;
        }
        let alive = |file: &str| {
            std::fs::read_to_string(dir.join(file))
                .ok()
                .and_then(|t| t.trim().parse::<i32>().ok())
                .filter(|pid| Path::new(&format!("/proc/{pid}")).exists())
        };
        if alive("owner").is_some() {
            continue;
        }
        for d in Daemon::ALL {
            if let Some(pid) = alive(&format!("{}.pid", d.name())) {
                let _ = signal(pid, Signal::SIGKILL);
            }
        }
        if let Some(name) = dir.file_name().and_then(|n| n.to_str()) {
            let _ = linerate_lab::device::del_netns(name);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

fn signal(pid: i32, signal: Signal) -> nix::Result<()> {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal)
}
