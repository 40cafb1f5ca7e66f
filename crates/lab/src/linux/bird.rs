//! The routing DUT's control plane (`--dut bgp`): BIRD in `<name>-dut`, one eBGP session toward
//! each test port's address, every route it learns installed in the DUT's kernel FIB and sent
//! on to the other side. linerate's devices are FRR; the DUT is another implementation on
//! purpose, as a device under test would be. BIRD daemonizes and outlives `lab up`; its pid,
//! control socket, configuration and log sit beside the lab's marker.

use std::net::Ipv4Addr;
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

/// The configuration: the DUT's two gateways peer with the two test ports' addresses.
fn config(name: &str, west: (Ipv4Addr, Ipv4Addr), east: (Ipv4Addr, Ipv4Addr)) -> String {
    let session = |side: &str, (local, peer): (Ipv4Addr, Ipv4Addr)| {
        format!(
            "protocol bgp {side} {{\n  local {local} as {DUT_AS};\n  neighbor {peer} external;\n  \
             hold time 3; keepalive time 1; connect retry time 1;\n  \
             ipv4 {{ import all; export all; }};\n  ipv6 {{ import all; export all; }};\n}}\n"
        )
    };
    format!(
        "log \"{}\" all;\nrouter id {};\nprotocol device {{ }}\n\
         protocol kernel {{ ipv4 {{ import none; export all; }}; }}\n\
         protocol kernel {{ ipv6 {{ import none; export all; }}; }}\n{}{}",
        file(name, "log").display(),
        west.0,
        session("west", west),
        session("east", east)
    )
}

/// Starts BIRD inside `netns` for lab `name`, `west` and `east` each (the DUT's address, the
/// test port's).
pub(crate) fn start(
    name: &str,
    netns: &str,
    west: (Ipv4Addr, Ipv4Addr),
    east: (Ipv4Addr, Ipv4Addr),
) -> Result<(), LabError> {
    let conf = file(name, "conf");
    std::fs::write(&conf, config(name, west, east))
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
