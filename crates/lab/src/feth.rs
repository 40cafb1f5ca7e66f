//! The macOS lab: a `feth` pair (xnu's `if_fake`, a veth-like pair of fake Ethernet interfaces)
//! made with `ifconfig`, the sender on the first, the `/dev/bpf` receiver on the second. There
//! are no network namespaces on macOS: both ends live in the host's stack.
//!
//! Ownership: `lab up` records each interface it created, as it creates it, in
//! `/var/run/linerate/<name>.feth` (macOS empties /var/run at boot, when the interfaces go too). `lab down` destroys only interfaces listed there and still peered as recorded;
//! it refuses anything else. A pair's units are the lowest free ones, so an existing `feth0` made
//! by someone else is never touched, only skipped.
//!
//! Plain Rust on every platform: `ifconfig` runs behind [`Ifconfig`], which the tests replace
//! with a double on Linux; only the CLI on macOS uses [`SystemIfconfig`].

use std::fmt::Write as _;
use std::io;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::Command;

use crate::{LabError, addresses, validate_name};

/// Where `lab up` records what it made.
pub const STATE_DIR: &str = "/var/run/linerate";
/// The MTU both ends get: 1518-byte frames (1514 without FCS) fit, as on the Linux lab.
pub const MTU: u32 = 1500;
/// Units tried for a pair: feth0..feth127.
pub const MAX_UNIT: u32 = 128;

/// Runs `ifconfig`.
pub trait Ifconfig {
    /// Runs `ifconfig <args>`: its stdout, or its stderr on failure.
    fn run(&mut self, args: &[&str]) -> Result<String, LabError>;
}

/// The real `ifconfig` (macOS).
#[derive(Debug, Default)]
pub struct SystemIfconfig;

impl Ifconfig for SystemIfconfig {
    fn run(&mut self, args: &[&str]) -> Result<String, LabError> {
        let command = format!("ifconfig {}", args.join(" "));
        let out = Command::new("ifconfig")
            .args(args)
            .output()
            .map_err(|source| LabError::Io {
                what: command.clone(),
                source,
            })?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr).trim().to_owned();
            if stderr.contains("ermission denied") || stderr.contains("Operation not permitted") {
                return Err(LabError::NotRoot { what: command });
            }
            return Err(LabError::Command { command, stderr });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// A feth lab as built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FethLab {
    pub name: String,
    /// `fethN`: the sender's end.
    pub sender: String,
    /// `fethN+1`: the receiver's end, peer of the sender.
    pub receiver: String,
    pub sender_ip: Ipv4Addr,
    pub receiver_ip: Ipv4Addr,
}

/// The feth labs of one state directory.
#[derive(Debug)]
pub struct Feth<I> {
    pub ifconfig: I,
    pub state_dir: PathBuf,
}

impl Feth<SystemIfconfig> {
    /// The real thing: `ifconfig` and [`STATE_DIR`].
    pub fn system() -> Self {
        Self {
            ifconfig: SystemIfconfig,
            state_dir: PathBuf::from(STATE_DIR),
        }
    }
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> LabError {
    let what = what.into();
    move |source| {
        if source.kind() == io::ErrorKind::PermissionDenied {
            LabError::NotRoot { what }
        } else {
            LabError::Io { what, source }
        }
    }
}

impl<I: Ifconfig> Feth<I> {
    fn state_file(&self, name: &str) -> PathBuf {
        self.state_dir.join(format!("{name}.feth"))
    }

    /// The interfaces recorded for lab `name`, in creation order; none when there is no record.
    pub fn recorded(&self, name: &str) -> Result<Vec<String>, LabError> {
        let path = self.state_file(name);
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(text.lines().map(str::to_owned).collect()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(io_err(format!("reading {}", path.display()))(e)),
        }
    }

    fn record(&self, name: &str, ifaces: &[String]) -> Result<(), LabError> {
        let path = self.state_file(name);
        if ifaces.is_empty() {
            return match std::fs::remove_file(&path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => {
                    Err(io_err(format!("removing {}", path.display()))(e))
                }
                _ => Ok(()),
            };
        }
        std::fs::create_dir_all(&self.state_dir)
            .map_err(io_err(format!("creating {}", self.state_dir.display())))?;
        let mut text = String::new();
        for i in ifaces {
            let _ = writeln!(text, "{i}");
        }
        // Written whole to a temporary name and renamed, so a crash leaves the old record or
        // the new, never half of one.
        let tmp = path.with_extension("feth.tmp");
        std::fs::write(&tmp, text).map_err(io_err(format!("writing {}", tmp.display())))?;
        std::fs::rename(&tmp, &path).map_err(io_err(format!("writing {}", path.display())))
    }

