//! The lab as an unlucky or hostile user meets it (issue 12): names that linerate did not make,
//! two commands on one name at once, and a user without root (root tests, unique names, every
//! part removed even when a test fails).
#![cfg(target_os = "linux")]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{linerate, root_or_skip};
use linerate_lab::unique_name;

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An interface `<name>0` and a namespace `<name>-sink` that someone else made; removed on drop.
struct Foreign(String);

impl Foreign {
    fn new(name: &str) -> Self {
        let foreign = Foreign(name.to_owned());
        ip(&[
            "link",
            "add",
            &format!("{name}0"),
            "type",
            "veth",
            "peer",
            "name",
            &format!("{name}peer"),
        ]);
        ip(&["netns", "add", &format!("{name}-sink")]);
        foreign
    }
    fn intact(&self) -> bool {
        Path::new(&format!("/sys/class/net/{}0", self.0)).exists()
            && Path::new(&format!("/run/netns/{}-sink", self.0)).exists()
    }
}

impl Drop for Foreign {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["link", "del", &format!("{}0", self.0)])
            .output();
        let _ = Command::new("ip")
            .args(["netns", "del", &format!("{}-sink", self.0)])
            .output();
    }
}

/// Runs `linerate lab down` for a name when dropped, so a lab made by the binary goes too.
struct DownOnDrop(String);

impl Drop for DownOnDrop {
    fn drop(&mut self) {
        let _ = linerate(&["lab", "down", "--name", &self.0]);
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn interfaces_and_namespaces_linerate_did_not_make_are_left_alone() {
    if !root_or_skip("interfaces_and_namespaces_linerate_did_not_make_are_left_alone") {
        return;
    }
    let name = unique_name("zz");
    let foreign = Foreign::new(&name);
    for args in [
        ["lab", "status", "--name", &name],
        ["lab", "down", "--name", &name],
        ["lab", "up", "--name", &name],
    ] {
        let out = linerate(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("linerate did not make"),
            "{args:?}: {}",
            stderr(&out)
        );
        assert!(foreign.intact(), "{args:?} touched what is not ours");
    }
    let lock_file = |name: &str| Path::new(&format!("/run/linerate/lab-{name}.lock")).exists();
    assert!(!lock_file(&name), "a refused lab left its lock file");
    // A lab that is ours still goes down, and a second `down` is still harmless.
    let ours = unique_name("zz");
    let _down = DownOnDrop(ours.clone());
    assert!(
        linerate(&["lab", "up", "--name", &ours, "--queues", "1"])
            .status
            .success()
    );
    assert!(linerate(&["lab", "down", "--name", &ours]).status.success());
    assert!(!Path::new(&format!("/sys/class/net/{ours}0")).exists());
    assert!(!lock_file(&ours), "lab down left the lock file");
    assert!(linerate(&["lab", "down", "--name", &ours]).status.success());
}

#[test]
fn two_lab_ups_of_one_name_leave_one_lab() {
    if !root_or_skip("two_lab_ups_of_one_name_leave_one_lab") {
        return;
    }
    for _ in 0..3 {
        let name = unique_name("tw");
        let _down = DownOnDrop(name.clone());
        let spawn = || {
            Command::new(env!("CARGO_BIN_EXE_linerate"))
                .args(["lab", "up", "--name", &name, "--queues", "1"])
                .output()
        };
        let (a, b) = std::thread::scope(|s| {
            let a = s.spawn(spawn);
            let b = s.spawn(spawn);
            (a.join().unwrap().unwrap(), b.join().unwrap().unwrap())
        });
        let codes = [a.status.code(), b.status.code()];
        assert!(
            codes.contains(&Some(0)) && codes.contains(&Some(2)),
            "{codes:?}: {} / {}",
            stderr(&a),
            stderr(&b)
        );
        let status = linerate(&["lab", "status", "--name", &name]);
        assert!(status.status.success(), "no lab left: {}", stderr(&status));
    }
}

#[test]
fn two_sweeps_with_a_lab_each_do_not_meet() {
    if !root_or_skip("two_sweeps_with_a_lab_each_do_not_meet") {
        return;
    }
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_linerate"))
            .args([
                "sweep", "--lab", "--sizes", "64", "-d", "200ms", "--repeat", "1", "--warmup",
                "50ms", "--json", "-",
            ])
            .output()
            .unwrap()
    };
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(run);
        let b = s.spawn(run);
        (a.join().unwrap(), b.join().unwrap())
    });
    for out in [&a, &b] {
        assert!(out.status.success(), "{}", stderr(out));
        let result = common::json(&String::from_utf8_lossy(&out.stdout));
        let rep = &result["points"][0]["repetitions"][0];
        assert_eq!(rep["rx_frames"], rep["tx_frames"], "{rep}");
    }
    let (ja, jb) = (
        common::json(&String::from_utf8_lossy(&a.stdout)),
        common::json(&String::from_utf8_lossy(&b.stdout)),
    );
    assert_ne!(ja["context"]["interface"], jb["context"]["interface"]);
}

/// The binary, copied where a user without root may run it.
fn unprivileged_binary() -> (tempfile::TempDir, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = dir.path().join("linerate");
    std::fs::copy(env!("CARGO_BIN_EXE_linerate"), &bin).unwrap();
    (dir, bin)
}

