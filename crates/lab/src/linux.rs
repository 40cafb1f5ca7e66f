//! Building and removing the lab with iproute2.
//!
//! Why `ip` through `std::process::Command` and not netlink from Rust: `ip` is the standard tool,
//! installed by scripts/setup.sh, its commands are the ones a person types to inspect or repair a
//! lab by hand, and its stderr ("RTNETLINK answers: File exists") is already a clear message.
//! The lab is built once per run, so the cost of a few processes does not matter. The one thing
//! `ip` must not do is attach the sink: `ip netns exec` remounts /sys and would hide bpffs, so
//! linerate-xdp enters the namespace with setns(2) itself.

use std::io;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::Command;

use linerate_xdp::{AttachMode, PinnedSink, Sink, SinkCounters};

use crate::{Lab, LabConfig, LabError, addresses, validate_name};

/// Where a lab's sink is pinned: /sys/fs/bpf/linerate/<name>.
fn pin_dir(name: &str) -> PathBuf {
    Path::new("/sys/fs/bpf/linerate").join(name)
}

fn netns_path(netns: &str) -> PathBuf {
    Path::new("/run/netns").join(netns)
}

fn iface_exists(iface: &str) -> bool {
    Path::new("/sys/class/net").join(iface).exists()
}

impl Lab {
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
        }
    }

    /// Creates netns `<name>-sink`, veth `<name>0` (root namespace) ↔ `<name>1` (in the
    /// namespace) with `queues` tx and rx queues each, IPv6 off on both ends, the /30 of
    /// [`crate::addresses`] (198.18.0.0/15), both up, static neighbour entries both ways, then
    /// attaches the sink to `<name>1` in driver mode and pins it under
    /// /sys/fs/bpf/linerate/<name>. If anything fails midway, removes what it created before
    /// returning the error. Error if a lab of that name exists.
    pub fn up(config: &LabConfig) -> Result<Lab, LabError> {
        config.validate()?;
        let name = config.name.as_str();
        if !nix::unistd::geteuid().is_root() {
            return Err(LabError::NotRoot {
                what: format!("creating lab {name}"),
            });
        }
        let layout = Lab::layout(name, config.queues);
        if iface_exists(&layout.sender)
            || netns_path(&layout.netns).exists()
            || pin_dir(name).exists()
        {
            return Err(LabError::Exists { name: name.into() });
        }
        // Nothing of this name existed, so on failure everything of this name is ours to remove.
        build(&layout).inspect_err(|_| {
            if let Err(cleanup) = Lab::down(name) {
                eprintln!("linerate-lab: cleaning up the half-built lab {name} failed: {cleanup}");
            }
        })?;
        Lab::find(name)?.ok_or_else(|| LabError::Incomplete {
            name: name.into(),
            missing: "everything, right after it was built".into(),
        })
    }

    /// Finds an existing lab (reads its interfaces, MACs, queue count); None when absent.
    /// A lab of which only some parts exist is an error that says how to remove it.
    pub fn find(name: &str) -> Result<Option<Lab>, LabError> {
        validate_name(name)?;
        let mut lab = Lab::layout(name, 0);
        let has_sender = iface_exists(&lab.sender);
        let has_netns = netns_path(&lab.netns).exists();
        let has_pins = pin_dir(name).exists();
        if !has_sender && !has_netns && !has_pins {
            return Ok(None);
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
        if !has_pins {
            return Err(incomplete(format!(
                "the sink pins under {}",
                pin_dir(name).display()
            )));
        }
        lab.sender_mac = link_mac(None, &lab.sender)?;
        lab.receiver_mac = link_mac(Some(&lab.netns), &lab.receiver)
            .map_err(|_| incomplete(format!("interface {} in {}", lab.receiver, lab.netns)))?;
        lab.queues = tx_queues(&lab.sender)?;
        Ok(Some(lab))
    }

    /// What the sink has counted so far, through the pinned map.
    pub fn sink_counters(&self) -> Result<SinkCounters, LabError> {
        Ok(PinnedSink::open(&pin_dir(&self.name))?.counters()?)
    }

    /// The directory the sink is pinned under.
    pub fn pin_dir(&self) -> PathBuf {
        pin_dir(&self.name)
    }

    /// Removes the pins, the veth pair and the netns. Safe to run twice and on a half-built lab.
    pub fn down(name: &str) -> Result<(), LabError> {
        validate_name(name)?;
        let lab = Lab::layout(name, 0);
        let mut first_error = None;
        let mut note = |r: Result<(), LabError>| {
            if let Err(e) = r
                && first_error.is_none()
            {
                first_error = Some(e);
            }
        };
        // Unpinning drops the last reference to the link: the sink detaches.
        note(PinnedSink::unpin(&pin_dir(name)).map_err(LabError::from));
        if iface_exists(&lab.sender) {
            // Deleting one end of a veth pair deletes both.
            note(ip(&["link", "del", "dev", &lab.sender]));
        }
        if netns_path(&lab.netns).exists() {
            note(ip(&["netns", "del", &lab.netns]));
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

fn build(lab: &Lab) -> Result<(), LabError> {
    let q = lab.queues.to_string();
    let ns = lab.netns.as_str();
    ip(&["netns", "add", ns])?;
    ip(&[
        "link",
        "add",
        &lab.sender,
        "numtxqueues",
        &q,
        "numrxqueues",
        &q,
        "type",
        "veth",
        "peer",
        "name",
        &lab.receiver,
        "netns",
        ns,
        "numtxqueues",
        &q,
        "numrxqueues",
        &q,
    ])?;
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
    let sender_cidr = format!("{}/30", lab.sender_ip);
    let receiver_cidr = format!("{}/30", lab.receiver_ip);
    ip(&["addr", "add", &sender_cidr, "dev", &lab.sender])?;
    ip(&[
        "-n",
        ns,
        "addr",
        "add",
        &receiver_cidr,
        "dev",
        &lab.receiver,
    ])?;
    // Static neighbours: no ARP frames either.
    let sender_mac = fmt_mac(&link_mac(None, &lab.sender)?);
    let receiver_mac = fmt_mac(&link_mac(Some(ns), &lab.receiver)?);
    ip(&[
        "neigh",
        "replace",
        &lab.receiver_ip.to_string(),
        "lladdr",
        &receiver_mac,
        "dev",
        &lab.sender,
        "nud",
        "permanent",
    ])?;
    ip(&[
        "-n",
        ns,
        "neigh",
        "replace",
        &lab.sender_ip.to_string(),
        "lladdr",
        &sender_mac,
        "dev",
        &lab.receiver,
        "nud",
        "permanent",
    ])?;
    // The sink goes on before the links come up, so it sees every frame from the first.
    let mut sink = Sink::attach(&lab.receiver, Some(ns), AttachMode::Drv)?;
    sink.pin(&pin_dir(&lab.name))?;
    drop(sink); // the pins keep it attached
    ip(&["-n", ns, "link", "set", "dev", &lab.receiver, "up"])?;
    ip(&["link", "set", "dev", &lab.sender, "up"])?;
    Ok(())
}

/// Runs `ip ARGS`, turning a failure into its stderr.
fn ip(args: &[&str]) -> Result<(), LabError> {
    let command = format!("ip {}", args.join(" "));
    let output = match Command::new("ip").args(args).output() {
        Ok(output) => output,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(LabError::MissingTool {
                command: "ip".into(),
            });
        }
        Err(source) => {
            return Err(LabError::Io {
                what: format!("running `{command}`"),
                source,
            });
        }
    };
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
    if stderr.contains("Operation not permitted") || stderr.contains("Permission denied") {
        return Err(LabError::NotRoot { what: command });
    }
    Err(LabError::Command {
        command,
        stderr: if stderr.is_empty() {
            format!("exit status {}", output.status)
        } else {
            stderr
        },
    })
}

/// Runs `ip [-n NS] -o link show dev IFACE` and returns its output.
fn ip_output(netns: Option<&str>, args: &[&str]) -> Result<String, LabError> {
    let mut full: Vec<&str> = Vec::new();
    if let Some(ns) = netns {
        full.extend(["-n", ns]);
    }
    full.extend(args);
    let command = format!("ip {}", full.join(" "));
    let output = Command::new("ip")
        .args(&full)
        .output()
        .map_err(|source| match source.kind() {
            io::ErrorKind::NotFound => LabError::MissingTool {
                command: "ip".into(),
            },
            _ => LabError::Io {
                what: format!("running `{command}`"),
                source,
            },
        })?;
    if !output.status.success() {
        return Err(LabError::Command {
            command,
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The MAC address of `iface` (in `netns`), from `ip -o link show`.
fn link_mac(netns: Option<&str>, iface: &str) -> Result<[u8; 6], LabError> {
    let out = ip_output(netns, &["-o", "link", "show", "dev", iface])?;
    let text = out
        .split("link/ether ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .ok_or_else(|| LabError::Command {
            command: format!("ip -o link show dev {iface}"),
            stderr: format!("no link/ether address in {out:?}"),
        })?;
    parse_mac(text).ok_or_else(|| LabError::Command {
        command: format!("ip -o link show dev {iface}"),
        stderr: format!("unreadable MAC address {text:?}"),
    })
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

fn write_sysctl(path: &str, value: &str) -> Result<(), LabError> {
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
/// thread that opens it, so a short-lived thread enters the namespace with setns(2) and writes.
fn write_sysctl_in(netns: &str, path: &str, value: &str) -> Result<(), LabError> {
    let ns_path = netns_path(netns);
    let file = std::fs::File::open(&ns_path).map_err(|source| LabError::Io {
        what: format!("opening {}", ns_path.display()),
        source,
    })?;
    std::thread::scope(|scope| {
        scope
            .spawn(move || {
                use std::os::fd::AsFd;
                nix::sched::setns(file.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET).map_err(
                    |errno| match errno {
                        nix::errno::Errno::EPERM => LabError::NotRoot {
                            what: format!("entering network namespace {netns}"),
                        },
                        errno => LabError::Io {
                            what: format!("entering network namespace {netns}"),
                            source: errno.into(),
                        },
                    },
                )?;
                write_sysctl(path, value)
            })
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

fn parse_mac(text: &str) -> Option<[u8; 6]> {
    let mut mac = [0u8; 6];
    let mut parts = text.split(':');
    for byte in &mut mac {
        *byte = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

fn fmt_mac(mac: &[u8; 6]) -> String {
    mac.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Test/CLI guard: creates a lab and runs [`Lab::down`] on drop, even when a test panics.
#[derive(Debug)]
pub struct LabGuard(pub Lab);

impl LabGuard {
    pub fn up(config: &LabConfig) -> Result<Self, LabError> {
        Lab::up(config).map(LabGuard)
    }
}

impl Deref for LabGuard {
    type Target = Lab;
    fn deref(&self) -> &Lab {
        &self.0
    }
}

impl Drop for LabGuard {
    fn drop(&mut self) {
        if let Err(e) = Lab::down(&self.0.name) {
            eprintln!("linerate-lab: removing lab {} failed: {e}", self.0.name);
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