    /// The interfaces that exist (`ifconfig -l`).
    pub fn existing(&mut self) -> Result<Vec<String>, LabError> {
        Ok(self
            .ifconfig
            .run(&["-l"])?
            .split_whitespace()
            .map(str::to_owned)
            .collect())
    }

    /// Builds lab `name`: the lowest free pair `fethN`/`fethN+1`, peered, MTU [`MTU`], the lab's
    /// /30 addresses, up. On any failure it destroys what it created and forgets it.
    pub fn up(&mut self, name: &str) -> Result<FethLab, LabError> {
        validate_name(name)?;
        if !self.recorded(name)?.is_empty() {
            return Err(LabError::Exists {
                name: name.to_owned(),
            });
        }
        let existing = self.existing()?;
        let free = |u: u32| !existing.iter().any(|e| *e == format!("feth{u}"));
        let unit = (0..MAX_UNIT)
            .step_by(2)
            .find(|&u| free(u) && free(u + 1))
            .ok_or_else(|| LabError::NotOurs {
                name: name.to_owned(),
                parts: format!("feth0..feth{}", MAX_UNIT - 1),
            })?;
        let (sender_ip, receiver_ip) = addresses(name);
        let lab = FethLab {
            name: name.to_owned(),
            sender: format!("feth{unit}"),
            receiver: format!("feth{}", unit + 1),
            sender_ip,
            receiver_ip,
        };
        let mut created = Vec::new();
        match self.build(&lab, &mut created) {
            Ok(()) => Ok(lab),
            Err(e) => {
                // Undo in reverse; the first error is the one worth reporting.
                for iface in created.iter().rev() {
                    let _ = self.ifconfig.run(&[iface, "destroy"]);
                }
                let _ = self.record(name, &[]);
                Err(e)
            }
        }
    }

    fn build(&mut self, lab: &FethLab, created: &mut Vec<String>) -> Result<(), LabError> {
        for iface in [&lab.sender, &lab.receiver] {
            self.ifconfig.run(&[iface, "create"])?;
            created.push(iface.clone());
            self.record(&lab.name, created)?;
        }
        self.ifconfig.run(&[&lab.sender, "peer", &lab.receiver])?;
        let mtu = MTU.to_string();
        for (iface, ip) in [
            (&lab.sender, lab.sender_ip),
            (&lab.receiver, lab.receiver_ip),
        ] {
            self.ifconfig.run(&[iface, "mtu", &mtu])?;
            self.ifconfig
                .run(&[iface, "inet", &format!("{ip}/30"), "up"])?;
        }
        Ok(())
    }

    /// Whether `iface` still looks like the one recorded: it exists and peers `peer`
    /// (`ifconfig fethN` prints `peer: fethM`).
    fn still_ours(&mut self, iface: &str, peer: &str, existing: &[String]) -> bool {
        existing.iter().any(|e| e == iface)
            && self
                .ifconfig
                .run(&[iface])
                .is_ok_and(|out| out.lines().any(|l| l.trim() == format!("peer: {peer}")))
    }

    /// Removes lab `name`: destroys its recorded interfaces that still exist, then the record.
    /// Safe to run twice. Refuses, touching nothing, when a recorded interface exists but no
    /// longer peers its recorded partner (someone else's after a reboot or a manual destroy).
    pub fn down(&mut self, name: &str) -> Result<(), LabError> {
        validate_name(name)?;
        let recorded = self.recorded(name)?;
        if recorded.is_empty() {
            return Ok(());
        }
        let existing = self.existing()?;
        let peer_of = |i: usize| recorded.get(i ^ 1).cloned().unwrap_or_default();
        let mut foreign = Vec::new();
        let mut ours = Vec::new();
        for (i, iface) in recorded.iter().enumerate() {
            if !existing.contains(iface) {
                continue;
            }
            // A half-built lab (one interface, never peered) is ours by the record alone.
            if recorded.len() == 1 || self.still_ours(iface, &peer_of(i), &existing) {
                ours.push(iface.clone());
            } else {
                foreign.push(iface.clone());
            }
        }
        if !foreign.is_empty() {
            return Err(LabError::NotOurs {
                name: name.to_owned(),
                parts: foreign.join(", "),
            });
        }
        for iface in ours.iter().rev() {
            self.ifconfig.run(&[iface, "destroy"])?;
        }
        self.record(name, &[])
    }

