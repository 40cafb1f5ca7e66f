//! `linerate serve` on a real lab (root): the python tests in tests/otg/ drive it through the
//! pinned snappi (the virtualenv scripts/setup.sh makes), and the server leaves the lab as it
//! found it when it gets SIGTERM.
#![cfg(target_os = "linux")]

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use common::{linerate_usage_error, root_or_skip};

/// The server, killed (SIGTERM) and waited for when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        // A child already reaped keeps its status: its pid may be another process's now.
        if matches!(self.0.try_wait(), Ok(Some(_))) {
            return;
        }
        // SAFETY: kill(2) on the child's own pid, not yet reaped.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let _ = self.0.wait();
    }
}

/// Starts `linerate serve` on a free port and returns it with its URL (read from its first
/// line on stderr).
fn serve(extra: &[&str]) -> (Server, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(extra)
        .stderr(Stdio::piped())
        .spawn()
        .expect("start linerate serve");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let first = lines
        .next()
        .expect("a first line")
        .expect("readable stderr");
    let url = first
        .split_whitespace()
        .find(|w| w.starts_with("http"))
        .unwrap_or_else(|| panic!("no URL in: {first}"))
        .to_owned();
    // Keep draining stderr so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (Server(child), url)
}

/// The project's virtualenv python (scripts/setup.sh makes it); None, said, when it is missing
/// outside CI (in CI a missing one fails the test).
fn venv_python() -> Option<std::path::PathBuf> {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python");
    if python.exists() {
        return Some(python);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "no virtualenv at {}: scripts/setup.sh makes it",
        python.display()
    );
    eprintln!("SKIPPED: no {} (run scripts/setup.sh)", python.display());
    None
}

#[test]
fn snappi_drives_linerate_serve_on_a_lab() {
    if !root_or_skip("linerate serve on a lab") {
        return;
    }
    let Some(python) = venv_python() else {
        return;
    };
    let lab = common::lab("otg", 1);
    let (server, url) = serve(&[]);
    assert!(url.starts_with("https://"), "{url}");
    let status = Command::new(&python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/otg"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("OTG_LOCATION", &url)
        .env("OTG_TX", &lab.sender)
        .env("OTG_RX", format!("{}@{}", lab.receiver, lab.netns))
        .status()
        .expect("run pytest");
    assert!(status.success(), "the snappi tests failed (output above)");
    // The example the docs point to runs as shipped (it raises when the flow does not end
    // stopped with every frame received).
    let example = Command::new(&python)
        .arg("examples/otg_quickstart.py")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("OTG_LOCATION", &url)
        .env("OTG_TX", &lab.sender)
        .env("OTG_RX", format!("{}@{}", lab.receiver, lab.netns))
        .stdout(Stdio::null())
        .status()
        .expect("run the quickstart");
    assert!(
        example.success(),
        "examples/otg_quickstart.py failed (output above)"
    );
    drop(server);
    // SIGTERM gave the lab's receive end back to its sink.
    assert!(common::xdp_attached(&lab.receiver, Some(&lab.netns)));
}

/// serve's dashboard (`/ui`) in the distribution's headless Chromium: the page loads with the
/// token, its table and charts follow two running flows, its stop button stops one of them and
/// only it (tests/otg/ui_dashboard.py asserts it through snappi's metrics too). The screenshot
/// is kept as `target/ui-dashboard.png`.
#[test]
fn the_dashboard_shows_running_flows_and_its_button_stops_one_in_a_real_browser() {
    if !root_or_skip("serve's dashboard on a lab") {
        return;
    }
    let Some(python) = venv_python() else {
        return;
    };
    if !Path::new("/usr/bin/chromedriver").exists() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "no chromium-driver: scripts/setup.sh installs it"
        );
        eprintln!("SKIPPED: no /usr/bin/chromedriver (run scripts/setup.sh)");
        return;
    }
    let lab = common::lab("otgui", 1);
    let token = "dashboard-token-0123456789abcdef";
    let (server, url) = serve(&["--token", token]);
    let shot = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/ui-dashboard.png");
    let _ = std::fs::remove_file(&shot);
    let status = Command::new(&python)
        .arg("tests/otg/ui_dashboard.py")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("OTG_LOCATION", &url)
        .env("OTG_TOKEN", token)
        .env("OTG_TX", &lab.sender)
        .env("OTG_RX", format!("{}@{}", lab.receiver, lab.netns))
        .env("UI_SHOT", &shot)
        .status()
        .expect("run the dashboard check");
    assert!(
        status.success(),
        "the dashboard check failed (output above)"
    );
    let png = std::fs::read(&shot).expect("the screenshot was kept");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{} bytes",
        png.len()
    );
    drop(server);
}

/// `linerate console` in tmux at 80×24 against a serve on a lab: the table shows every flow,
/// the start-all key starts them, Down and p pause the second (its count stands still at the
/// receiver, read through snappi), r resumes it, q quits; `--no-tui` prints the table as text
/// (tests/otg/console_tmux.py asserts it).
#[test]
fn the_console_in_tmux_shows_every_flow_and_a_key_pauses_the_selected_one() {
    if !root_or_skip("the console on a lab") {
        return;
    }
    let Some(python) = venv_python() else {
        return;
    };
    let lab = common::lab("otgcon", 1);
    let token = "console-token-0123456789abcdef";
    let (server, url) = serve(&["--token", token]);
    let status = Command::new(&python)
        .arg("tests/otg/console_tmux.py")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("LINERATE_BIN", env!("CARGO_BIN_EXE_linerate"))
        .env("OTG_LOCATION", &url)
        .env("OTG_TOKEN", token)
        .env("OTG_TX", &lab.sender)
        .env("OTG_RX", format!("{}@{}", lab.receiver, lab.netns))
        .status()
        .expect("run the console check");
    assert!(status.success(), "the console check failed (output above)");
    drop(server);
    // The console's own server gave the lab's receive end back as it stopped.
    assert!(common::xdp_attached(&lab.receiver, Some(&lab.netns)));
}

