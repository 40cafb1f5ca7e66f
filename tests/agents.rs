//! A test bed across "hosts" (root): three network namespaces stand for three machines, each
//! running `linerate agent` on a management link to a controller namespace, with data links
//! h1–h2 and h2–h3 between them. The controller (`linerate serve --agent-token-file`) is
//! driven through snappi (tests/otg/agents.py), as a user's suite would.
#![cfg(target_os = "linux")]

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::root_or_skip;

const TOKEN: &str = "agents-test-token-0123456789";
/// The data interfaces, by host (1-based): h1 d12 — d21 h2 d23 — d32 h3.
const DATA: [(usize, &str); 4] = [(1, "d12"), (2, "d21"), (2, "d23"), (3, "d32")];

/// A process whose stderr lines are kept; killed (SIGKILL) when dropped.
struct Proc {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Proc {
    /// Starts `args` in `netns` and waits for its line naming the URL it serves.
    fn start(netns: &str, args: &[&str]) -> (Proc, String) {
        let mut child = Command::new("ip")
            .args(["netns", "exec", netns, env!("CARGO_BIN_EXE_linerate")])
            .args(args)
            .stderr(Stdio::piped())
            .spawn()
            .expect("start linerate");
        let stderr = child.stderr.take().expect("stderr");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (url_tx, url_rx) = std::sync::mpsc::channel();
        let kept = Arc::clone(&lines);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = line.split_whitespace().find(|w| w.starts_with("http")) {
                    let _ = url_tx.send(url.to_owned());
                }
                kept.lock().unwrap().push(line);
            }
        });
        let url = url_rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("{args:?} never said where it listens: {:?}", lines));
        (Proc { child, lines }, url)
    }

    fn said(&self, what: &str) -> bool {
        self.lines.lock().unwrap().iter().any(|l| l.contains(what))
    }

    fn kill(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }

    fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The namespaces and links; removed on drop, even when the test fails.
struct Bed {
    /// ctl, h1, h2, h3.
    ns: [String; 4],
    dir: tempfile::TempDir,
}

