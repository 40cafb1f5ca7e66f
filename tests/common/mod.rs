//! Helpers shared by the end-to-end tests: run the real binary, decode with real tcpdump.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

pub mod frames;

pub fn linerate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args(args)
        .output()
        .expect("run linerate")
}

/// Runs linerate and insists it succeeded.
pub fn linerate_ok(args: &[&str]) -> String {
    let out = linerate(args);
    assert!(
        out.status.success(),
        "linerate {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 stdout")
}

/// Runs linerate, insists on exit code 2 and one clear line on stderr, and returns that line.
pub fn linerate_usage_error(args: &[&str]) -> String {
    let out = linerate(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "linerate {args:?}: {stderr}");
    let line = stderr.trim();
    assert!(!line.is_empty(), "linerate {args:?}: no message");
    assert_eq!(
        line.lines().count(),
        1,
        "linerate {args:?}: more than one line: {line}"
    );
    line.to_owned()
}

/// One decoded frame per element, as `tcpdump -nn -vv -e` prints it (continuation lines joined).
pub fn tcpdump(pcap: &Path) -> Vec<String> {
    let out = Command::new("tcpdump")
        .args(["-r"])
        .arg(pcap)
        .args(["-nn", "-vv", "-e", "-tt"])
        .output()
        .expect("tcpdump is installed (scripts/setup.sh)");
    assert!(
        out.status.success(),
        "tcpdump: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut frames: Vec<String> = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if line.starts_with(char::is_whitespace) {
            if let Some(last) = frames.last_mut() {
                last.push(' ');
                last.push_str(line.trim());
            }
        } else {
            frames.push(line.to_owned());
        }
    }
    frames
}

/// Runs `linerate tx -q --pcap FILE ARGS…` into a temporary file and decodes that with tcpdump.
pub fn pcap_frames(args: &[&str]) -> Vec<String> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let pcap = dir.path().join("out.pcap");
    let mut all = vec!["tx", "-q", "--pcap", pcap.to_str().expect("a UTF-8 path")];
    all.extend_from_slice(args);
    linerate_ok(&all);
    tcpdump(&pcap)
}

/// The word after `key` in a decoded line, e.g. `after(line, "length")`.
pub fn after<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let at = line.find(key)? + key.len();
    line[at..].split_whitespace().next()
}

/// The `length N:` of the Ethernet header line (bytes captured, FCS excluded).
pub fn frame_len(line: &str) -> usize {
    after(line, ", length ")
        .and_then(|w| w.trim_end_matches(':').parse().ok())
        .unwrap_or_else(|| panic!("no frame length in {line}"))
}

#[cfg(target_os = "linux")]
#[allow(unused_imports)]
pub use linerate_lab::root_or_skip;

/// A fresh lab named after `prefix` (unique per call) with `queues` queue pairs, taken down when
/// dropped.
#[cfg(target_os = "linux")]
pub fn lab(prefix: &str, queues: u32) -> linerate_lab::LabGuard {
    linerate_lab::LabGuard::up(&linerate_lab::LabConfig {
        name: linerate_lab::unique_name(prefix),
        queues,
    })
    .expect("lab up")
}

/// `linerate replay FILE -i` the lab's sender with `extra`, its `--json` report.
#[cfg(target_os = "linux")]
pub fn replay_on_lab(lab: &linerate_lab::Lab, file: &Path, extra: &[&str]) -> serde_json::Value {
    let sender = [
        "replay",
        file.to_str().unwrap(),
        "-i",
        &lab.sender,
        "--json",
        "-q",
    ];
    json(&linerate_ok(&[&sender[..], extra].concat()))
}