/// Two OTG devices on a router lab's two ends (issue 23): the router is never configured by
/// the test, the devices resolve its MACs by ARP (get_states shows them), and a flow each way
/// by device endpoints arrives whole (tests/otg/devices_router.py asserts it).
#[test]
fn snappi_devices_resolve_a_router_and_flows_cross_it_both_ways() {
    if !root_or_skip("OTG devices through a router") {
        return;
    }
    let Some(python) = venv_python() else {
        return;
    };
    let lab = linerate_lab::LabGuard::up_with_dut(
        &linerate_lab::LabConfig {
            name: linerate_lab::unique_name("otd"),
            queues: 1,
        },
        Some(linerate_lab::DutKind::Router),
    )
    .expect("lab up with a router DUT");
    let dut = lab.dut.clone().expect("a DUT");
    let (gw_west, gw_east) = dut.gateways.expect("the router's gateways");
    let (west, _, _, east) = linerate_lab::routed_addresses(&lab.name);
    let egress_mac = Command::new("ip")
        .args(["netns", "exec", &dut.netns, "cat"])
        .arg(format!("/sys/class/net/{}/address", dut.egress))
        .output()
        .expect("read the router's egress MAC");
    let egress_mac = String::from_utf8_lossy(&egress_mac.stdout)
        .trim()
        .to_owned();
    let ingress_mac = dut.ingress_mac.map(|b| format!("{b:02x}")).join(":");
    let (server, url) = serve(&["--cores", "0,1"]);
    let status = Command::new(&python)
        .arg("tests/otg/devices_router.py")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("OTG_LOCATION", &url)
        .env("OTG_WEST_PORT", &lab.sender)
        .env("OTG_EAST_PORT", format!("{}@{}", lab.receiver, lab.netns))
        .env("OTG_WEST", format!("{west}/30"))
        .env("OTG_WEST_GW", gw_west.to_string())
        .env("OTG_EAST", format!("{east}/30"))
        .env("OTG_EAST_GW", gw_east.to_string())
        .env("OTG_ROUTER_MACS", format!("{ingress_mac},{egress_mac}"))
        .status()
        .expect("run tests/otg/devices_router.py");
    assert!(status.success(), "the devices script failed (output above)");
    drop(server);
    // SIGTERM gave the lab's receive end back to its sink.
    assert!(common::xdp_attached(&lab.receiver, Some(&lab.netns)));
}

/// Two devices back to back that speak eBGP through FRR (issue 35): tests/otg/bgp_b2b.py sets
/// the config, checks sessions, learned prefixes and their attributes, flows between the route
/// ranges, withdraw/advertise, protocol stop/start and a daemon's death; after SIGTERM no
/// device namespace or daemon is left.
#[test]
fn snappi_bgp_devices_back_to_back_learn_each_others_routes() {
    if !root_or_skip("OTG devices with BGP") {
        return;
    }
    let Some(python) = venv_python() else {
        return;
    };
    back_to_back_devices(&python, "obg", "tests/otg/bgp_b2b.py");
}

/// Two devices back to back that speak IS-IS through FRR (issue 35), point-to-point at both
/// levels: tests/otg/isis_b2b.py checks adjacencies, the LSPs each learned with the other's
/// ranges, the routes in a device's own FIB, flows between the ranges, withdraw/advertise,
/// protocol stop/start and a daemon's death; after SIGTERM no device namespace or daemon is
/// left, and the ports' XDP programs stay.
#[test]
fn snappi_isis_devices_back_to_back_learn_each_others_lsps() {
    if !root_or_skip("OTG devices with IS-IS") {
        return;
    }
    let Some(python) = venv_python() else {
        return;
    };
    back_to_back_devices(&python, "ois", "tests/otg/isis_b2b.py");
}

/// Two devices back to back that speak OSPFv2 through FRR (issue 35): tests/otg/ospfv2_b2b.py
/// runs the OTG project's own b2b test (its config and checks) and then checks the wire's
/// counts, the routes in each device's FIB, withdraw/advertise, protocol stop/start with the
/// flap counted, and a daemon's death; after SIGTERM nothing is left.
#[test]
fn snappi_ospfv2_devices_back_to_back_learn_each_others_lsas() {
    if !root_or_skip("OTG devices with OSPFv2") {
        return;
    }
    let Some(python) = venv_python() else {
        return;
    };
    back_to_back_devices(&python, "oos", "tests/otg/ospfv2_b2b.py");
}

/// Two devices back to back that speak OSPFv3 through FRR's ospf6d (issue 35):
/// tests/otg/ospfv3_b2b.py runs the OTG project's own b2b test (its config and checks) and then
/// the wire's counts, each FIB, withdraw/advertise, stop/start and a daemon's death.
#[test]
fn snappi_ospfv3_devices_back_to_back_learn_each_others_lsas() {
    if !root_or_skip("OTG devices with OSPFv3") {
        return;
    }
    let Some(python) = venv_python() else {
        return;
    };
    back_to_back_devices(&python, "oo6", "tests/otg/ospfv3_b2b.py");
}

/// Two LLDP agents back to back through lldpd (issue 35): tests/otg/lldp_b2b.py runs the OTG
/// project's own b2b test (its config and checks), then each agent's view of the other, stop and
/// start, and a daemon's death.
#[test]
fn snappi_lldp_agents_back_to_back_hear_each_other() {
    if !root_or_skip("OTG LLDP agents") {
        return;
    }
    let Some(python) = venv_python() else {
        return;
    };
    back_to_back_devices(&python, "oll", "tests/otg/lldp_b2b.py");
}

/// Two LAGs back to back, LACP spoken by linerate itself (issue 35): tests/otg/lag_b2b.py runs
/// the OTG project's own b2b test (its config and checks), then the flow over the LAGs counted
/// exactly, LACP stopped on one member taking its partner out (expired, defaulted), protocols
/// stopped and started, a static LAG's flow counted exactly, bad LAGs refused by field, and no
/// LACP thread or socket left once the config is replaced; after SIGTERM the lab's receive end
/// has its program back.
#[test]
fn snappi_lacp_lags_back_to_back_partner_and_carry_a_flow() {
    if !root_or_skip("OTG LAGs with LACP") {
        return;
    }
    let Some(python) = venv_python() else {
        return;
    };
    let lab = common::lab("olg", 1);
    // One transmit port of one queue: serve's default cores (two would ask for two queues).
    let (server, url) = serve(&[]);
    let status = Command::new(&python)
        .arg("tests/otg/lag_b2b.py")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("OTG_LOCATION", &url)
        .env("OTG_TX", &lab.sender)
        .env("OTG_RX", format!("{}@{}", lab.receiver, lab.netns))
        .env("LINERATE_SERVER_PID", server.0.id().to_string())
        .status()
        .expect("run tests/otg/lag_b2b.py");
    assert!(
        status.success(),
        "tests/otg/lag_b2b.py failed (output above)"
    );
    drop(server);
    assert!(common::xdp_attached(&lab.receiver, Some(&lab.netns)));
}

/// A second veth pair beside a lab's: one end in the root namespace, the other in the lab's
/// namespace, IPv6 off on both (nothing but the test's frames reaches them); deleted on drop.
struct SecondPair {
    here: String,
}