fn as_nobody(bin: &Path, args: &[&str]) -> Output {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(bin)
        .args(args)
        .output()
        .expect("setpriv (util-linux)")
}

#[test]
fn a_user_without_root_gets_the_truth_and_exit_2() {
    if !root_or_skip("a_user_without_root_gets_the_truth_and_exit_2") {
        return;
    }
    let lab = common::lab("nr", 1);
    let (_dir, bin) = unprivileged_binary();
    let out = as_nobody(&bin, &["lab", "status", "--name", &lab.name]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("incomplete"), "{}", stderr(&out));
    assert!(text.contains(&lab.receiver), "{text}");
    let mac = linerate_wire::format_mac(&lab.receiver_mac);
    assert!(text.contains(&mac), "{text}");
    assert!(text.contains("need root"), "{text}");
    for backend in ["live", "afxdp"] {
        let out = as_nobody(
            &bin,
            &["tx", "-i", &lab.sender, "--backend", backend, "-n", "10"],
        );
        assert_eq!(out.status.code(), Some(2), "{backend}: {}", stderr(&out));
    }
    // Root without CAP_IPC_LOCK under a small memlock limit: the UMEM cannot be registered,
    // and the advice names what is missing.
    let out = Command::new("prlimit")
        .args(["--memlock=65536:65536", "setpriv"])
        .args(["--inh-caps=-ipc_lock", "--bounding-set=-ipc_lock"])
        .arg(&bin)
        .args([
            "tx",
            "-q",
            "--backend",
            "afxdp",
            "-i",
            &lab.sender,
            "-n",
            "10",
        ])
        .output()
        .expect("prlimit and setpriv (util-linux)");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("CAP_IPC_LOCK"), "{}", stderr(&out));
    assert!(stderr(&out).contains("RLIMIT_MEMLOCK"), "{}", stderr(&out));
}

/// Issue 41: `ports` was one ~300-character line per interface and offered AF_XDP to a user
/// without root. A short row per port, the reasons as notes under the table; a user without
/// the capabilities is offered no backend as usable (each marked `root`), and `--json` keeps
/// every reason whole.
#[test]
fn ports_is_short_rows_with_notes_and_offers_nothing_to_a_user_without_root() {
    if !root_or_skip("ports as root and as a user without root") {
        return;
    }
    let lab = common::lab("pt", 1);
    let rows = |text: &str| -> Vec<String> {
        text.lines()
            .take_while(|l| !l.is_empty())
            .map(str::to_owned)
            .collect()
    };
    // Root: the lab's sender takes AF_XDP and AF_PACKET.
    let text = common::linerate_ok(&["ports"]);
    for row in rows(&text) {
        assert!(row.chars().count() <= 120, "a long row: {row}");
    }
    let sender = rows(&text)
        .into_iter()
        .find(|r| r.starts_with(&format!("{} ", lab.sender)))
        .unwrap_or_else(|| panic!("no row for {}: {text}", lab.sender));
    assert!(sender.contains(" ok "), "{sender}");
    let json = common::json(&common::linerate_ok(&["ports", "--json"]));
    let port = json
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == lab.sender.as_str())
        .unwrap();
    assert_eq!(
        port["backends"][0],
        serde_json::json!(["afxdp", "ok"]),
        "{port}"
    );

    let (_dir, bin) = unprivileged_binary();
    let out = as_nobody(&bin, &["ports"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let sender = rows(&text)
        .into_iter()
        .find(|r| r.starts_with(&format!("{} ", lab.sender)))
        .unwrap_or_else(|| panic!("no row for {}: {text}", lab.sender));
    assert!(!sender.contains(" ok"), "{text}");
    assert!(sender.contains("root"), "{text}");
    assert!(
        text.contains("needs root (this process lacks CAP_NET_RAW"),
        "{text}"
    );
    let out = as_nobody(&bin, &["ports", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json = common::json(&String::from_utf8_lossy(&out.stdout));
    for port in json.as_array().unwrap() {
        for backend in port["backends"].as_array().unwrap() {
            assert_ne!(backend[1], "ok", "{port}");
            assert!(!backend[1].as_str().unwrap().is_empty(), "{port}");
        }
    }
}

#[test]
fn lab_status_on_a_closed_or_full_stdout() {
    if !root_or_skip("lab_status_on_a_closed_or_full_stdout") {
        return;
    }
    let lab = common::lab("so", 1);
    for json in [false, true] {
        let mut args = vec!["lab", "status", "--name", lab.name.as_str()];
        if json {
            args.push("--json");
        }
        let out = common::with_closed_stdout(&args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        let out = common::with_full_stdout(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("No space left"), "{}", stderr(&out));
    }
}

#[test]
fn lab_down_says_whether_there_was_a_lab_to_remove() {
    if !root_or_skip("lab_down_says_whether_there_was_a_lab_to_remove") {
        return;
    }
    let name = unique_name("dn");
    let _down = DownOnDrop(name.clone());
    let out = linerate(&["lab", "down", "--name", &name]);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(said.contains("no such lab, nothing to remove"), "{said}");
    let up = linerate(&["lab", "up", "--name", &name, "--queues", "1"]);
    assert!(up.status.success(), "{}", stderr(&up));
    let out = linerate(&["lab", "down", "--name", &name]);
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(said.trim(), format!("lab {name} removed"));
}