/// Parses linerate's --json output.
/// The namespaces of the devices process `pid` made, sorted: `linerate_routing` records each
/// one's owner under /run/linerate/routing/<netns>/owner (other tests' processes run beside).
pub fn device_namespaces_of(pid: u32) -> Vec<String> {
    let mut ours: Vec<String> = std::fs::read_dir("/run/linerate/routing")
        .map(|d| {
            d.filter_map(Result::ok)
                // A name with a dot first is a device's directory being made.
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .filter(|e| {
                    std::fs::read_to_string(e.path().join("owner"))
                        .is_ok_and(|o| o.trim() == pid.to_string())
                })
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    ours.sort();
    ours
}

pub fn json(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("bad JSON ({e}): {stdout}"))
}

/// True when an XDP program is attached to `iface` (in `netns`, or the root namespace).
pub fn xdp_attached(iface: &str, netns: Option<&str>) -> bool {
    let mut cmd = Command::new("ip");
    if let Some(ns) = netns {
        cmd.args(["-n", ns]);
    }
    let out = cmd
        .args(["-d", "link", "show", "dev", iface])
        .output()
        .expect("run ip");
    String::from_utf8_lossy(&out.stdout).contains("prog/xdp")
}

/// A bare veth pair: `<name>a` in the root namespace, `<name>b` in netns `<name>`, no XDP;
/// removed on drop, even when the test panics.
pub struct VethPair {
    pub name: String,
}

impl VethPair {
    /// Two queues an end.
    pub fn new(name: &str) -> Self {
        Self::with_queues(name, 2)
    }

    pub fn with_queues(name: &str, queues: u32) -> Self {
        let queues = queues.to_string();
        let pair = Self {
            name: name.to_owned(),
        };
        let run = |args: &[&str]| {
            let out = Command::new("ip").args(args).output().expect("run ip");
            assert!(
                out.status.success(),
                "ip {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let (a, b) = (pair.a(), pair.b());
        run(&["netns", "add", name]);
        run(&[
            "link",
            "add",
            &a,
            "numtxqueues",
            &queues,
            "numrxqueues",
            &queues,
            "type",
            "veth",
            "peer",
            "name",
            &b,
            "numtxqueues",
            &queues,
            "numrxqueues",
            &queues,
            "netns",
            name,
        ]);
        for (ns, dev) in [(None, &a), (Some(name), &b)] {
            let mut args = Vec::new();
            if let Some(ns) = ns {
                args.extend(["-n", ns]);
            }
            let sysctl = format!("/proc/sys/net/ipv6/conf/{dev}/disable_ipv6");
            if ns.is_none() {
                std::fs::write(&sysctl, "1").expect("disable IPv6");
            } else {
                run(&[
                    "netns",
                    "exec",
                    name,
                    "sh",
                    "-c",
                    &format!("echo 1 > {sysctl}"),
                ]);
            }
            args.extend(["link", "set", dev, "up"]);
            run(&args);
        }
        pair
    }
    pub fn a(&self) -> String {
        format!("{}a", self.name)
    }
    pub fn b(&self) -> String {
        format!("{}b", self.name)
    }
    /// The MAC of the namespace end.
    pub fn b_mac(&self) -> String {
        let out = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.name,
                "cat",
                &format!("/sys/class/net/{}/address", self.b()),
            ])
            .output()
            .expect("run ip");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }
}

impl Drop for VethPair {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["link", "del", &self.a()]).output();
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}

/// Captures `count` frames on the namespace end of `pair` while `send` runs: tcpdump is started
/// first and waited for ("listening on"), and it ends by itself after `count` frames.
pub fn capture(pair: &VethPair, count: usize, filter: &str, send: impl FnOnce()) -> Vec<String> {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("rx.pcap");
    let mut tcpdump = Command::new("ip")
        .args([
            "netns",
            "exec",
            &pair.name,
            "tcpdump",
            "-i",
            &pair.b(),
            "-U",
            "-n",
            "-c",
        ])
        .arg(count.to_string())
        .args(["-w", pcap.to_str().unwrap(), filter])
        .stderr(Stdio::piped())
        .spawn()
        .expect("tcpdump");
    let _stderr = listening(&mut tcpdump);
    send();
    let deadline = Instant::now() + Duration::from_secs(20);
    while tcpdump.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = tcpdump.kill();
            panic!("tcpdump did not see {count} frames");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    tcpdump_file(&pcap)
}