impl SecondPair {
    fn beside(lab: &linerate_lab::LabGuard) -> (SecondPair, String) {
        let (here, there) = (format!("{}m", lab.sender), format!("{}m", lab.receiver));
        let ip = |args: &[&str]| {
            let ok = Command::new("ip").args(args).status();
            assert!(ok.is_ok_and(|s| s.success()), "ip {args:?}");
        };
        ip(&[
            "link", "add", &here, "type", "veth", "peer", "name", &there, "netns", &lab.netns,
        ]);
        let pair = SecondPair { here: here.clone() };
        std::fs::write(format!("/proc/sys/net/ipv6/conf/{here}/disable_ipv6"), "1")
            .expect("IPv6 off here");
        ip(&["-n", &lab.netns, "link", "set", &there, "up"]);
        let sysctl = format!("net.ipv6.conf.{there}.disable_ipv6=1");
        ip(&["netns", "exec", &lab.netns, "sysctl", "-q", "-w", &sysctl]);
        ip(&["link", "set", &here, "up"]);
        (pair, there)
    }
}

impl Drop for SecondPair {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["link", "del", &self.here])
            .status();
    }
}

/// Runs `script` against a `linerate serve` on a fresh lab and a second veth pair beside it
/// (OTG_TX and OTG_RX the lab's ends, OTG_TX2 and OTG_RX2 the pair's); after SIGTERM no
/// device namespace of the server's is left and the lab's receive end has its program back.
fn over_two_pairs(python: &Path, lab: &str, script: &str) {
    let lab = common::lab(lab, 1);
    let (pair, there) = SecondPair::beside(&lab);
    let (server, url) = serve(&[]);
    let status = Command::new(python)
        .arg(script)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("OTG_LOCATION", &url)
        .env("OTG_TX", &lab.sender)
        .env("OTG_RX", format!("{}@{}", lab.receiver, lab.netns))
        .env("OTG_TX2", &pair.here)
        .env("OTG_RX2", format!("{there}@{}", lab.netns))
        .env("LINERATE_SERVER_PID", server.0.id().to_string())
        .status()
        .unwrap_or_else(|e| panic!("run {script}: {e}"));
    assert!(status.success(), "{script} failed (output above)");
    let ours = common::device_namespaces_of(server.0.id());
    drop(server);
    drop(pair);
    for ns in &ours {
        assert!(
            !Path::new("/run/netns").join(ns).exists(),
            "device namespace {ns} was left behind"
        );
    }
    assert!(common::xdp_attached(&lab.receiver, Some(&lab.netns)));
}

/// Two LAGs of two members each, over two veth pairs: tests/otg/lag_members.py checks that the
/// members aggregate by partner (each member's partner port its peer), that four flows are
/// placed two on each member by the hash of their names and counted exactly per port and per
/// LAG, that LACP stopped on one member takes a LAG of min_links 2 down while its partner
/// LAG (min_links 1) stays up on one member, and that flows started after a member left (by
/// LACP, then by its link) all go on the members still in.
#[test]
fn snappi_lacp_lags_of_two_members_aggregate_and_spread_flows() {
    if !root_or_skip("OTG LAGs of two members") {
        return;
    }
    if let Some(python) = venv_python() {
        over_two_pairs(&python, "olm", "tests/otg/lag_members.py");
    }
}

/// Devices on LAGs (featureprofiles' aggregate tests' shape): tests/otg/lag_devices.py puts a
/// device with an address and eBGP on each of two LACP LAGs of two members over two veth
/// pairs; the session comes up over the LAGs, each device's hosts resolve their gateway on
/// both members, four flows between the route ranges are counted exactly two on each member,
/// and with LACP stopped on a member the next start puts them all on the others while the
/// session stays up. Nothing of the devices is left once the server is gone.
#[test]
fn snappi_devices_on_lags_speak_bgp_and_spread_flows_over_the_members() {
    if !root_or_skip("OTG devices on LAGs of two members") {
        return;
    }
    if let Some(python) = venv_python() {
        over_two_pairs(&python, "old", "tests/otg/lag_devices.py");
    }
}

/// Runs `script` against a `linerate serve` on a fresh lab (OTG_TX its sender, OTG_RX its
/// receiver) whose config makes two devices with daemons; after SIGTERM neither device's
/// namespace nor any daemon is left, and the lab's receive end has its program back.
fn back_to_back_devices(python: &Path, lab: &str, script: &str) {
    let lab = common::lab(lab, 1);
    let (server, url) = serve(&["--cores", "0,1"]);
    let status = Command::new(python)
        .arg(script)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("OTG_LOCATION", &url)
        .env("OTG_TX", &lab.sender)
        .env("OTG_RX", format!("{}@{}", lab.receiver, lab.netns))
        .env("LINERATE_SERVER_PID", server.0.id().to_string())
        .status()
        .unwrap_or_else(|e| panic!("run {script}: {e}"));
    assert!(status.success(), "{script} failed (output above)");
    let ours = common::device_namespaces_of(server.0.id());
    assert_eq!(ours.len(), 2, "two devices, two namespaces: {ours:?}");
    drop(server);
    for ns in &ours {
        assert!(
            !Path::new("/run/netns").join(ns).exists(),
            "device namespace {ns} was left behind"
        );
    }
    // Only this server's devices' daemons: another linerate on the machine may have its own.
    for ns in &ours {
        let left = Command::new("pgrep")
            .args(["-f", &format!("/run/linerate/routing/{ns}/")])
            .output()
            .unwrap();
        assert!(
            left.stdout.is_empty(),
            "daemons of {ns} left behind: {}",
            String::from_utf8_lossy(&left.stdout)
        );
    }
    assert!(common::xdp_attached(&lab.receiver, Some(&lab.netns)));
}