impl Drop for Bed {
    fn drop(&mut self) {
        for ns in &self.ns {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Bed {
    fn new(tag: &str) -> Bed {
        let id = format!("{tag}{}", std::process::id() % 100_000);
        let bed = Bed {
            ns: [
                format!("ctl-{id}"),
                format!("h1-{id}"),
                format!("h2-{id}"),
                format!("h3-{id}"),
            ],
            dir: tempfile::tempdir().unwrap(),
        };
        for ns in &bed.ns {
            ip(&["netns", "add", ns]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
            // Only the tests' frames on the links: a kernel's IPv6 router solicitation (70 B,
            // seconds after a link comes up) landing between two reads of a port's counters
            // made them differ by one frame of 74 B.
            let off = Command::new("ip")
                .args(["netns", "exec", ns, "sysctl", "-qw"])
                .args([
                    "net.ipv6.conf.all.disable_ipv6=1",
                    "net.ipv6.conf.default.disable_ipv6=1",
                ])
                .status()
                .expect("run sysctl");
            assert!(off.success(), "sysctl in {ns}");
        }
        let ctl = &bed.ns[0];
        for h in 1..=3 {
            let (c, host) = (format!("c{h}"), &bed.ns[h]);
            ip(&[
                "-n", ctl, "link", "add", &c, "type", "veth", "peer", "name", "m0", "netns", host,
            ]);
            ip(&[
                "-n",
                ctl,
                "addr",
                "add",
                &format!("10.77.{h}.1/24"),
                "dev",
                &c,
            ]);
            ip(&["-n", ctl, "link", "set", &c, "up"]);
            ip(&[
                "-n",
                host,
                "addr",
                "add",
                &format!("10.77.{h}.2/24"),
                "dev",
                "m0",
            ]);
            ip(&["-n", host, "link", "set", "m0", "up"]);
        }
        for (a, b, ia, ib) in [(1, 2, "d12", "d21"), (2, 3, "d23", "d32")] {
            let (na, nb) = (&bed.ns[a], &bed.ns[b]);
            ip(&[
                "-n", na, "link", "add", ia, "type", "veth", "peer", "name", ib, "netns", nb,
            ]);
            ip(&["-n", na, "link", "set", ia, "up"]);
            ip(&["-n", nb, "link", "set", ib, "up"]);
        }
        std::fs::write(bed.token_file(), format!("{TOKEN}\n")).unwrap();
        bed
    }

    fn token_file(&self) -> PathBuf {
        self.dir.path().join("token")
    }

    fn agent_address(h: usize) -> String {
        format!("10.77.{h}.2:8443")
    }

    /// `linerate agent` on host `h` (1-based).
    fn agent(&self, h: usize, extra: &[&str]) -> Proc {
        let listen = Self::agent_address(h);
        let token = self.token_file();
        let mut args = vec!["agent", "--listen", &listen, "--token-file"];
        args.push(token.to_str().unwrap());
        args.extend_from_slice(extra);
        Proc::start(&self.ns[h], &args).0
    }

    /// The controller, with the agents' token in `agent_token`.
    fn controller(&self, agent_token: &Path) -> (Proc, String) {
        Proc::start(
            &self.ns[0],
            &[
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--http",
                "--agent-token-file",
                agent_token.to_str().unwrap(),
            ],
        )
    }

    /// Runs a step of tests/otg/agents.py in the controller's namespace; its output.
    fn snappi(&self, url: &str, step: &[&str]) -> String {
        let python = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python");
        let out = Command::new("ip")
            .args(["netns", "exec", &self.ns[0]])
            .arg(&python)
            .arg("tests/otg/agents.py")
            .args(step)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("OTG_LOCATION", url)
            .env("AGENT1", Self::agent_address(1))
            .env("AGENT2", Self::agent_address(2))
            .env("AGENT3", Self::agent_address(3))
            .env("PORT_MACS", self.macs())
            .env("AGENT_TOKEN_FILE", self.token_file())
            .output()
            .expect("run tests/otg/agents.py");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "agents.py {step:?} failed:\n{text}");
        text
    }

    /// `p1=MAC,p2=MAC,…`: the data interfaces' MACs, by the OTG port names agents.py gives them.
    fn macs(&self) -> String {
        DATA.iter()
            .zip(["p1", "p2", "p3", "p4"])
            .map(|((h, iface), port)| {
                let out = Command::new("ip")
                    .args(["-n", &self.ns[*h], "-br", "link", "show", "dev", iface])
                    .output()
                    .expect("run ip");
                let text = String::from_utf8_lossy(&out.stdout);
                let mac = text
                    .split_whitespace()
                    .nth(2)
                    .unwrap_or_default()
                    .to_owned();
                format!("{port}={mac}")
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The data interfaces that still have an XDP program.
    fn attached(&self) -> Vec<&'static str> {
        DATA.iter()
            .filter(|(h, iface)| common::xdp_attached(iface, Some(&self.ns[*h])))
            .map(|(_, iface)| *iface)
            .collect()
    }
}

/// The virtualenv's python, or a skip (a failure under CI).
fn have_python() -> bool {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python");
    if python.exists() {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "no virtualenv at {}: scripts/setup.sh makes it",
        python.display()
    );
    eprintln!("SKIPPED: no {} (run scripts/setup.sh)", python.display());
    false
}

/// Waits up to `limit` for `cond`.
fn within(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    cond()
}

#[test]
fn three_agents_count_flows_both_ways_exactly_and_release_everything() {
    if !root_or_skip("agents on network namespaces") || !have_python() {
        return;
    }
    let bed = Bed::new("ag");
    let agents: Vec<Proc> = (1..=3).map(|h| bed.agent(h, &[])).collect();
    let (mut controller, url) = bed.controller(&bed.token_file());
    let out = bed.snappi(&url, &["exact"]);
    assert!(out.contains("exact: ok"), "{out}");
    // Every agent is set up while the config lasts.
    assert_eq!(bed.attached(), ["d12", "d21", "d23", "d32"]);
    // SIGTERM: the controller releases its agents before it exits.
    // SAFETY: kill(2) on our own child's pid, not yet reaped.
    unsafe { libc::kill(controller.child.id() as i32, libc::SIGTERM) };
    let _ = controller.child.wait();
    assert!(
        within(Duration::from_secs(5), || bed.attached().is_empty()),
        "still attached after the controller stopped: {:?}",
        bed.attached()
    );
    drop(agents);
}

#[test]
fn an_agent_killed_mid_test_is_named_and_the_others_stop_and_detach() {
    if !root_or_skip("agents on network namespaces") || !have_python() {
        return;
    }
    let bed = Bed::new("ak");
    let mut agents: Vec<Proc> = (1..=3).map(|h| bed.agent(h, &[])).collect();
    let (_controller, url) = bed.controller(&bed.token_file());
    bed.snappi(&url, &["start"]);
    assert_eq!(bed.attached().len(), 4);
    agents[2].kill();
    let out = bed.snappi(&url, &["lost", &Bed::agent_address(3)]);
    // snappi prints the error as YAML, folded at 80 columns.
    let out = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(out.contains("counted until then"), "{out}");
    // The others stopped and released their ports; the killed one's links went with it.
    assert!(
        within(Duration::from_secs(5), || bed.attached().is_empty()),
        "still attached: {:?}",
        bed.attached()
    );
    assert!(agents[0].alive() && agents[1].alive());
}

#[test]
fn agents_whose_controller_is_killed_stop_within_their_lease() {
    if !root_or_skip("agents on network namespaces") || !have_python() {
        return;
    }
    let bed = Bed::new("al");
    let agents: Vec<Proc> = (1..=3).map(|h| bed.agent(h, &["--lease", "1s"])).collect();
    let (mut controller, url) = bed.controller(&bed.token_file());
    bed.snappi(&url, &["start"]);
    assert_eq!(bed.attached().len(), 4);
    let killed = Instant::now();
    controller.kill();
    assert!(
        within(Duration::from_secs(4), || bed.attached().is_empty()),
        "still attached {:?} after the lease",
        bed.attached()
    );
    eprintln!("released {:?} after the controller died", killed.elapsed());
    for a in &agents {
        assert!(a.said("the controller was silent"), "{:?}", a.lines);
    }
}

/// A second controller does not take over agents a first one holds (issue 40 #2): its
/// set_config is refused naming the holder, and the first's setup stays.
#[test]
fn a_second_controller_is_refused_agents_another_holds() {
    if !root_or_skip("agents on network namespaces") || !have_python() {
        return;
    }
    let bed = Bed::new("a2");
    let _agents: Vec<Proc> = (1..=3).map(|h| bed.agent(h, &[])).collect();
    let (_first, url1) = bed.controller(&bed.token_file());
    bed.snappi(&url1, &["config"]);
    assert_eq!(bed.attached().len(), 4);
    let (_second, url2) = bed.controller(&bed.token_file());
    let out = bed.snappi(
        &url2,
        &["refused", &Bed::agent_address(1), "held by controller"],
    );
    assert!(out.contains("409"), "{out}");
    assert_eq!(bed.attached().len(), 4, "the first controller's setup went");
    // The first controller still drives its agents.
    let out = bed.snappi(&url1, &["exact"]);
    assert!(out.contains("exact: ok"), "{out}");
}

#[test]
fn wrong_or_missing_tokens_are_refused_and_nothing_is_configured() {
    if !root_or_skip("agents on network namespaces") || !have_python() {
        return;
    }
    let bed = Bed::new("at");
    // Beyond loopback without a token: refused at start.
    let out = Command::new("ip")
        .args(["netns", "exec", &bed.ns[1], env!("CARGO_BIN_EXE_linerate")])
        .args(["agent", "--listen", &Bed::agent_address(1)])
        .output()
        .expect("run linerate agent");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--token"),
        "{out:?}"
    );
    let _agents: Vec<Proc> = (1..=3).map(|h| bed.agent(h, &[])).collect();
    let wrong = bed.dir.path().join("wrong");
    std::fs::write(&wrong, "not-the-agents-token-at-all\n").unwrap();
    let (_controller, url) = bed.controller(&wrong);
    let out = bed.snappi(&url, &["refused", &Bed::agent_address(1), "401"]);
    assert!(out.contains("bearer token"), "{out}");
    assert!(bed.attached().is_empty(), "{:?}", bed.attached());
}

/// Agents 1 and 3 send toward agent 2's two ports, which capture. Each sender has a core of
/// its own: two pinned senders sharing a core would take turns by scheduler slices (ms), which
/// no start instant can line up.
#[test]
fn agents_start_at_one_instant_and_their_ports_capture() {
    if !root_or_skip("agents on network namespaces") || !have_python() {
        return;
    }
    let bed = Bed::new("as");
    let _agents: Vec<Proc> = [(1, "0"), (2, "1"), (3, "1")]
        .iter()
        .map(|(h, core)| bed.agent(*h, &["--cores", core]))
        .collect();
    let (_controller, url) = bed.controller(&bed.token_file());
    let out = bed.snappi(&url, &["skew"]);
    eprintln!("{out}");
    assert!(out.contains("spread"), "{out}");
}

/// RFC 2544 throughput with each host on its own agent: every trial is set up on the agents,
/// started at one instant and counted by the receiving agent. No DUT between them, so every
/// trial passes and the known answer is the max load, each way, with every frame sent counted.
#[test]
fn rfc2544_trials_run_on_agents_ports() {
    if !root_or_skip("agents on network namespaces") {
        return;
    }
    let bed = Bed::new("ar");
    let _agents: Vec<Proc> = [(1, "0"), (2, "1")]
        .iter()
        .map(|(h, core)| bed.agent(*h, &["--cores", core]))
        .collect();
    let a = format!(
        "name=a,port={}/d12,ipv4=10.10.12.1/24,gateway=10.10.12.2",
        Bed::agent_address(1)
    );
    let b = format!(
        "name=b,port={}/d21,ipv4=10.10.12.2/24,gateway=10.10.12.1",
        Bed::agent_address(2)
    );
    let token = bed.token_file();
    let out = Command::new("ip")
        .args(["netns", "exec", &bed.ns[0], env!("CARGO_BIN_EXE_linerate")])
        .args([
            "rfc2544",
            "throughput",
            "--host",
            &a,
            "--host",
            &b,
            "--bidir",
        ])
        .args(["--agent-token-file", token.to_str().unwrap()])
        .args([
            "--sizes",
            "128",
            "--trial",
            "1s",
            "--initial-trial",
            "200ms",
        ])
        .args(["--max-rate", "4k", "--min-rate", "500", "--precision", "2%"])
        .args(["--drain", "200ms", "--goals", "0", "-q", "--json", "-"])
        .output()
        .expect("run linerate rfc2544");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let v = common::json(&String::from_utf8_lossy(&out.stdout));
    let size = &v["sizes"][0];
    assert_eq!(
        v["context"]["directions"],
        serde_json::json!(["a-b", "b-a"]),
        "{v}"
    );
    // MLRsearch's NDR goal: the max load passed, so it is the lower bound.
    for t in [
        &size["throughput"],
        &size["directions"][0]["throughput"],
        &size["directions"][1]["throughput"],
    ] {
        let goal = &t["goals"][0];
        assert_eq!(
            goal["conditional_throughput_fps"].as_f64(),
            Some(4000.0),
            "{t}"
        );
        assert_eq!(goal["status"], "max_load_is_lower_bound", "{t}");
    }
    let trials = v["trials"].as_array().expect("trials");
    assert!(trials.len() >= 2, "{v}");
    for t in trials {
        let ds = t["directions"].as_array().expect("both directions' counts");
        assert_eq!(ds.len(), 2, "{t}");
        let want =
            (t["rate_fps"].as_f64().unwrap() * t["duration_s"].as_f64().unwrap()).round() as u64;
        for d in ds {
            assert_eq!(
                d["tx"].as_u64(),
                Some(want),
                "every frame the load asks for: {t}"
            );
            assert_eq!(
                d["rx"], d["tx"],
                "every frame counted at the other agent: {t}"
            );
        }
    }
    assert!(
        bed.attached().iter().all(|i| *i != "d12" && *i != "d21"),
        "released: {:?}",
        bed.attached()
    );
}

/// `--strict-sync`: an agent whose clock offset is known less well than `--sync-tolerance`
/// (here 1 µs, below any round trip) fails the set_config naming it, and no agent keeps it.
#[test]
fn strict_sync_refuses_an_agent_whose_clock_is_not_known_well_enough() {
    if !root_or_skip("agents on network namespaces") || !have_python() {
        return;
    }
    let bed = Bed::new("ay");
    let _agents: Vec<Proc> = (1..=3).map(|h| bed.agent(h, &[])).collect();
    let token = bed.token_file();
    let (_controller, url) = Proc::start(
        &bed.ns[0],
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--http",
            "--agent-token-file",
            token.to_str().unwrap(),
            "--strict-sync",
            "--sync-tolerance",
            "1us",
        ],
    );
    let out = bed.snappi(&url, &["refused", &Bed::agent_address(1), "sync tolerance"]);
    assert!(out.contains("synchronise"), "{out}");
    assert!(bed.attached().is_empty(), "{:?}", bed.attached());
}

/// Runs one of the OTG project's b2b control-plane tests (tests/otg/`script`, unmodified)
/// against the controller, its two ports at h1's d12 and h2's d21: each agent runs the daemons
/// of the devices on its port, in namespaces of their own behind macvlans, and the controller
/// answers metrics, states and protocol control from the agents' daemons. Asserts that each
/// agent ran `per_agent` devices and the controller none, and that once the controller is gone
/// neither agent has a device namespace or a daemon left.
fn b2b_on_two_agents(tag: &str, script: &str, done: &str, per_agent: usize) {
    let bed = Bed::new(tag);
    let agents: Vec<Proc> = (1..=2).map(|h| bed.agent(h, &[])).collect();
    let (mut controller, url) = bed.controller(&bed.token_file());
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python");
    let out = Command::new("ip")
        .args(["netns", "exec", &bed.ns[0]])
        .arg(&python)
        .arg(script)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("OTG_LOCATION", &url)
        .env("OTG_TX", format!("{}/d12", Bed::agent_address(1)))
        .env("OTG_RX", format!("{}/d21", Bed::agent_address(2)))
        // The devices a script reads and kills a daemon of are the agents'.
        .env(
            "LINERATE_SERVER_PID",
            format!("{},{}", agents[0].child.id(), agents[1].child.id()),
        )
        .output()
        .unwrap_or_else(|e| panic!("run {script}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{script} failed:\n{text}");
    assert!(text.contains(done), "{text}");
    let ours: Vec<Vec<String>> = agents
        .iter()
        .map(|a| common::device_namespaces_of(a.child.id()))
        .collect();
    assert_eq!(
        (ours[0].len(), ours[1].len()),
        (per_agent, per_agent),
        "{ours:?}"
    );
    assert!(common::device_namespaces_of(controller.child.id()).is_empty());
    // SAFETY: kill(2) on our own child's pid, not yet reaped.
    unsafe { libc::kill(controller.child.id() as i32, libc::SIGTERM) };
    let _ = controller.child.wait();
    let gone = || {
        ours.iter().flatten().all(|ns| {
            let daemons = Command::new("pgrep")
                .args(["-f", &format!("/run/linerate/routing/{ns}/")])
                .output()
                .unwrap();
            !Path::new("/run/netns").join(ns).exists()
                && !Path::new("/run/linerate/routing").join(ns).exists()
                && daemons.stdout.is_empty()
        })
    };
    assert!(
        within(Duration::from_secs(10), gone),
        "device namespaces or daemons left behind: {ours:?}"
    );
    assert!(within(Duration::from_secs(5), || bed.attached().is_empty()));
    drop(agents);
}

/// Devices that speak BGP on two agents' ports (issue 35: a device on any place of the test
/// bed): tests/otg/bgp_b2b.py — sessions up with every route, drx's daemon's view of dtx's
/// ranges attribute by attribute, the flows between the ranges counted exactly, a withdrawn
/// range gone from the peer and back, protocols stopped and started, the config set again,
/// and h1's bgpd killed named in the next metrics answer.
#[test]
fn bgp_devices_on_two_agents_peer_and_answer_through_the_controller() {
    if !root_or_skip("agents on network namespaces") || !have_python() {
        return;
    }
    b2b_on_two_agents("ab", "tests/otg/bgp_b2b.py", "bgp b2b: ok", 1);
}

/// IS-IS, OSPFv2 and OSPFv3 devices on two agents' ports: tests/otg/isis_b2b.py,
/// ospfv2_b2b.py and ospfv3_b2b.py — adjacencies up, each device's LSPs or LSAs as the
/// other's daemon holds them, the routes in the device namespaces' FIBs (entered through a
/// daemon of the agent's), the flows exact, ranges withdrawn and back, a daemon killed named.
#[test]
fn isis_and_ospf_devices_on_two_agents_converge_and_answer_through_the_controller() {
    if !root_or_skip("agents on network namespaces") || !have_python() {
        return;
    }
    b2b_on_two_agents("ai", "tests/otg/isis_b2b.py", "isis b2b: ok", 1);
    b2b_on_two_agents("ao", "tests/otg/ospfv2_b2b.py", "ospfv2 b2b: ok", 1);
    b2b_on_two_agents("a3", "tests/otg/ospfv3_b2b.py", "ospfv3 b2b: ok", 1);
}