/// Waits until the tcpdump `child` (its stderr piped) says it is listening, and hands back its
/// stderr: kept open, tcpdump's last words do not die of SIGPIPE on a closed pipe.
pub fn listening(child: &mut std::process::Child) -> std::process::ChildStderr {
    use std::io::Read;
    let mut stderr = child.stderr.take().expect("tcpdump's stderr is piped");
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    while !String::from_utf8_lossy(&seen).contains("listening on") {
        let n = stderr.read(&mut buf).unwrap();
        assert!(n > 0, "tcpdump ended: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    stderr
}

/// tcpdump on `iface` of `netns`, writing the frames that arrive there and match `filter` until
/// it has `count` of them; started and waited for ("listening on"), killed on drop.
pub struct VethCapture {
    child: std::process::Child,
    dir: tempfile::TempDir,
    /// Kept open: tcpdump's last words would die of SIGPIPE on a closed pipe.
    _stderr: std::process::ChildStderr,
}

impl VethCapture {
    pub fn start(netns: &str, iface: &str, count: usize, filter: &str) -> VethCapture {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new("ip")
            .args([
                "netns", "exec", netns, "tcpdump", "-i", iface, "-Q", "in", "-U", "-n",
            ])
            .arg("-c")
            .arg(count.to_string())
            .arg("-w")
            .arg(dir.path().join("in.pcap"))
            .arg(filter)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("tcpdump");
        let stderr = listening(&mut child);
        VethCapture {
            child,
            dir,
            _stderr: stderr,
        }
    }

    /// Waits (up to 20 s) for tcpdump to have its frames, and decodes them.
    pub fn frames(mut self) -> Vec<String> {
        use std::time::{Duration, Instant};
        let deadline = Instant::now() + Duration::from_secs(20);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "tcpdump did not see its frames");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(status.success(), "tcpdump: {status}");
        tcpdump(&self.dir.path().join("in.pcap"))
    }
}

impl Drop for VethCapture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn tcpdump_file(pcap: &Path) -> Vec<String> {
    tcpdump(pcap)
}

/// Paced runs share a 2-vCPU VM whose vCPUs are now and then taken away for longer than the
/// pacer's 50 ms catch-up window; such a run has lost time, not found a pacing bug. A rate check
/// gets three attempts, and all of them are shown when none lands within its bounds.
/// Runs `linerate tx -q -i A ARGS…` on `pair` and returns the `count` UDP frames caught on B,
/// decoded, in arrival order.
#[cfg(target_os = "linux")]
pub fn catch_tx(pair: &VethPair, count: usize, args: &[&str]) -> Vec<String> {
    let a = pair.a();
    capture(pair, count, "udp", || {
        let mut all = vec!["tx", "-q", "-i", a.as_str()];
        all.extend_from_slice(args);
        linerate_ok(&all);
    })
}

/// The UDP source port of a decoded frame sent from the default source address 198.18.0.1.
pub fn src_port(line: &str) -> &str {
    after(line, "198.18.0.1.")
        .unwrap_or_else(|| panic!("no source port in {line}"))
        .trim_end_matches(':')
}

/// Three attempts at a measurement that timing decides (a rate, the gaps at a receiver); the
/// first within bounds passes. An attempt that fails while this VM's host took more than
/// [`MOST_STEAL`] of its CPU (steal time, /proc/stat) is not counted, and another follows a few
/// seconds on, for up to [`NOISY_FOR`]: in such phases (13 % steal, against 0–3 % otherwise, on
/// this lab's 2-vCPU VM) the host stops a vCPU for milliseconds every few tens of ms, and a
/// debug build's paced sender cannot keep a schedule then (nor, it seems, the probe's stamps:
/// under a real-time busy loop standing in for the host, frames the pacer sent one by one
/// arrived in bunches). Past that time a failure counts whatever the steal: a test still fails
/// on a machine that is never quiet.
pub fn within_three_attempts(mut attempt: impl FnMut() -> Result<(), String>) {
    let since = std::time::Instant::now();
    let mut failures = Vec::new();
    let mut counted = 0;
    while counted < 3 {
        let before = CpuTimes::now();
        let result = attempt();
        let steal = CpuTimes::now().steal_since(&before);
        match result {
            Ok(()) => return,
            Err(why) if steal > MOST_STEAL && since.elapsed() < NOISY_FOR => {
                eprintln!(
                    "not counted, the host took {:.1} % of the CPU: {why}",
                    steal * 100.0
                );
                failures.push(format!("(not counted: {:.1} % steal) {why}", steal * 100.0));
                std::thread::sleep(std::time::Duration::from_secs(5));
            }
            Err(why) => {
                failures.push(format!("({:.1} % steal) {why}", steal * 100.0));
                counted += 1;
            }
        }
    }
    panic!("no attempt within bounds:\n{}", failures.join("\n"));
}

/// Steal above this share of an attempt's CPU time voids a failed timing attempt.
pub const MOST_STEAL: f64 = 0.05;
/// How long timing attempts wait for the host to leave this VM its CPU.
pub const NOISY_FOR: std::time::Duration = std::time::Duration::from_secs(150);

/// The machine's CPU time so far, from the first line of /proc/stat (USER_HZ ticks).
struct CpuTimes {
    steal: u64,
    total: u64,
}

impl CpuTimes {
    fn now() -> CpuTimes {
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        // cpu user nice system idle iowait irq softirq steal guest guest_nice: guest time is
        // inside user already.
        let ticks: Vec<u64> = stat
            .lines()
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .skip(1)
            .take(8)
            .filter_map(|t| t.parse().ok())
            .collect();
        CpuTimes {
            steal: ticks.get(7).copied().unwrap_or(0),
            total: ticks.iter().sum(),
        }
    }

    /// The share of the CPU time since `before` that the host took.
    fn steal_since(&self, before: &CpuTimes) -> f64 {
        let total = self.total.saturating_sub(before.total);
        if total == 0 {
            return 0.0;
        }
        self.steal.saturating_sub(before.steal) as f64 / total as f64
    }
}

/// Runs linerate with stdout on a pipe whose reader is already closed, so every write fails
/// with EPIPE, whenever it happens.
pub fn with_closed_stdout(args: &[&str]) -> std::process::Output {
    let (reader, writer): (std::os::fd::OwnedFd, std::os::fd::OwnedFd) =
        nix::unistd::pipe().expect("a pipe");
    drop(reader);
    Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args(args)
        .stdout(std::process::Stdio::from(writer))
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("run linerate")
}

pub fn with_full_stdout(args: &[&str]) -> std::process::Output {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args(args)
        .stdout(std::process::Stdio::from(full))
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("run linerate")
}

/// Runs `script` (a path in the repository) with the project's virtualenv on `pcap` and reads
/// the JSON it prints; `None` where the virtualenv is missing outside CI (under CI=true a
/// missing one fails).
fn venv_json(script: &str, pcap: &Path) -> Option<serde_json::Value> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = root.join(".venv/bin/python");
    if !python.exists() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "no virtualenv at {}: scripts/setup.sh makes it",
            python.display()
        );
        eprintln!("SKIPPED: no {} (run scripts/setup.sh)", python.display());
        return None;
    }
    let out = Command::new(&python)
        .arg(root.join(script))
        .arg(pcap)
        .output()
        .unwrap_or_else(|e| panic!("run {script}: {e}"));
    assert!(
        out.status.success(),
        "{script} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).expect("one JSON value"))
}