    /// The lab whose sender end is `iface`, if one is recorded and whole.
    pub fn lab_of(&mut self, iface: &str) -> Result<Option<FethLab>, LabError> {
        let dir = match std::fs::read_dir(&self.state_dir) {
            Ok(dir) => dir,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_err(format!("reading {}", self.state_dir.display()))(e)),
        };
        let mut names: Vec<String> = dir
            .filter_map(Result::ok)
            .filter_map(|e| {
                e.file_name()
                    .to_str()?
                    .strip_suffix(".feth")
                    .map(str::to_owned)
            })
            .collect();
        names.sort();
        for name in names {
            if self.recorded(&name)?.first().map(String::as_str) == Some(iface) {
                return self.status(&name).map(Some);
            }
        }
        Ok(None)
    }

    /// The Ethernet address of `iface` (`ifconfig fethN` prints `ether xx:xx:xx:xx:xx:xx`).
    pub fn mac(&mut self, iface: &str) -> Result<[u8; 6], LabError> {
        let out = self.ifconfig.run(&[iface])?;
        out.lines()
            .find_map(|l| parse_mac(l.trim().strip_prefix("ether ")?.trim()))
            .ok_or_else(|| LabError::Command {
                command: format!("ifconfig {iface}"),
                stderr: "no `ether` line in its output".to_owned(),
            })
    }

    /// Lab `name` as recorded, if its pair exists and still peers.
    pub fn status(&mut self, name: &str) -> Result<FethLab, LabError> {
        validate_name(name)?;
        let recorded = self.recorded(name)?;
        let [sender, receiver] = recorded.as_slice() else {
            return Err(if recorded.is_empty() {
                LabError::NotFound {
                    name: name.to_owned(),
                }
            } else {
                LabError::Incomplete {
                    name: name.to_owned(),
                    missing: "the receiver's feth".to_owned(),
                }
            });
        };
        let existing = self.existing()?;
        for (iface, peer) in [(sender, receiver), (receiver, sender)] {
            if !self.still_ours(iface, peer, &existing) {
                return Err(LabError::Incomplete {
                    name: name.to_owned(),
                    missing: format!("{iface} peered with {peer}"),
                });
            }
        }
        let (sender_ip, receiver_ip) = addresses(name);
        Ok(FethLab {
            name: name.to_owned(),
            sender: sender.clone(),
            receiver: receiver.clone(),
            sender_ip,
            receiver_ip,
        })
    }
}