/// The routed lab of issue 35: two devices advertise 1,000 prefixes each by eBGP to a BIRD
/// DUT (`lab up --dut bgp`) that installs them; traffic to every prefix crosses it exactly, and
/// a withdrawn range stops being forwarded (tests/otg/bgp_router.py asserts it, the DUT's FIB
/// read with `ip route`).
#[test]
fn snappi_bgp_devices_teach_a_routing_dut_and_a_withdraw_stops_forwarding() {
    if !root_or_skip("OTG devices with BGP through a routing DUT") {
        return;
    }
    let Some(python) = venv_python() else {
        return;
    };
    let lab = linerate_lab::LabGuard::up_with_dut(
        &linerate_lab::LabConfig {
            name: linerate_lab::unique_name("obr"),
            queues: 1,
        },
        Some(linerate_lab::DutKind::Bgp),
    )
    .expect("lab up with a BGP DUT");
    let dut = lab.dut.clone().expect("a DUT");
    let (gw_west, gw_east) = dut.gateways.expect("the router's gateways");
    let (west, _, _, east) = linerate_lab::routed_addresses(&lab.name);
    let (server, url) = serve(&["--cores", "0,1"]);
    let status = Command::new(&python)
        .arg("tests/otg/bgp_router.py")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("OTG_LOCATION", &url)
        .env("OTG_WEST_PORT", &lab.sender)
        .env("OTG_EAST_PORT", format!("{}@{}", lab.receiver, lab.netns))
        .env("OTG_WEST", format!("{west}/30"))
        .env("OTG_WEST_GW", gw_west.to_string())
        .env("OTG_EAST", format!("{east}/30"))
        .env("OTG_EAST_GW", gw_east.to_string())
        .env("OTG_DUT_NETNS", &dut.netns)
        .status()
        .expect("run tests/otg/bgp_router.py");
    assert!(
        status.success(),
        "the routed BGP script failed (output above)"
    );
    let ours = common::device_namespaces_of(server.0.id());
    assert_eq!(
        ours.len(),
        2,
        "the config's two devices each have a namespace: {ours:?}"
    );
    drop(server);
    for ns in &ours {
        assert!(
            !Path::new("/run/netns").join(ns).exists(),
            "device namespace {ns} was left behind"
        );
    }
    let name = lab.name.clone();
    drop(lab);
    assert!(
        !linerate_lab::bird::socket(&name).exists(),
        "lab down left the DUT's BIRD behind"
    );
}

#[test]
fn listening_beyond_loopback_needs_a_token() {
    let line = linerate_usage_error(&["serve", "--listen", "0.0.0.0:8443"]);
    assert!(line.contains("--token"), "{line}");
    let line = linerate_usage_error(&["serve", "--listen", "0.0.0.0:8443", "--token", "short"]);
    assert!(line.contains("16 characters"), "{line}");
}

#[test]
fn a_backend_that_sends_on_no_interface_is_refused_at_start() {
    for backend in ["pcap", "null", "bpf"] {
        let line = linerate_usage_error(&["serve", "--backend", backend]);
        assert!(line.contains(&format!("--backend {backend}")), "{line}");
        assert!(line.contains("afxdp, afpacket or live"), "{line}");
    }
}

/// One plain HTTP/1.1 request; the status code and the body.
fn http(url: &str, request: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let addr = url.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    // A server that never answers fails the test, not hangs it.
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .expect("timeout");
    s.write_all(request.as_bytes()).expect("write");
    let mut answer = String::new();
    s.read_to_string(&mut answer).expect("read");
    let code = answer
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status in: {answer}"));
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or("").to_owned();
    (code, body)
}

#[test]
fn the_token_is_required_and_bodies_are_limited_and_the_server_goes_on() {
    let token = "0123456789abcdef0123";
    let (_server, url) = serve(&["--http", "--token", token, "--max-body", "1000"]);
    assert!(url.starts_with("http://"), "{url}");
    let get = |auth: &str| {
        http(
            &url,
            &format!(
                "GET /capabilities/version HTTP/1.1\r\nHost: t\r\n{auth}Connection: close\r\n\r\n"
            ),
        )
    };
    let (code, body) = get("");
    assert_eq!(code, 401, "{body}");
    let error: linerate_otg::ErrorBody = serde_json::from_str(&body).expect("an OTG error body");
    assert_eq!((error.code, error.kind.as_str()), (401, "validation"));
    assert_eq!(get("Authorization: Bearer 0123456789abcdef0124\r\n").0, 401);
    // The Prometheus page is behind the same token; before any config it is an empty page.
    let scrape = |auth: &str| {
        http(
            &url,
            &format!("GET /metrics HTTP/1.1\r\nHost: t\r\n{auth}Connection: close\r\n\r\n"),
        )
    };
    assert_eq!(scrape("").0, 401);
    let (code, page) = scrape(&format!("Authorization: Bearer {token}\r\n"));
    assert_eq!((code, page.trim()), (200, "# EOF"));
    let big = "x".repeat(5000);
    let (code, body) = http(
        &url,
        &format!(
            "POST /config HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{big}",
            big.len()
        ),
    );
    assert_eq!(code, 413);
    assert!(
        otg_error(413, &body).errors[0].contains("--max-body"),
        "{body}"
    );
    // The scheme's name is case-insensitive (RFC 7235).
    assert_eq!(get(&format!("Authorization: bearer {token}\r\n")).0, 200);
    let (code, body) = http(
        &url,
        &format!(
            "PATCH /config HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {token}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
        ),
    );
    // update_config is served: before any config it says what to do first.
    assert_eq!(code, 400, "{body}");
    assert!(body.contains("set_config first"), "{body}");
    let (code, body) = http(
        &url,
        &format!(
            "DELETE /config HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {token}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        ),
    );
    assert_eq!(code, 405, "{body}");
    assert!(body.contains("delete_config"), "{body}");
    let (code, body) = get(&format!("Authorization: Bearer {token}\r\n"));
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("\"api_spec_version\":\"1.60.0\""), "{body}");
}

