//! The routing DUT's control plane (`--dut bgp`): BIRD in `<name>-dut`, one eBGP session toward
//! each test port's address, every route it learns installed in the DUT's kernel FIB and sent
//! on to the other side. linerate's devices are FRR; the DUT is another implementation on
//! purpose, as a device under test would be. BIRD daemonizes and outlives `lab up`; its pid,
//! control socket, configuration and log sit beside the lab's marker.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::{STATE_DIR, in_netns, state_io};
use crate::LabError;

/// The DUT's own AS (a private one, RFC 6996); the devices may take any other.
pub const DUT_AS: u32 = 65000;

fn file(name: &str, what: &str) -> PathBuf {
    PathBuf::from(STATE_DIR)
        .join("labs")
        .join(format!("{name}.bird.{what}"))
}

/// BIRD's control socket for lab `name` (`birdc -s PATH`).
pub fn socket(name: &str) -> PathBuf {
    file(name, "ctl")
}

/// The DUT's sessions, each (the DUT's address, the peer's): toward the sending port, the
/// receiving port, and the receiving port's backup subnet ([`crate::backup_addresses`]).
pub(crate) struct Sessions {
    pub west: (Ipv4Addr, Ipv4Addr),
    pub east: (Ipv4Addr, Ipv4Addr),
    pub backup: (Ipv4Addr, Ipv4Addr),
    /// IPv6 sessions toward the sending and receiving ports ([`crate::routed_addresses6`]),
    /// for IPv6 ranges with an IPv6 next hop.
    pub west6: (Ipv6Addr, Ipv6Addr),
    pub east6: (Ipv6Addr, Ipv6Addr),
}

fn v4((a, b): (Ipv4Addr, Ipv4Addr)) -> (IpAddr, IpAddr) {
    (a.into(), b.into())
}

fn v6((a, b): (Ipv6Addr, Ipv6Addr)) -> (IpAddr, IpAddr) {
    (a.into(), b.into())
}

/// The configuration: the DUT's gateways peer with the test ports' addresses.
fn config(name: &str, s: &Sessions) -> String {
    // An IPv4 session carries both families (MP-BGP, as before the IPv6 sessions were
    // added); an IPv6 one carries IPv6 only.
    let session = |side: &str, (local, peer): (IpAddr, IpAddr)| {
        let v4 = if local.is_ipv4() {
            "ipv4 { import all; export all; };\n  "
        } else {
            ""
        };
        format!(
            "protocol bgp {side} {{\n  local {local} as {DUT_AS};\n  neighbor {peer} external;\n  \
             hold time 3; keepalive time 1; connect retry time 1;\n  \
             {v4}ipv6 {{ import all; export all; }};\n}}\n"
        )
    };
    format!(
        "log \"{}\" all;\nrouter id {};\nprotocol device {{ }}\n\
         protocol kernel {{ ipv4 {{ import none; export all; }}; }}\n\
         protocol kernel {{ ipv6 {{ import none; export all; }}; }}\n{}{}{}{}{}",
        file(name, "log").display(),
        s.west.0,
        session("west", v4(s.west)),
        session("east", v4(s.east)),
        session("backup", v4(s.backup)),
        session("west6", v6(s.west6)),
        session("east6", v6(s.east6)),
    )
}

/// Starts BIRD inside `netns` for lab `name` with these sessions.
pub(crate) fn start(name: &str, netns: &str, sessions: &Sessions) -> Result<(), LabError> {
    let conf = file(name, "conf");
    std::fs::write(&conf, config(name, sessions))
        .map_err(state_io(format!("writing {}", conf.display())))?;
    let (sock, pid) = (socket(name), file(name, "pid"));
    let out = in_netns(netns, || {
        Command::new("bird")
            .arg("-c")
            .arg(&conf)
            .arg("-s")
            .arg(&sock)
            .arg("-P")
            .arg(&pid)
            .output()
            .map_err(|source| LabError::Io {
                what: "starting bird (the BGP DUT's daemon: install bird2, or ./scripts/setup.sh)"
                    .into(),
                source,
            })
    })?;
    if !out.status.success() {
        return Err(LabError::Command {
            command: format!("bird -c {}", conf.display()),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(())
}

/// Stops lab `name`'s BIRD, if it runs, and removes its files.
pub(crate) fn stop(name: &str) -> Result<(), LabError> {
    let pid = std::fs::read_to_string(file(name, "pid"))
        .ok()
        .and_then(|t| t.trim().parse::<i32>().ok());
    if let Some(pid) = pid.map(Pid::from_raw) {
        let _ = kill(pid, Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(3);
        while kill(pid, None).is_ok() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = kill(pid, Signal::SIGKILL);
    }
    for what in ["conf", "ctl", "pid", "log"] {
        let _ = std::fs::remove_file(file(name, what));
    }
    Ok(())
}

/// Whether lab `name`'s BIRD has the backup session (labs brought up before it was added
/// have two sessions only).
pub fn has_backup(name: &str) -> bool {
    std::fs::read_to_string(file(name, "conf")).is_ok_and(|c| c.contains("protocol bgp backup"))
}