/// `66:65:74:68:0:1` (macOS drops leading zeros) as bytes.
fn parse_mac(text: &str) -> Option<[u8; 6]> {
    let mut mac = [0u8; 6];
    let mut parts = text.split(':');
    for b in &mut mac {
        let part = parts.next()?;
        if part.is_empty() || part.len() > 2 {
            return None;
        }
        *b = u8::from_str_radix(part, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// A model of xnu's feth behind `ifconfig`: interfaces with a peer, an MTU and an address;
    /// every call logged; the call whose text equals `fail_on` fails.
    #[derive(Default)]
    struct FakeIfconfig {
        ifaces: BTreeMap<String, Option<String>>,
        calls: Vec<String>,
        fail_on: Option<String>,
    }

    impl Ifconfig for FakeIfconfig {
        fn run(&mut self, args: &[&str]) -> Result<String, LabError> {
            let text = args.join(" ");
            self.calls.push(text.clone());
            let fail = |stderr: &str| {
                Err(LabError::Command {
                    command: format!("ifconfig {text}"),
                    stderr: stderr.to_owned(),
                })
            };
            if self.fail_on.as_deref() == Some(text.as_str()) {
                return fail("scripted failure");
            }
            match args {
                ["-l"] => Ok(self.ifaces.keys().cloned().collect::<Vec<_>>().join(" ") + "\n"),
                [i, "create"] if self.ifaces.contains_key(*i) => fail("File exists"),
                [i, "create"] => {
                    self.ifaces.insert(i.to_string(), None);
                    Ok(String::new())
                }
                [i, "destroy"] => match self.ifaces.remove(*i) {
                    Some(_) => Ok(String::new()),
                    None => fail("does not exist"),
                },
                [a, "peer", b] => {
                    self.ifaces.insert(a.to_string(), Some(b.to_string()));
                    self.ifaces.insert(b.to_string(), Some(a.to_string()));
                    Ok(String::new())
                }
                [i, ..] if !self.ifaces.contains_key(*i) => fail("does not exist"),
                [i] => Ok(format!(
                    "{i}: flags=8843<UP,BROADCAST,RUNNING,SIMPLEX,MULTICAST> mtu 1500\n\
                     \tether 66:65:74:68:0:{:x}\n{}",
                    i.trim_start_matches("feth").parse::<u8>().unwrap_or(0xee),
                    self.ifaces[*i]
                        .as_ref()
                        .map(|p| format!("\tpeer: {p}\n"))
                        .unwrap_or_default()
                )),
                _ => Ok(String::new()),
            }
        }
    }

    fn lab(tag: &str, existing: &[&str]) -> Feth<FakeIfconfig> {
        let state_dir =
            std::env::temp_dir().join(format!("linerate-feth-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&state_dir);
        let mut ifconfig = FakeIfconfig::default();
        for e in existing {
            ifconfig.ifaces.insert(e.to_string(), None);
        }
        Feth {
            ifconfig,
            state_dir,
        }
    }

    fn done(f: Feth<FakeIfconfig>) {
        std::fs::remove_dir_all(&f.state_dir).ok();
    }

    #[test]
    fn up_runs_the_exact_sequence_and_down_undoes_it() {
        let mut f = lab("seq", &["lo0", "en0"]);
        let lab = f.up("lr").unwrap();
        let (s, r) = addresses("lr");
        assert_eq!(
            (lab.sender.as_str(), lab.receiver.as_str()),
            ("feth0", "feth1")
        );
        assert_eq!(
            f.ifconfig.calls,
            [
                "-l".to_owned(),
                "feth0 create".to_owned(),
                "feth1 create".to_owned(),
                "feth0 peer feth1".to_owned(),
                "feth0 mtu 1500".to_owned(),
                format!("feth0 inet {s}/30 up"),
                "feth1 mtu 1500".to_owned(),
                format!("feth1 inet {r}/30 up"),
            ]
        );
        assert_eq!(f.recorded("lr").unwrap(), ["feth0", "feth1"]);
        assert_eq!(f.status("lr").unwrap(), lab);
        assert!(matches!(f.up("lr"), Err(LabError::Exists { .. })));

        f.ifconfig.calls.clear();
        f.down("lr").unwrap();
        assert_eq!(
            f.ifconfig.calls,
            ["-l", "feth0", "feth1", "feth1 destroy", "feth0 destroy"]
        );
        assert_eq!(f.ifconfig.ifaces.keys().collect::<Vec<_>>(), ["en0", "lo0"]);
        assert!(f.recorded("lr").unwrap().is_empty());
        assert!(matches!(f.status("lr"), Err(LabError::NotFound { .. })));
        // Twice is fine and runs nothing.
        f.ifconfig.calls.clear();
        f.down("lr").unwrap();
        assert!(f.ifconfig.calls.is_empty());
        done(f);
    }

    #[test]
    fn foreign_feth_interfaces_are_skipped_never_touched() {
        let mut f = lab("skip", &["feth0", "feth3"]);
        let lab = f.up("a1").unwrap();
        // feth0 and feth3 are someone else's: the first free pair is feth4/feth5.
        assert_eq!(
            (lab.sender.as_str(), lab.receiver.as_str()),
            ("feth4", "feth5")
        );
        assert!(
            f.ifconfig
                .calls
                .iter()
                .all(|c| !c.starts_with("feth0 ") && !c.starts_with("feth3 ")),
            "{:?}",
            f.ifconfig.calls
        );
        f.down("a1").unwrap();
        assert_eq!(
            f.ifconfig.ifaces.keys().collect::<Vec<_>>(),
            ["feth0", "feth3"]
        );
        done(f);
    }

    #[test]
    fn a_failure_midway_destroys_what_was_created_and_forgets_it() {
        for failing in ["feth1 create", "feth0 peer feth1", "feth1 inet"] {
            let mut f = lab("rollback", &["en0"]);
            let (_, r) = addresses("lr");
            f.ifconfig.fail_on = Some(if failing == "feth1 inet" {
                format!("feth1 inet {r}/30 up")
            } else {
                failing.to_owned()
            });
            let err = f.up("lr").unwrap_err();
            assert!(matches!(err, LabError::Command { .. }), "{err}");
            assert_eq!(
                f.ifconfig.ifaces.keys().collect::<Vec<_>>(),
                ["en0"],
                "{failing}"
            );
            assert!(f.recorded("lr").unwrap().is_empty(), "{failing}");
            let destroys: Vec<_> = f
                .ifconfig
                .calls
                .iter()
                .filter(|c| c.ends_with("destroy"))
                .collect();
            let expect: &[&str] = if failing == "feth1 create" {
                &["feth0 destroy"]
            } else {
                &["feth1 destroy", "feth0 destroy"]
            };
            assert_eq!(destroys, expect, "{failing}");
            done(f);
        }
    }

    #[test]
    fn down_refuses_recorded_names_that_someone_else_now_holds() {
        let mut f = lab("foreign", &[]);
        f.up("lr").unwrap();
        // After a reboot or a manual destroy, someone else made feth0/feth1 without peering.
        f.ifconfig.ifaces.insert("feth0".into(), None);
        f.ifconfig
            .ifaces
            .insert("feth1".into(), Some("feth9".into()));
        f.ifconfig.calls.clear();
        let err = f.down("lr").unwrap_err();
        assert!(matches!(err, LabError::NotOurs { ref parts, .. } if parts == "feth0, feth1"));
        assert!(f.ifconfig.calls.iter().all(|c| !c.ends_with("destroy")));
        assert!(matches!(f.status("lr"), Err(LabError::Incomplete { .. })));
        // A recorded interface that is gone is simply not destroyed.
        let mut g = lab("gone", &[]);
        g.up("lr").unwrap();
        g.ifconfig.ifaces.clear();
        g.down("lr").unwrap();
        assert!(g.ifconfig.calls.iter().all(|c| !c.ends_with("destroy")));
        assert!(g.recorded("lr").unwrap().is_empty());
        done(f);
        done(g);
    }

    #[test]
    fn a_sender_end_finds_its_lab_and_the_receiver_its_address() {
        let mut f = lab("of", &["feth0", "feth1"]);
        assert_eq!(f.lab_of("feth2").unwrap(), None);
        let a = f.up("a").unwrap();
        let b = f.up("b").unwrap();
        assert_eq!((a.sender.as_str(), b.sender.as_str()), ("feth2", "feth4"));
        assert_eq!(f.lab_of("feth4").unwrap(), Some(b.clone()));
        assert_eq!(f.lab_of("feth2").unwrap(), Some(a));
        // A receiver end, or someone else's feth, is no lab's sender.
        assert_eq!(f.lab_of("feth5").unwrap(), None);
        assert_eq!(f.lab_of("feth0").unwrap(), None);
        assert_eq!(
            f.mac(&b.receiver).unwrap(),
            [0x66, 0x65, 0x74, 0x68, 0, 0x5]
        );
        assert!(f.mac("en9").is_err());
        f.down("b").unwrap();
        assert_eq!(f.lab_of("feth4").unwrap(), None);
        done(f);
    }

    #[test]
    fn macs_parse_as_ifconfig_prints_them() {
        assert_eq!(
            parse_mac("66:65:74:68:0:1"),
            Some([0x66, 0x65, 0x74, 0x68, 0, 1])
        );
        assert_eq!(parse_mac("a:b:c:d:e:ff"), Some([10, 11, 12, 13, 14, 255]));
        for bad in [
            "",
            "66:65:74:68:0",
            "66:65:74:68:0:1:2",
            "66:65:74:68::1",
            "66:65:74:68:0:100",
            "g:0:0:0:0:0",
        ] {
            assert_eq!(parse_mac(bad), None, "{bad}");
        }
    }

    #[test]
    fn bad_names_are_refused_before_any_command() {
        let mut f = lab("names", &[]);
        for name in ["", "LR", "toolongname", "a-b"] {
            assert!(matches!(f.up(name), Err(LabError::InvalidName { .. })));
            assert!(matches!(f.down(name), Err(LabError::InvalidName { .. })));
        }
        assert!(f.ifconfig.calls.is_empty());
        done(f);
    }
}