/// The frame lengths dpkt, scapy and pypcapfile read from `pcap` (tests/common/pcap_readers.py,
/// with the project's virtualenv), and scapy's summary of each frame; `None` where the
/// virtualenv is missing outside CI.
pub fn python_readers(pcap: &Path) -> Option<serde_json::Value> {
    venv_json("tests/common/pcap_readers.py", pcap)
}

/// Every frame of `pcap` as scapy decodes it (crates/wire/tests/stack_decode.py): its layers
/// with their fields and checksums; `None` where the virtualenv is missing outside CI.
pub fn scapy_layers(pcap: &Path) -> Option<Vec<serde_json::Value>> {
    match venv_json("crates/wire/tests/stack_decode.py", pcap)? {
        serde_json::Value::Array(frames) => Some(frames),
        other => panic!("not a list: {other}"),
    }
}

/// For a test that sends live frames: false, after saying why, where this kernel refuses them
/// to root (a guest kernel that forbids BPF_PROG_RUN's live frames to every process: nothing of
/// the test can run there, under CI or not, and the product names the refusal — tests/auto.rs
/// and tests/afpacket.rs check that it does). Anywhere else true: the test runs and judges.
pub fn live_frames_or_skip(test: &str) -> bool {
    #[cfg(target_os = "linux")]
    return linerate_live::live_frames_or_skip(test);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = test;
        true
    }
}
