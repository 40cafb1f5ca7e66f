//! Running the devices' daemons: per device a namespace, a macvlan of each of its ports and a
//! `bgpd` child process started inside (a thread that entered the namespace spawns it, so no
//! `ip netns exec`), each under /run/linerate/routing/<netns>/ with its configuration, pid,
//! vty socket and log. Dropping [`Routers`] stops the daemons and deletes the namespaces; a
//! linerate that was killed leaves them to the next one, which removes every set whose owner is
//! gone before it starts its own.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde_json::Value;

use crate::frr::{self, Prefixes, Session};
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
    daemon: Option<Child>,
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
        let bgpd = bgpd_path();
        if !bgpd.exists() {
            return Err(RoutingError::NoDaemon {
                path: bgpd.display().to_string(),
            });
        }
        sweep_orphans();
        let mut routers = Routers {
            devices: Vec::with_capacity(devices.len()),
        };
        for spec in devices {
            let netns = linerate_lab::unique_name("lrd");
            let dir = Path::new(RUN_DIR).join(&netns);
            std::fs::create_dir_all(&dir).map_err(io(format!("creating {}", dir.display())))?;
            std::fs::write(dir.join("owner"), std::process::id().to_string())
                .map_err(io(format!("writing {}", dir.display())))?;
            linerate_lab::device::add_netns(&netns)?;
            routers.devices.push(Running {
                spec,
                netns,
                dir,
                daemon: None,
            });
            let r = routers.devices.last_mut().expect("pushed");
            r.plumb()?;
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
                if r.daemon.is_none() {
                    r.start()?;
                }
            } else {
                r.stop();
            }
        }
        Ok(())
    }

    /// Whether the daemons run (after start, or `set_running(true)`).
    pub fn running(&self) -> bool {
        self.devices.iter().any(|r| r.daemon.is_some())
    }

    /// Fails naming the first device whose daemon exited on its own, with its last log line.
    pub fn check(&mut self) -> Result<(), RoutingError> {
        self.devices.iter_mut().try_for_each(Running::check)
    }

    /// Every peer's session, as `(peer name, session)`; a stopped daemon's peers are Idle.
    pub fn sessions(&mut self) -> Result<Vec<(String, Session)>, RoutingError> {
        let mut out = Vec::new();
        for r in &mut self.devices {
            r.check()?;
            let found = match r.daemon {
                Some(_) => frr::sessions(&r.asked("show bgp neighbors json")?),
                None => Vec::new(),
            };
            for p in &r.spec.bgp.peers {
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
            let Some(p) = r.spec.bgp.peers.iter().find(|p| p.name == peer) else {
                continue;
            };
            let address: IpAddr = p.address;
            r.check()?;
            if r.daemon.is_none() {
                return Ok(Some(Prefixes::default()));
            }
            let v4 = frr::learned(&r.asked("show bgp ipv4 unicast json detail")?, address);
            let v6 = frr::learned(&r.asked("show bgp ipv6 unicast json detail")?, address);
            return Ok(Some(Prefixes { v4, v6 }));
        }
        Ok(None)
    }

    /// Advertises or withdraws route range `name` on its running daemon; false: no range of
    /// that name.
    pub fn announce(&mut self, name: &str, advertise: bool) -> Result<bool, RoutingError> {
        for r in &mut self.devices {
            let Some(range) = r
                .spec
                .bgp
                .peers
                .iter_mut()
                .flat_map(|p| &mut p.routes)
                .find(|x| x.name == name)
            else {
                continue;
            };
            range.advertised = advertise;
            let commands = frr::announce(&r.spec, name, advertise)?.expect("the range is there");
            if r.daemon.is_some() {
                r.check()?;
                r.configure(&commands)?;
            }
            return Ok(true);
        }
        Ok(false)
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
            linerate_lab::device::add_port_link(
                iface,
                netns,
                &format!("eth{i}"),
                link.mac,
                &self.netns,
                &link.addrs,
            )?;
        }
        Ok(())
    }

    fn start(&mut self) -> Result<(), RoutingError> {
        let conf = self.dir.join("bgpd.conf");
        std::fs::write(&conf, frr::config(&self.spec)?)
            .map_err(io(format!("writing {}", conf.display())))?;
        let socket = self.dir.join("bgpd.vty");
        let _ = std::fs::remove_file(&socket);
        let out = std::fs::File::create(self.dir.join("bgpd.out"))
            .map_err(io(format!("creating {}", self.dir.display())))?;
        let err = out.try_clone().map_err(io("duplicating a log handle"))?;
        let mut command = Command::new(bgpd_path());
        // -Z: no zebra (nothing is installed in a FIB of the device's); -S: stay root, whose
        // namespace this is; -P 0: no vty over TCP, only the socket in the device's directory.
        command
            .args(["-Z", "-S", "-P", "0", "-f"])
            .arg(&conf)
            .arg("-i")
            .arg(self.dir.join("bgpd.pid"))
            .arg("--vty_socket")
            .arg(&self.dir)
            .arg("--log")
            .arg(format!("file:{}", self.dir.join("bgpd.log").display()))
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        let child = linerate_lab::device::within(&self.netns, || {
            command
                .spawn()
                .map_err(|source| linerate_lab::LabError::Io {
                    what: format!("starting {}", bgpd_path().display()),
                    source,
                })
        })?;
        self.daemon = Some(child);
        let deadline = Instant::now() + START_WAIT;
        while !socket.exists() {
            self.check()?;
            if Instant::now() > deadline {
                self.stop();
                return Err(self.failed("did not open its vty socket within 10 s"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.daemon.take() {
            // SIGTERM first: bgpd sends its peers a NOTIFICATION (Cease) as it goes.
            let _ = signal(child.id() as i32, Signal::SIGTERM);
            let deadline = Instant::now() + Duration::from_secs(3);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn failed(&self, why: &str) -> RoutingError {
        let log = std::fs::read_to_string(self.dir.join("bgpd.out")).unwrap_or_default();
        let last = log.lines().rev().find(|l| !l.trim().is_empty());
        RoutingError::Daemon {
            device: self.spec.name.clone(),
            why: match last {
                Some(l) => format!("{why}: {}", l.trim()),
                None => why.to_owned(),
            },
        }
    }

    fn check(&mut self) -> Result<(), RoutingError> {
        let Some(child) = &mut self.daemon else {
            return Ok(());
        };
        match child.try_wait() {
            Ok(Some(status)) => {
                self.daemon = None;
                Err(self.failed(&format!("exited ({status})")))
            }
            _ => Ok(()),
        }
    }

    /// One command's JSON answer; when there is none because the daemon has just died, its
    /// death is the answer: a daemon killed a moment before may not be reaped when `check`
    /// first looks, and vtysh then only says it reached no daemon.
    fn asked(&mut self, command: &str) -> Result<Value, RoutingError> {
        let failed = match self.ask(command) {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        for _ in 0..50 {
            self.check()?;
            if self.daemon.is_none() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        Err(failed)
    }

    /// One command's JSON answer.
    fn ask(&self, command: &str) -> Result<Value, RoutingError> {
        let out = self
            .vtysh()
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
        serde_json::from_slice(&out.stdout).map_err(|e| unreadable(e.to_string()))
    }

    /// Applies configuration `commands` to the running daemon.
    fn configure(&self, commands: &str) -> Result<(), RoutingError> {
        let file = self.dir.join("change.conf");
        std::fs::write(&file, commands).map_err(io(format!("writing {}", file.display())))?;
        let out = self
            .vtysh()
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

    fn vtysh(&self) -> Command {
        let mut c = Command::new("vtysh");
        c.arg("--vty_socket").arg(&self.dir).args(["-d", "bgpd"]);
        c
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
        // The macvlans go with the namespace.
        let _ = linerate_lab::device::del_netns(&self.netns);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Removes the namespaces and daemons of a linerate that is gone (killed before it could).
fn sweep_orphans() {
    let Ok(entries) = std::fs::read_dir(RUN_DIR) else {
        return;
    };
    for e in entries.filter_map(Result::ok) {
        let dir = e.path();
        let alive = |file: &str| {
            std::fs::read_to_string(dir.join(file))
                .ok()
                .and_then(|t| t.trim().parse::<i32>().ok())
                .filter(|pid| Path::new(&format!("/proc/{pid}")).exists())
        };
        if alive("owner").is_some() {
            continue;
        }
        if let Some(pid) = alive("bgpd.pid") {
            let _ = signal(pid, Signal::SIGKILL);
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