#[test]
fn sigterm_mid_transmit_stops_the_traffic_gives_the_lab_back_and_exits() {
    if !root_or_skip("linerate serve on a lab") {
        return;
    }
    let lab = common::lab("ots", 1);
    let (mut server, url) = serve(&["--http"]);
    let post = |path: &str, body: &str| {
        http(
            &url,
            &format!(
                "POST {path} HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            ),
        )
    };
    let config = serde_json::json!({
        "ports": [
            {"name": "tx", "location": lab.sender},
            {"name": "rx", "location": format!("{}@{}", lab.receiver, lab.netns)}
        ],
        "flows": [{
            "name": "f", "tx_rx": {"choice": "port", "port": {"tx_name": "tx", "rx_names": ["rx"]}},
            "packet": [{"choice": "ethernet"}, {"choice": "ipv4"}, {"choice": "udp"}],
            "rate": {"choice": "pps", "pps": "2000"},
            "metrics": {"enable": true}
        }]
    });
    let (code, body) = post("/config", &config.to_string());
    assert_eq!(code, 200, "{body}");
    let start = r#"{"choice": "traffic", "traffic": {"choice": "flow_transmit", "flow_transmit": {"state": "start"}}}"#;
    let (code, body) = post("/control/state", start);
    assert_eq!(code, 200, "{body}");
    // Frames arrive (the receive program holds the lab's receive end meanwhile).
    let metrics = r#"{"choice": "flow", "flow": {"flow_names": ["f"]}}"#;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let (_, body) = post("/monitor/metrics", metrics);
        let m: serde_json::Value = serde_json::from_str(&body).expect("metrics JSON");
        if m["flow_metrics"][0]["frames_rx"].as_u64().unwrap_or(0) > 100 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no frames arrived: {body}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // SAFETY: kill(2) on the child's own pid.
    unsafe { libc::kill(server.0.id() as i32, libc::SIGTERM) };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let status = loop {
        if let Some(status) = server.0.try_wait().expect("wait") {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still running 10 s after SIGTERM"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
    // The sink is back on the receive end and counts nothing more: the traffic stopped.
    assert!(common::xdp_attached(&lab.receiver, Some(&lab.netns)));
    let sink = linerate_xdp::PinnedSink::open(&lab.pin_dir()).expect("the lab's sink");
    let before = sink.counters().expect("counters").packets;
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(sink.counters().expect("counters").packets, before);
}

/// A request with a body on a plain-HTTP server; the status code and the body.
fn post(url: &str, path: &str, body: &str) -> (u16, String) {
    http(
        url,
        &format!(
            "POST {path} HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    )
}

fn get(url: &str, path: &str) -> (u16, String) {
    http(
        url,
        &format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"),
    )
}

/// The body parsed as an OTG error of `code`.
fn otg_error(code: u16, body: &str) -> linerate_otg::ErrorBody {
    let error: linerate_otg::ErrorBody = serde_json::from_str(body)
        .unwrap_or_else(|e| panic!("not an OTG error body ({e}): {body}"));
    assert_eq!(error.code, i32::from(code), "{body}");
    error
}

#[test]
fn flags_that_would_fail_later_are_refused_at_start() {
    let cases: [(&[&str], &str); 5] = [
        (&["--cores", "99"], "--cores 99"),
        (&["--cores", "0,0"], "--cores: core 0 is named twice"),
        (&["--max-body", "0"], "--max-body 0"),
        (&["--token", "                "], "printable ASCII"),
        (&["--token", "éééééééé"], "printable ASCII"),
    ];
    for (args, words) in cases {
        let line = linerate_usage_error(&[&["serve"], args].concat());
        assert!(line.contains(words), "{args:?}: {line}");
    }
}

#[test]
fn a_tls_certificate_that_is_empty_or_not_the_keys_is_refused_naming_the_file() {
    let dir = std::env::temp_dir().join(format!("linerate-otg-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = |name: &str| dir.join(name).to_string_lossy().into_owned();
    std::fs::write(path("empty.pem"), "").expect("write");
    let line = linerate_usage_error(&[
        "serve",
        "--tls-cert",
        &path("empty.pem"),
        "--tls-key",
        &path("empty.pem"),
    ]);
    assert!(line.contains(&path("empty.pem")), "{line}");
    assert!(line.contains("no PEM certificate"), "{line}");
    for n in ["1", "2"] {
        let made = Command::new("openssl")
            .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
            .args(["ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"])
            .args(["-subj", "/CN=localhost", "-keyout"])
            .args([
                path(&format!("key{n}.pem")),
                "-out".into(),
                path(&format!("cert{n}.pem")),
            ])
            .stderr(Stdio::null())
            .status();
        if !made.is_ok_and(|s| s.success()) {
            eprintln!("SKIPPED the key mismatch: no openssl to make certificates");
            return;
        }
    }
    let line = linerate_usage_error(&[
        "serve",
        "--tls-cert",
        &path("cert1.pem"),
        "--tls-key",
        &path("key2.pem"),
    ]);
    assert!(line.contains(&path("cert1.pem")), "{line}");
    assert!(line.contains(&path("key2.pem")), "{line}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_token_sent_in_clear_beyond_loopback_is_warned_about() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args(["serve", "--listen", "0.0.0.0:0", "--http"])
        .args(["--token", "0123456789abcdef0123"])
        .stderr(Stdio::piped())
        .spawn()
        .expect("start linerate serve");
    let stderr = child.stderr.take().expect("stderr");
    let _server = Server(child);
    let mut lines = BufReader::new(stderr).lines();
    let first = lines.next().expect("a line").expect("stderr");
    assert!(
        first.contains("warning") && first.contains("clear"),
        "{first}"
    );
    let second = lines.next().expect("a line").expect("stderr");
    assert!(second.contains("http://"), "{second}");
}

#[test]
fn tls_serves_clients_with_no_alpn_or_http_1_0() {
    let (_server, url) = serve(&[]);
    for flag in ["--http1.0", "--no-alpn", "--http1.1"] {
        let out = Command::new("curl")
            .args(["-sk", flag, "-o", "/dev/null", "-w", "%{http_code}"])
            .arg(format!("{url}/capabilities/version"))
            .output();
        let Ok(out) = out else {
            eprintln!("SKIPPED: no curl");
            return;
        };
        assert_eq!(String::from_utf8_lossy(&out.stdout), "200", "curl {flag}");
    }
}

#[test]
fn another_local_user_is_refused_and_the_one_who_started_it_is_served() {
    if !root_or_skip("a request as nobody") {
        return;
    }
    let (_server, url) = serve(&["--http"]);
    let config = r#"{"ports": [{"name": "p", "location": "lo"}]}"#;
    let out = Command::new("setpriv")
        .args(["--reuid", "nobody", "--regid", "nogroup", "--clear-groups"])
        .args([
            "curl",
            "-s",
            "-w",
            "\n%{http_code}",
            "-H",
            "Content-Type: application/json",
        ])
        .args(["-d", config])
        .arg(format!("{url}/config"))
        .output()
        .expect("run setpriv curl");
    let out = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = out.rsplit_once('\n').expect("a status line");
    assert_eq!(code, "403", "{out}");
    let error = otg_error(403, body);
    assert!(error.errors[0].contains("uid 0"), "{body}");
    // Nothing was configured; the user who started it (root here) is served.
    assert_eq!(get(&url, "/config"), (200, "{}".to_owned()));
    assert_eq!(post(&url, "/config", config).0, 200);
    let (code, body) = get(&url, "/config");
    assert_eq!(code, 200);
    assert!(body.contains("\"lo\""), "{body}");
    // Started by sudo, it serves the user who ran sudo.
    let mut child = Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args(["serve", "--listen", "127.0.0.1:0", "--http"])
        .env("SUDO_UID", "65534")
        .stderr(Stdio::piped())
        .spawn()
        .expect("start linerate serve");
    let stderr = child.stderr.take().expect("stderr");
    let _sudo = Server(child);
    let first = BufReader::new(stderr)
        .lines()
        .next()
        .expect("a line")
        .expect("stderr");
    let url = first
        .split_whitespace()
        .find(|w| w.starts_with("http"))
        .expect("a URL");
    let out = Command::new("setpriv")
        .args(["--reuid", "nobody", "--regid", "nogroup", "--clear-groups"])
        .args(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}"])
        .arg(format!("{url}/capabilities/version"))
        .output()
        .expect("run setpriv curl");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "200");
}

#[test]
fn another_users_idle_connections_do_not_take_the_owners_slots() {
    use std::io::{Read, Write};
    if !root_or_skip("connections as nobody") {
        return;
    }
    let (_server, url) = serve(&["--http", "--max-connections", "2"]);
    let addr = url.trim_start_matches("http://");
    let (host, port) = addr.rsplit_once(':').expect("host:port");
    let hold = format!(
        "import socket, time\n\
         s = [socket.create_connection(('{host}', {port})) for _ in range(20)]\n\
         print('held', flush=True)\n\
         time.sleep(15)\n"
    );
    // The system's python: nobody cannot read a user's own (pyenv, a virtualenv under /root).
    if !Path::new("/usr/bin/python3").exists() {
        eprintln!("SKIPPED: no /usr/bin/python3 to hold connections as nobody");
        return;
    }
    let mut nobody = Command::new("setpriv")
        .args(["--reuid", "nobody", "--regid", "nogroup", "--clear-groups"])
        .args(["/usr/bin/python3", "-c", &hold])
        .stdout(Stdio::piped())
        .spawn()
        .expect("run python3 as nobody");
    let mut held = String::new();
    BufReader::new(nobody.stdout.take().expect("stdout"))
        .read_line(&mut held)
        .expect("read");
    assert_eq!(held.trim(), "held");
    // Answered while nobody's connections are still held (they are for 15 s).
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(std::time::Duration::from_secs(3)))
        .expect("timeout");
    s.write_all(b"GET /capabilities/version HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .expect("write");
    let mut answer = Vec::new();
    let read = s.read_to_end(&mut answer);
    let _ = nobody.kill();
    let _ = nobody.wait();
    assert!(
        read.is_ok(),
        "no answer while another user held connections: {read:?}"
    );
    assert!(
        answer.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
}

/// 70 connections that never send a request the server takes (half of them past the TLS
/// handshake, one with a request refused 401) once filled `--max-connections` for 30 s each: an
/// authorized request waited 26 s. They wait apart from the slots now, and are closed 5 s after
/// they opened.
#[test]
fn idle_connections_without_the_token_take_no_slot_and_are_closed_soon() {
    use std::io::Write;
    let token = "0123456789abcdef0123";
    let (_server, url) = serve(&["--token", token, "--max-connections", "2"]);
    let addr = url.trim_start_matches("https://");
    let (host, port) = addr.rsplit_once(':').expect("host:port");
    // From five loopback sources (14 each, within the 16 one source may have waiting); past
    // the 64 that may wait in all, the oldest are closed.
    let hold = format!(
        "import socket, ssl, sys, time\n\
         socket.setdefaulttimeout(10)\n\
         ctx = ssl.create_default_context()\n\
         ctx.check_hostname = False\n\
         ctx.verify_mode = ssl.CERT_NONE\n\
         socks = []\n\
         for i in range(70):\n\
         \x20   s = socket.create_connection(('{host}', {port}), source_address=('127.0.0.%d' % (2 + i % 5), 0))\n\
         \x20   socks.append(ctx.wrap_socket(s) if i % 2 else s)\n\
         socks[69].sendall(b'GET /capabilities/version HTTP/1.1\\r\\nHost: t\\r\\n\\r\\n')\n\
         print('refused', socks[69].recv(12).decode(), flush=True)\n\
         def is_open(s):\n\
         \x20   s.setblocking(False)\n\
         \x20   try:\n\
         \x20       return len(s.recv(65536)) > 0\n\
         \x20   except (BlockingIOError, ssl.SSLWantReadError):\n\
         \x20       return True\n\
         \x20   except OSError:\n\
         \x20       return False\n\
         print('held', flush=True)\n\
         sys.stdin.readline()\n\
         print('open', sum(map(is_open, socks)), flush=True)\n\
         end = time.monotonic() + 20\n\
         while any(map(is_open, socks)) and time.monotonic() < end:\n\
         \x20   time.sleep(0.1)\n\
         print('still open', sum(map(is_open, socks)), flush=True)\n"
    );
    let mut python = Command::new("python3")
        .args(["-c", &hold])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run python3");
    let mut lines = BufReader::new(python.stdout.take().expect("stdout")).lines();
    let mut line = || lines.next().expect("a line").expect("stdout");
    assert_eq!(line(), "refused HTTP/1.1 401");
    assert_eq!(line(), "held");
    let out = Command::new("curl")
        .args([
            "-sk",
            "--max-time",
            "10",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
        ])
        .args(["-H", &format!("Authorization: Bearer {token}")])
        .arg(format!("{url}/capabilities/version"))
        .output()
        .expect("run curl");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "200",
        "the authorized request while 70 idle connections were open"
    );
    python
        .stdin
        .as_mut()
        .expect("stdin")
        .write_all(b"check\n")
        .expect("write");
    let open: usize = line()
        .strip_prefix("open ")
        .and_then(|n| n.parse().ok())
        .expect("a count");
    // Answered while they were open; no more than may wait at once.
    assert!((40..64).contains(&open), "{open} idle connections open");
    assert_eq!(line(), "still open 0", "idle connections left open");
    let _ = python.wait();
}

#[test]
fn a_config_of_too_many_flows_is_refused_before_it_costs_memory() {
    let (server, url) = serve(&["--http"]);
    let flow = |i: usize| {
        serde_json::json!({
            "name": format!("f{i}"),
            "tx_rx": {"choice": "port", "port": {"tx_name": "tx", "rx_names": ["rx"]}},
            "packet": [{"choice": "ethernet"}, {"choice": "ipv4"}, {"choice": "udp"}],
            "rate": {"choice": "pps", "pps": "100"}
        })
    };
    let config = serde_json::json!({
        "ports": [{"name": "tx", "location": "lo"}, {"name": "rx", "location": "lo"}],
        "flows": (0..8000).map(flow).collect::<Vec<_>>()
    })
    .to_string();
    for _ in 0..3 {
        let (code, body) = post(&url, "/config", &config);
        assert_eq!(code, 400, "{body}");
        assert!(otg_error(400, &body).errors[0].contains("4096"), "{body}");
    }
    // 8,000 such flows once took 1.17 GB before they were refused; counted first, the server
    // stays about its size at start.
    let status =
        std::fs::read_to_string(format!("/proc/{}/status", server.0.id())).expect("status");
    let rss_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS");
    assert!(rss_kb < 100 << 10, "RSS {rss_kb} kB after three refusals");
}

#[test]
fn a_stalled_body_is_answered_408_and_connections_let_in_wait_past_the_cap() {
    use std::io::{Read, Write};
    use std::time::{Duration, Instant};
    let (_server, url) = serve(&["--http", "--max-connections", "2"]);
    let addr = url.trim_start_matches("http://").to_owned();
    // Two connections that were answered and stay open fill the cap: a third is not answered
    // until one goes.
    let request = b"GET /capabilities/version HTTP/1.1\r\nHost: t\r\n\r\n";
    let held: Vec<_> = (0..2)
        .map(|_| {
            let mut s = std::net::TcpStream::connect(&addr).expect("connect");
            s.write_all(request).expect("write");
            let mut answer = [0; 12];
            s.read_exact(&mut answer).expect("an answer within the cap");
            assert_eq!(&answer, b"HTTP/1.1 200");
            s
        })
        .collect();
    let mut third = std::net::TcpStream::connect(&addr).expect("connect");
    third
        .write_all(b"GET /capabilities/version HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .expect("write");
    third
        .set_read_timeout(Some(Duration::from_millis(800)))
        .expect("timeout");
    let mut answer = Vec::new();
    assert!(
        third.read_to_end(&mut answer).is_err() && answer.is_empty(),
        "answered past the cap: {}",
        String::from_utf8_lossy(&answer)
    );
    drop(held);
    third
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    third
        .read_to_end(&mut answer)
        .expect("an answer once a slot is free");
    assert!(
        answer.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    // A body that stops arriving is given up on, with an OTG error.
    let started = Instant::now();
    let (code, body) = http(
        &url,
        "POST /config HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"ports\":",
    );
    assert_eq!(code, 408, "{body}");
    otg_error(408, &body);
    assert!(
        started.elapsed() >= Duration::from_secs(9),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn one_set_config_at_a_time_and_a_failed_one_keeps_the_last_that_worked() {
    if !root_or_skip("linerate serve on a lab") {
        return;
    }
    let lab = common::lab("otc", 1);
    let (_server, url) = serve(&["--http"]);
    let config = |tx: &str| {
        serde_json::json!({
            "ports": [
                {"name": "tx", "location": tx},
                {"name": "rx", "location": format!("{}@{}", lab.receiver, lab.netns)}
            ],
            "flows": [{
                "name": "f", "tx_rx": {"choice": "port", "port": {"tx_name": "tx", "rx_names": ["rx"]}},
                "packet": [{"choice": "ethernet"}, {"choice": "ipv4"}, {"choice": "udp"}],
                "rate": {"choice": "pps", "pps": "10000"},
                "duration": {"choice": "fixed_packets", "fixed_packets": {"packets": 1000}},
                "metrics": {"enable": true}
            }]
        })
        .to_string()
    };
    let good = config(&lab.sender);
    // Two at once: one is applied, the other refused while it is.
    let barrier = std::sync::Barrier::new(2);
    let mut codes: Vec<(u16, String)> = std::thread::scope(|s| {
        let both: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    post(&url, "/config", &good)
                })
            })
            .collect();
        both.into_iter()
            .map(|t| t.join().expect("thread"))
            .collect()
    });
    codes.sort();
    assert_eq!((codes[0].0, codes[1].0), (200, 409), "{codes:?}");
    assert!(otg_error(409, &codes[1].1).errors[0].contains("set_config"));
    let sends_all = || {
        let start = r#"{"choice": "traffic", "traffic": {"choice": "flow_transmit", "flow_transmit": {"state": "start"}}}"#;
        let (code, body) = post(&url, "/control/state", start);
        assert_eq!(code, 200, "{body}");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let (_, body) = post(
                &url,
                "/monitor/metrics",
                r#"{"choice": "flow", "flow": {}}"#,
            );
            let m: serde_json::Value = serde_json::from_str(&body).expect("metrics JSON");
            let f = &m["flow_metrics"][0];
            // Received frames may trail the sender's stop (a loaded machine's veth backlog),
            // as an OTG suite's wait allows: every one is counted by the deadline, none twice.
            assert!(f["frames_rx"].as_u64() <= Some(1000), "{body}");
            if f["transmit"] == "stopped" && f["frames_tx"] == 1000 && f["frames_rx"] == 1000 {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{body}");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    };
    // The config left in place has its receiver: every frame is counted.
    sends_all();
    // One whose port cannot be opened is refused, and the one before still works.
    let (code, body) = post(&url, "/config", &config("lrnosuch0"));
    assert_eq!(code, 400, "{body}");
    assert!(
        otg_error(400, &body).errors[0].contains("the previous config is still set"),
        "{body}"
    );
    let (_, now) = get(&url, "/config");
    assert!(now.contains(&format!("\"{}\"", lab.sender)), "{now}");
    sends_all();
}

/// Port flows both ways on a lab's veth pair (issue 41): a p1→p2 and a p2→p1 flow by
/// `tx_rx.port`, the commonest OTG config, run at once as places of one test bed (each port
/// sends its flow and counts the other's). Each flow's frames_tx and frames_rx are exact, twice
/// (the receivers start afresh with each run), each port's frames_tx is its flow's, and a
/// capture on each port (frames passed on to the stack, read by an AF_PACKET socket: a count
/// that is not the receive program's) holds every frame of the flow sent toward it; one flow
/// started by name runs alone. The lab is given back after SIGTERM: its sink on the receive
/// end, nothing left on the sender end.
#[test]
fn port_flows_both_ways_on_a_veth_pair_count_exactly_per_flow_and_port() {
    if !root_or_skip("linerate serve on a lab") {
        return;
    }
    const FRAMES: u64 = 10_000;
    let lab = common::lab("otp", 1);
    let (server, url) = serve(&["--http", "--cores", "0,1"]);
    let p2 = format!("{}@{}", lab.receiver, lab.netns);
    let flow = |name: &str, tx: &str, rx: &str, dst_port: u16| {
        serde_json::json!({
            "name": name,
            "tx_rx": {"choice": "port", "port": {"tx_name": tx, "rx_names": [rx]}},
            "packet": [{"choice": "ethernet"}, {"choice": "ipv4"},
                {"choice": "udp", "udp": {"dst_port": {"choice": "value", "value": dst_port}}}],
            "size": {"choice": "fixed", "fixed": 128},
            "rate": {"choice": "pps", "pps": "5000"},
            "duration": {"choice": "fixed_packets", "fixed_packets": {"packets": FRAMES}},
            "metrics": {"enable": true, "latency": {"enable": true}}
        })
    };
    let config = serde_json::json!({
        "ports": [{"name": "p1", "location": lab.sender}, {"name": "p2", "location": p2}],
        "captures": [{"name": "c1", "port_names": ["p1"]}, {"name": "c2", "port_names": ["p2"]}],
        "flows": [flow("f12", "p1", "p2", 4012), flow("f21", "p2", "p1", 4021)]
    });
    let (code, body) = post(&url, "/config", &config.to_string());
    assert_eq!(code, 200, "{body}");
    let control = |body: &str| {
        let (code, answer) = post(&url, "/control/state", body);
        assert_eq!(code, 200, "{answer}");
    };
    let capture = |state: &str| {
        control(&format!(
            r#"{{"choice": "port", "port": {{"choice": "capture", "capture": {{"port_names": ["p1", "p2"], "state": "{state}"}}}}}}"#
        ));
    };
    let metrics = |kind: &str| {
        let (code, body) = post(
            &url,
            "/monitor/metrics",
            &format!(r#"{{"choice": "{kind}", "{kind}": {{}}}}"#),
        );
        assert_eq!(code, 200, "{body}");
        serde_json::from_str::<serde_json::Value>(&body).expect("metrics JSON")
    };
    for run in 0..2 {
        if run == 0 {
            capture("start");
        }
        control(
            r#"{"choice": "traffic", "traffic": {"choice": "flow_transmit", "flow_transmit": {"state": "start"}}}"#,
        );
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let flows = loop {
            let m = metrics("flow");
            let flows = m["flow_metrics"].as_array().expect("flow metrics").clone();
            if flows.iter().all(|f| f["transmit"] == "stopped") {
                break flows;
            }
            assert!(std::time::Instant::now() < deadline, "run {run}: {m}");
            std::thread::sleep(std::time::Duration::from_millis(100));
        };
        let got: Vec<(&str, &str, &str, u64, u64)> = flows
            .iter()
            .map(|f| {
                (
                    f["name"].as_str().unwrap_or_default(),
                    f["port_tx"].as_str().unwrap_or_default(),
                    f["port_rx"].as_str().unwrap_or_default(),
                    f["frames_tx"].as_u64().unwrap_or(0),
                    f["frames_rx"].as_u64().unwrap_or(0),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("f12", "p1", "p2", FRAMES, FRAMES),
                ("f21", "p2", "p1", FRAMES, FRAMES)
            ],
            "run {run}: {flows:?}"
        );
        for f in &flows {
            assert_eq!(f["loss"].as_f64(), Some(0.0), "{f}");
            assert_eq!(f["bytes_rx"].as_u64(), Some(FRAMES * 128), "{f}");
            let latency = f["latency"]["average_ns"].as_f64().unwrap_or(0.0);
            assert!(latency > 0.0 && latency < 1e9, "{f}");
        }
        // Each port sent its flow's frames and received at least the other's (the kernel of
        // a lab end may say something of its own).
        let ports = metrics("port");
        for p in ports["port_metrics"].as_array().expect("port metrics") {
            assert_eq!(p["frames_tx"].as_u64(), Some(FRAMES), "{p}");
            assert_eq!(p["bytes_tx"].as_u64(), Some(FRAMES * 128), "{p}");
            assert!(p["frames_rx"].as_u64().unwrap_or(0) >= FRAMES, "{p}");
            assert_eq!(p["link"], "up", "{p}");
        }
        if run == 0 {
            capture("stop");
            for (port, dst_port) in [("p1", 4021), ("p2", 4012)] {
                let (code, pcap) = post_bytes(
                    &url,
                    "/monitor/capture",
                    &format!(r#"{{"port_name": "{port}"}}"#),
                );
                assert_eq!(code, 200, "{}", String::from_utf8_lossy(&pcap));
                assert_eq!(
                    udp_frames_to(&pcap, 128, dst_port),
                    FRAMES,
                    "port {port}'s capture"
                );
            }
        }
    }
    // One flow started by name: the run ends once it has sent its count, the other flow sent
    // nothing and nothing of it arrived (each port's flows are steered as lanes).
    control(
        r#"{"choice": "traffic", "traffic": {"choice": "flow_transmit", "flow_transmit": {"state": "start", "flow_names": ["f21"]}}}"#,
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let m = metrics("flow");
        let f = &m["flow_metrics"];
        if f[1]["transmit"] == "stopped" && f[1]["frames_tx"] == FRAMES {
            assert_eq!(f[1]["frames_rx"], FRAMES, "{m}");
            assert_eq!(
                (&f[0]["frames_tx"], &f[0]["frames_rx"]),
                (&0.into(), &0.into()),
                "{m}"
            );
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{m}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    drop(server);
    assert!(common::xdp_attached(&lab.receiver, Some(&lab.netns)));
    assert!(!common::xdp_attached(&lab.sender, None));
}

/// A POST's status and body as bytes (a capture is a file).
fn post_bytes(url: &str, path: &str, body: &str) -> (u16, Vec<u8>) {
    use std::io::{Read, Write};
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .expect("timeout");
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).expect("read");
    let head_end = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an HTTP head");
    let head = String::from_utf8_lossy(&answer[..head_end]).into_owned();
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("a status code");
    assert!(
        !head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked"),
        "{head}"
    );
    (code, answer[head_end + 4..].to_vec())
}

/// Frames of `size` bytes (FCS included) in a pcap (host byte order, as serve writes it) that
/// are IPv4/UDP to `dst_port`.
fn udp_frames_to(pcap: &[u8], size: u32, dst_port: u16) -> u64 {
    let magic = u32::from_ne_bytes(pcap[..4].try_into().expect("a pcap header"));
    assert!(matches!(magic, 0xa1b2_c3d4 | 0xa1b2_3c4d), "{magic:#x}");
    let (mut at, mut n) = (24, 0);
    while at + 16 <= pcap.len() {
        let word = |o: usize| u32::from_ne_bytes(pcap[at + o..at + o + 4].try_into().unwrap());
        let (caplen, len) = (word(8) as usize, word(12));
        let frame = &pcap[at + 16..at + 16 + caplen];
        let udp = frame.len() >= 38 && frame[12..14] == [0x08, 0x00] && frame[23] == 17;
        if len == size && udp && u16::from_be_bytes([frame[36], frame[37]]) == dst_port {
            n += 1;
        }
        at += 16 + caplen;
    }
    n
}
