//! linerate's TCP ends against the kernel's (root): its client through the NAT lab's DUT
//! (nftables masquerade, conntrack) to nginx — every response's bytes checked by the client,
//! nginx's own log and the DUT's conntrack table counted — clean and with loss and reordering
//! on the DUT; and curl against linerate's server. Every test builds its own uniquely named
//! lab or namespaces and removes them, even when it fails.

#![cfg(target_os = "linux")]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{json, linerate, root_or_skip};
use linerate_lab::{DutKind, Impairments, Lab, LabConfig, LabGuard, NatRules, unique_name};

/// nginx in a namespace, serving files of the body pattern, stopped on drop.
struct Nginx {
    child: Child,
    dir: tempfile::TempDir,
}

impl Nginx {
    fn start(netns: &str, addr: &str, sizes: &[usize]) -> Nginx {
        let dir = tempfile::tempdir().expect("tempdir");
        let www = dir.path().join("www");
        std::fs::create_dir(&www).expect("www");
        for &n in sizes {
            std::fs::write(www.join(n.to_string()), linerate_stateful::http::body(n))
                .expect("body");
        }
        let d = dir.path().display();
        let conf = format!(
            "daemon off;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
             events {{ worker_connections 4096; }}\n\
             http {{\n access_log {d}/access.log;\n default_type application/octet-stream;\n\
             client_body_temp_path {d}/t; proxy_temp_path {d}/t; fastcgi_temp_path {d}/t;\n\
             uwsgi_temp_path {d}/t; scgi_temp_path {d}/t;\n\
             server {{ listen {addr}:80; root {d}/www; }}\n}}\n"
        );
        let path = dir.path().join("nginx.conf");
        std::fs::write(&path, conf).expect("nginx.conf");
        let child = Command::new("ip")
            .args(["netns", "exec", netns, "nginx", "-c"])
            .arg(&path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nginx (scripts/setup.sh installs nginx-light)");
        let nginx = Nginx { child, dir };
        // Listening once the pid file is there.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !nginx.dir.path().join("nginx.pid").exists() {
            assert!(
                Instant::now() < deadline,
                "nginx did not start: {}",
                nginx.errors()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        nginx
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("access.log")
    }

    fn errors(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
    }

    /// The access log's lines as (client address, status, body bytes).
    fn requests(&self) -> Vec<(String, String, String)> {
        std::fs::read_to_string(self.log())
            .unwrap_or_default()
            .lines()
            .map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                (w[0].to_owned(), w[8].to_owned(), w[9].to_owned())
            })
            .collect()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let pid = std::fs::read_to_string(self.dir.path().join("nginx.pid")).unwrap_or_default();
        if let Ok(pid) = pid.trim().parse::<i32>() {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
        let _ = self.child.wait();
    }
}

fn nat_lab(prefix: &str) -> LabGuard {
    LabGuard::up_with_dut(
        &LabConfig {
            name: unique_name(prefix),
            queues: 2,
        },
        Some(DutKind::Nat),
    )
    .expect("lab up --dut nat")
}

fn in_dut(lab: &Lab, args: &[&str]) -> String {
    let ns = &lab.dut.as_ref().expect("a DUT").netns;
    let out = Command::new("ip")
        .args(["netns", "exec", ns])
        .args(args)
        .output()
        .expect("ip netns exec");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `linerate tcp client` from the NAT's inside network to nginx: its JSON report.
fn client(lab: &Lab, connections: u64, bytes: u64, extra: &[&str]) -> serde_json::Value {
    let server = format!("{}:80", lab.receiver_ip);
    let out = run_client(lab, &server, connections, bytes, extra);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr),
        where_stalled(lab, &stdout)
    );
    json(&stdout)
}

/// For each connection the client timed out: the DUT's conntrack entry and the server's
/// sockets on its translated port, to tell which side stalled.
fn where_stalled(lab: &Lab, report: &str) -> String {
    let Ok(report) = serde_json::from_str::<serde_json::Value>(report) else {
        return String::new();
    };
    let table = in_dut(lab, &["conntrack", "-L", "-p", "tcp"]);
    let sockets = Command::new("ip")
        .args(["netns", "exec", &lab.netns, "ss", "-tanoi"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let mut shown = String::new();
    for t in report["timed_out"].as_array().into_iter().flatten() {
        let source = t["source"].as_str().unwrap_or_default();
        let Some((ip, port)) = source.split_once(':') else {
            continue;
        };
        shown += &format!("{t}\n");
        for entry in table
            .lines()
            .filter(|l| l.contains(&format!("src={ip} ")) && l.contains(&format!("sport={port} ")))
        {
            shown += &format!("  conntrack: {entry}\n");
            // The reply's destination port is the NAT's translation, the server's peer port.
            let translated = entry.rsplit("dport=").next().unwrap_or_default();
            let translated = translated.split_whitespace().next().unwrap_or_default();
            let mut lines = sockets.lines();
            while let Some(line) = lines.next() {
                if line.contains(&format!(":{translated} ")) {
                    shown += &format!("  server: {line} {}\n", lines.next().unwrap_or_default());
                }
            }
        }
    }
    shown
}

/// `linerate tcp client` from the NAT's inside network to `server`, as it ended.
fn run_client(
    lab: &Lab,
    server: &str,
    connections: u64,
    bytes: u64,
    extra: &[&str],
) -> std::process::Output {
    let (n, b) = (connections.to_string(), bytes.to_string());
    let mut args = vec!["-n", &n, "--response-bytes", &b];
    args.extend(extra);
    inside_client(lab, server, &args)
}

/// `linerate tcp client` on the NAT's inside network (100.64.1.0/24 behind 100.64.0.1) to
/// `server`, with `args`, reporting in JSON.
fn inside_client(lab: &Lab, server: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec![
        "tcp",
        "client",
        "-i",
        &lab.sender,
        "--src",
        "100.64.1.0/24",
        "--gateway",
        "100.64.0.1/16",
        "--server",
        server,
        "--json",
    ];
    all.extend(args);
    linerate(&all)
}

/// The NAT's translations of the inside network to `outside` (its address toward the server),
/// counted in the DUT's conntrack table, and the table to show when the count is off.
fn translations(lab: &Lab, outside: &str) -> (u64, String) {
    let table = in_dut(lab, &["conntrack", "-L", "-p", "tcp", "--dport", "80"]);
    let n = table
        .lines()
        .filter(|l| l.contains("src=100.64.1.") && l.contains(&format!("dst={outside} ")))
        .count() as u64;
    let shown = table[..table.len().min(2000)].to_owned();
    (n, shown)
}

/// Every connection established, answered whole and closed; nginx logged each GET once, from
/// the NAT's outside address; conntrack holds a translation of each.
fn assert_all_through_nat(
    lab: &Lab,
    nginx: &Nginx,
    report: &serde_json::Value,
    n: u64,
    bytes: u64,
) {
    let c = &report["counters"];
    for key in [
        "attempted",
        "established",
        "closed",
        "requests",
        "responses",
    ] {
        assert_eq!(c[key], n, "{key}: {report:#}");
    }
    for key in [
        "failed_timeout",
        "failed_refused",
        "closed_reset",
        "closed_timeout",
        "closed_bad_response",
    ] {
        assert_eq!(c[key], 0, "{key}: {report:#}");
    }
    assert_eq!(c["body_bytes"], n * bytes);
    // The port lost nothing either way: no batch refused, no frame past a full ring.
    let link = &report["link"];
    assert_eq!(
        (link["tx_dropped"].as_u64(), link["rx_dropped"].as_u64()),
        (Some(0), Some(0)),
        "{link}"
    );
    let outside = lab
        .dut
        .as_ref()
        .and_then(|d| d.gateways)
        .expect("the NAT's addresses")
        .1;
    let logged = nginx.requests();
    assert_eq!(logged.len() as u64, n, "nginx's log: {}", nginx.errors());
    let want = (outside.to_string(), "200".to_owned(), bytes.to_string());
    assert!(
        logged.iter().all(|l| *l == want),
        "nginx logged other than {want:?}"
    );
    // One conntrack entry a connection: the inside source, translated to the outside address.
    let (translated, table) = translations(lab, &outside.to_string());
    assert_eq!(translated, n, "conntrack:\n{table}");
}

#[test]
fn ten_thousand_connections_through_the_nat_to_nginx_all_add_up() {
    if !root_or_skip("ten_thousand_connections_through_the_nat_to_nginx_all_add_up") {
        return;
    }
    let lab = nat_lab("stn");
    let nginx = Nginx::start(
        &lab.netns,
        &lab.receiver_ip.to_string(),
        &[4096, 1000, 64_000],
    );
    let report = client(&lab, 10_000, 4096, &[]);
    assert_all_through_nat(&lab, &nginx, &report, 10_000, 4096);
    ctrl_c_ends_every_open_connection_and_reports(&lab, &nginx);
    a_ramped_run_keeps_to_its_schedule_and_writes_its_seconds(&lab, &nginx);
    a_mix_takes_its_shares_as_nginx_logs_them(&lab, &nginx);
    // Stateless traffic has no sink to be counted at there: one line says so, and what to use.
    let line = common::linerate_usage_error(&["tx", "-i", &lab.sender, "-n", "10"]);
    assert!(
        line.contains("NAT DUT") && line.contains("tcp client"),
        "{line}"
    );
}

/// `--mix 1k:2,4096x2:1,64k:1` over 400 connections: 200 take one GET of 1,000 bytes, 100
/// two of 4,096 and 100 one of 64,000 — each kind's counts in the report exact, and nginx's
/// log shows as many GETs of each size; the CSV's last second has a row for the run and one
/// for each kind, adding up.
fn a_mix_takes_its_shares_as_nginx_logs_them(lab: &Lab, nginx: &Nginx) {
    let before = nginx.requests().len();
    let dir = tempfile::tempdir().expect("tempdir");
    let csv = dir.path().join("mix.csv");
    let server = format!("{}:80", lab.receiver_ip);
    let args = [
        "-n",
        "400",
        "--mix",
        "1k:2,4096x2:1,64k:1",
        "--csv",
        csv.to_str().unwrap(),
    ];
    let out = inside_client(lab, &server, &args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = json(&stdout);
    // (name, connections, responses, body bytes) of each kind.
    let want = [
        ("1000x1", 200, 200, 200_000),
        ("4096x2", 100, 200, 819_200),
        ("64000x1", 100, 100, 6_400_000),
    ];
    let kinds = report["templates"].as_array().expect("templates");
    assert_eq!(kinds.len(), 3, "{report:#}");
    for (kind, (name, n, responses, bytes)) in kinds.iter().zip(want) {
        let c = &kind["counters"];
        assert_eq!(kind["name"], name, "{kind:#}");
        for (key, v) in [
            ("attempted", n),
            ("established", n),
            ("closed", n),
            ("requests", responses),
            ("responses", responses),
            ("body_bytes", bytes),
        ] {
            assert_eq!(c[key], v, "{name} {key}: {kind:#}");
        }
    }
    assert_eq!(report["counters"]["body_bytes"], 7_419_200, "{report:#}");
    // nginx's own view: as many GETs of each size, all answered whole.
    let logged = &nginx.requests()[before..];
    for (size, count) in [("1000", 200), ("4096", 200), ("64000", 100)] {
        let got = logged
            .iter()
            .filter(|(_, status, bytes)| status == "200" && bytes == size)
            .count();
        assert_eq!(got, count, "GETs of {size} bytes in nginx's log");
    }
    assert_eq!(logged.len(), 500, "nginx's log: {}", nginx.errors());
    // The last second: the run's row, then each kind's, their connections adding up.
    let mut rows = csv::Reader::from_path(&csv).expect("the CSV");
    let header = rows.headers().expect("a header").clone();
    let col = |name: &str| header.iter().position(|h| h == name).expect(name);
    let (kind, attempted) = (col("kind"), col("attempted"));
    let rows: Vec<csv::StringRecord> = rows.records().map(|r| r.expect("a row")).collect();
    let last: Vec<(&str, u64)> = rows[rows.len() - 4..]
        .iter()
        .map(|r| (&r[kind], r[attempted].parse().expect("a count")))
        .collect();
    assert_eq!(
        last,
        [
            ("all", 400),
            ("1000x1", 200),
            ("4096x2", 100),
            ("64000x1", 100)
        ]
    );
}

/// Connections a second rising over 1 s to 400, held 1 s, falling over 1 s: 200 + 400 + 200
/// connections, never more opened by any second than the schedule had made due, every one
/// logged by nginx; the CSV has a row a second and the plot its three panels.
fn a_ramped_run_keeps_to_its_schedule_and_writes_its_seconds(lab: &Lab, nginx: &Nginx) {
    let before = nginx.requests().len() as u64;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (csv, plot) = (dir.path().join("seconds.csv"), dir.path().join("run.svg"));
    let server = format!("{}:80", lab.receiver_ip);
    let out = inside_client(
        lab,
        &server,
        &[
            "--rate",
            "400",
            "--ramp-up",
            "1s",
            "--duration",
            "1s",
            "--ramp-down",
            "1s",
            "--response-bytes",
            "4096",
            "--csv",
            csv.to_str().unwrap(),
            "--plot",
            plot.to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let report = json(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(report["counters"]["closed"], 800, "{report:#}");
    assert_eq!(nginx.requests().len() as u64 - before, 800);
    // The schedule's integral, as the test reads it: what may be open by t seconds.
    let due = |t: f64| -> f64 {
        let r = 400.0;
        match t {
            t if t <= 1.0 => r * t * t / 2.0,
            t if t <= 2.0 => r / 2.0 + r * (t - 1.0),
            t if t <= 3.0 => {
                let tau = t - 2.0;
                r / 2.0 + r + r * (tau - tau * tau / 2.0)
            }
            _ => 800.0,
        }
    };
    let mut rows = csv::Reader::from_path(&csv).expect("the CSV");
    let head = rows.headers().expect("a header").clone();
    let col = |name: &str| head.iter().position(|h| h == name).expect(name);
    let (t, attempted, closed, target) = (
        col("elapsed_s"),
        col("attempted"),
        col("closed"),
        col("target_cps"),
    );
    let rows: Vec<csv::StringRecord> = rows.records().map(|r| r.expect("a row")).collect();
    assert!(rows.len() >= 3, "{rows:?}");
    for row in &rows {
        let at: f64 = row[t].parse().unwrap();
        let opened: f64 = row[attempted].parse().unwrap();
        assert!(
            opened <= due(at).floor() + 1.0,
            "ahead of the schedule: {row:?}"
        );
        let asked: f64 = row[target].parse().unwrap();
        assert!((0.0..=400.0).contains(&asked), "{row:?}");
    }
    let last = rows.last().unwrap();
    assert_eq!(
        (&last[attempted], &last[closed]),
        ("800", "800"),
        "{last:?}"
    );
    // The round trips so far, and every second's goodput: 800 bodies of 4096 bytes in all.
    let p50: f64 = last[col("rtt_p50_us")].parse().unwrap();
    assert!(p50 > 0.0, "{last:?}");
    let bits = over_the_seconds(&rows, t, col("goodput_mbps")) * 1e6;
    let want = 800.0 * 4096.0 * 8.0;
    assert!(
        (bits - want).abs() < want * 0.01,
        "{bits} bits by the seconds, {want} received"
    );
    has_the_three_panels(&plot);
}

/// A rate column of a CSV's rows summed over their seconds: what it counted in all.
fn over_the_seconds(rows: &[csv::StringRecord], t: usize, rate: usize) -> f64 {
    let mut t0 = 0.0;
    let mut sum = 0.0;
    for row in rows {
        let at: f64 = row[t].parse().unwrap();
        sum += row[rate].parse::<f64>().unwrap() * (at - t0);
        t0 = at;
    }
    sum
}

/// A `tcp` plot's three panels.
fn has_the_three_panels(plot: &Path) {
    let svg = std::fs::read_to_string(plot).expect("the plot");
    for panel in [
        "connections a second",
        "connections open",
        "segments sent again",
    ] {
        assert!(svg.contains(panel), "{panel} not in the plot");
    }
}

/// Ctrl-C (SIGINT) in the middle of a run: no new connection is opened, every open one ends
/// (its FIN sent and answered) and the report counts them all, exit 130 — what nginx logged
/// after the first run is exactly what the report says this one got.
fn ctrl_c_ends_every_open_connection_and_reports(lab: &Lab, nginx: &Nginx) {
    let before = nginx.requests().len() as u64;
    let server = format!("{}:80", lab.receiver_ip);
    let child = Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args(["tcp", "client", "-i", &lab.sender, "--src", "100.64.1.0/24"])
        .args(["--gateway", "100.64.0.1/16", "--server", &server])
        .args(["-n", "1000000", "--rate", "2000", "--concurrent", "64"])
        .args(["--response-bytes", "4096", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the client");
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: kill(2) on our own child's pid; it has not been reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let out = child.wait_with_output().expect("the client");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let report = json(&String::from_utf8_lossy(&out.stdout));
    let c = &report["counters"];
    let n = |k: &str| c[k].as_u64().unwrap_or_else(|| panic!("{k}: {report}"));
    assert_eq!(report["stopped"], true, "{report}");
    assert!(
        n("attempted") > 100 && n("attempted") < 1_000_000,
        "{report}"
    );
    assert_eq!(
        n("attempted"),
        n("established") + n("failed_timeout") + n("failed_refused")
    );
    // Every open connection ended cleanly: none left active, none cut.
    assert_eq!(n("closed"), n("established"), "{report}");
    assert_eq!(n("responses"), n("established"), "{report}");
    let logged = nginx.requests().len() as u64 - before;
    assert_eq!(logged, n("responses"), "nginx's log against the report");
}

#[test]
fn every_transfer_completes_through_loss_and_reordering() {
    if !root_or_skip("every_transfer_completes_through_loss_and_reordering") {
        return;
    }
    let mut lab = nat_lab("stl");
    let nginx = Nginx::start(&lab.netns, &lab.receiver_ip.to_string(), &[4096]);
    let bin = Path::new(env!("CARGO_BIN_EXE_linerate"));
    lab.impair(
        &Impairments {
            loss: 1.0,
            delay: Duration::from_millis(1),
            reorder: 10.0,
            ..Default::default()
        },
        bin,
    )
    .expect("impair --loss 1% --delay 1ms --reorder 10%");
    let n = 10_000;
    // The run lasts up to a minute, and a connection conntrack saw end by a reset (CLOSE,
    // seen here under this loss and reordering) leaves its table 10 s after: held as long as
    // a TIME_WAIT, every translation is still there to count at the end.
    in_dut(
        &lab,
        &[
            "sysctl",
            "-qw",
            "net.netfilter.nf_conntrack_tcp_timeout_close=120",
        ],
    );
    // A retransmission lost again backs off (1, 2, 4 … s): the timeout leaves room for a few.
    let report = client(&lab, n, 4096, &["--timeout", "60s"]);
    let dropped = lab.impair_counters().expect("impair counters");
    assert!(dropped.dropped > 0, "the DUT dropped nothing: {dropped:?}");
    assert_all_through_nat(&lab, &nginx, &report, n, 4096);
    // What the loss cost the client: its SYNs, requests and FINs the DUT dropped were sent
    // again (the crate's tests check the count against a decoder of the frames), and its
    // round trips were timed.
    let c = &report["counters"];
    assert!(c["retransmitted"].as_u64().unwrap() > 0, "{report:#}");
    assert!(report["rtt"]["count"].as_u64().unwrap() > n, "{report:#}");
}

/// What curl, in namespace `ns`, gets from `url` (10 s at most; a failure fails the test).
fn curl(ns: &str, url: &str) -> Vec<u8> {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "curl", "-sS", "--max-time", "10", url])
        .output()
        .expect("curl");
    assert!(
        out.status.success(),
        "curl {url}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A bare veth pair between two namespaces: linerate's server on one end, the kernel's curl on
/// the other.
struct Pair {
    name: String,
}

impl Pair {
    fn new() -> Pair {
        Pair::with("stc", "ip -n {b} addr add 10.77.0.2/24 dev {n}b", false)
    }

    /// The kernel's end at 2001:db8:77::2/64 (no duplicate address detection to wait for),
    /// IPv6 off at linerate's end's kernel.
    fn ipv6() -> Pair {
        Pair::with(
            "st6",
            "ip -n {b} -6 addr add 2001:db8:77::2/64 dev {n}b nodad",
            true,
        )
    }

    /// Two namespaces joined by a veth pair, `b_address` (a command, `{b}` and `{n}` in it)
    /// run for the kernel's end.
    fn with(prefix: &str, b_address: &str, ipv6_at_b: bool) -> Pair {
        let name = unique_name(prefix);
        let pair = Pair { name };
        let (a, b) = (pair.ns("a"), pair.ns("b"));
        let address = b_address.replace("{b}", &b).replace("{n}", &pair.name);
        let ends = if ipv6_at_b { "a" } else { "a b" };
        let sh = format!(
            "set -e; ip netns add {a}; ip netns add {b};\
             ip -n {a} link add {n}a type veth peer name {n}b netns {b};\
             for x in {ends}; do ip netns exec {n}-$x sysctl -qw net.ipv6.conf.all.disable_ipv6=1; done;\
             for x in a b; do ip -n {n}-$x link set {n}$x up; done;\
             {address};\
             ip netns exec {b} ethtool -K {n}b tx off tso off gso off >/dev/null",
            n = pair.name
        );
        let out = Command::new("sh").args(["-c", &sh]).output().expect("sh");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        pair
    }

    fn ns(&self, end: &str) -> String {
        format!("{}-{end}", self.name)
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        for end in ["a", "b"] {
            let _ = Command::new("ip")
                .args(["netns", "del", &self.ns(end)])
                .output();
        }
    }
}

#[test]
fn curl_gets_every_byte_from_linerates_server() {
    if !root_or_skip("curl_gets_every_byte_from_linerates_server") {
        return;
    }
    let pair = Pair::new();
    let iface = format!("{}a", pair.name);
    let ip = std::net::Ipv4Addr::new(10, 77, 0, 1).into();
    let server = Emulated::spawn(&iface, &pair.ns("a"), ip, 24, &["-d", "30s"]);
    let sizes = [0usize, 1, 1460, 4096, 100_000];
    for n in sizes {
        let body = curl(&pair.ns("b"), &format!("http://10.77.0.1/{n}"));
        assert_eq!(body, linerate_stateful::http::body(n), "body of /{n}");
    }
    // Keep-alive: curl asks twice on one connection.
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            &pair.ns("b"),
            "curl",
            "-sS",
            "--max-time",
            "10",
            "-o",
            "/dev/null",
            "-o",
            "/dev/null",
            "-w",
            "%{num_connects} ",
        ])
        .args(["http://10.77.0.1/4096", "http://10.77.0.1/4096"])
        .output()
        .expect("curl twice");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "1 0",
        "curl reused the connection"
    );
    let report = server.stop();
    let c = &report["counters"];
    assert_eq!(c["accepted"], sizes.len() as u64 + 1, "{report:#}");
    assert_eq!(c["requests"], sizes.len() as u64 + 2, "{report:#}");
    assert_eq!(c["responses"], c["requests"], "{report:#}");
    let body: usize = sizes.iter().sum::<usize>() + 2 * 4096;
    assert_eq!(c["body_bytes"], body as u64, "{report:#}");
}

/// IPv6 against the kernel both ways over a veth pair: curl -6 gets every byte from linerate's
/// server; linerate's client, 255 addresses of a /120, makes 1,500 connections at 200 a second
/// to nginx, and 2 s in the kernel's neighbour table is flushed: the kernel solicits each
/// client address again, and the client answers for every one of its range (smoltcp itself
/// only for the first). nginx logs each GET once from a client address; the kernel's
/// neighbour table holds every address the client used, with the client's MAC, none failed.
#[test]
fn ipv6_ends_against_the_kernel_both_ways() {
    if !root_or_skip("ipv6_ends_against_the_kernel_both_ways") {
        return;
    }
    let pair = Pair::ipv6();
    let (iface, ns, peer) = (
        format!("{}a", pair.name),
        pair.ns("a"),
        format!("{}b", pair.name),
    );
    let ip = "2001:db8:77::1".parse().unwrap();
    let server = Emulated::spawn(&iface, &ns, ip, 64, &["-d", "30s"]);
    let body = curl(&pair.ns("b"), "http://[2001:db8:77::1]/100000");
    assert_eq!(body, linerate_stateful::http::body(100_000));
    let report = server.stop();
    assert_eq!(report["counters"]["accepted"], 1, "{report:#}");
    assert_eq!(report["counters"]["body_bytes"], 100_000, "{report:#}");

    let nginx = Nginx::start(&pair.ns("b"), "[2001:db8:77::2]", &[4096]);
    let n = 1500u64;
    let client = Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args(["tcp", "client", "-i", &iface, "--netns", &ns])
        .args(["--src", "2001:db8:77:0:1::/120"])
        .args([
            "--gateway",
            "2001:db8:77::2/64",
            "--server",
            "[2001:db8:77::2]:80",
        ])
        .args(["-n", &n.to_string(), "--rate", "200", "--json"])
        .args(["--response-bytes", "4096"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("linerate tcp client");
    std::thread::sleep(Duration::from_secs(2));
    let flushed = Command::new("ip")
        .args(["-n", &pair.ns("b"), "-6", "neigh", "flush", "dev", &peer])
        .status()
        .expect("ip neigh flush");
    assert!(flushed.success());
    let out = client.wait_with_output().expect("the client");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let report = json(&String::from_utf8_lossy(&out.stdout));
    let c = &report["counters"];
    for (key, want) in [
        ("attempted", n),
        ("closed", n),
        ("responses", n),
        ("body_bytes", n * 4096),
    ] {
        assert_eq!(c[key], want, "{key}: {report:#}");
    }
    let logged = nginx.requests();
    assert_eq!(logged.len() as u64, n, "{}", nginx.errors());
    let clients: std::collections::HashSet<&str> =
        logged.iter().map(|(addr, _, _)| addr.as_str()).collect();
    assert_eq!(clients.len(), 255, "every address of the /120 once or more");
    assert!(
        logged.iter().all(
            |(addr, status, bytes)| addr.starts_with("2001:db8:77:0:1::")
                && status == "200"
                && bytes == "4096"
        ),
        "{logged:?}"
    );
    let neigh = Command::new("ip")
        .args(["-n", &pair.ns("b"), "-6", "neigh", "show", "dev", &peer])
        .output()
        .expect("ip neigh");
    let table = String::from_utf8_lossy(&neigh.stdout);
    let ours: Vec<&str> = table
        .lines()
        .filter(|l| l.starts_with("2001:db8:77:0:1::"))
        .collect();
    assert_eq!(ours.len(), 255, "{table}");
    assert!(
        ours.iter()
            .all(|l| l.contains("lladdr 02:6c:72:00:00:01") && !l.contains("FAILED")),
        "{table}"
    );
}

#[test]
fn bad_client_input_is_one_line_and_exit_2() {
    for (args, says) in [
        (&["--src", "100.64.1.1/24"][..], "first address"),
        (
            &["--src", "100.64.1.0/24", "--gateway", "10.0.0.1/16"],
            "not on the network",
        ),
        (
            &["--src", "100.64.1.0/24", "--src-ports", "9-1"],
            "FIRST-LAST",
        ),
        (
            &[
                "--src",
                "100.64.1.0/30",
                "--src-ports",
                "1000-1000",
                "-n",
                "3",
            ],
            "5-tuples",
        ),
        (&["--src", "10.0.0.0/24"], "inside the clients' range"),
        (&["--src", "2001:db8:1::/120"], "not of one family"),
        (
            &["--src", "100.64.1.0/24", "--gateway", "2001:db8::1/64"],
            "not of one family",
        ),
        (
            &["--src", "100.64.1.0/24", "--duration", "10s"],
            "give --rate",
        ),
        (
            &["--src", "100.64.1.0/24", "--rate", "100", "--ramp-up", "0"],
            "no time",
        ),
        (
            &["--src", "100.64.1.0/24", "-n", "5", "--duration", "1s"],
            "cannot be used with",
        ),
        (
            &["--src", "100.64.1.0/24", "--plot", "run.txt"],
            ".svg or .png",
        ),
        (
            // 4,680 bytes a connection toward the clients at least: 2,000,000 a second need
            // 74.88 Gbit/s.
            &[
                "--src",
                "100.64.0.0/16",
                "--rate",
                "2000000",
                "--response-bytes",
                "4096",
                "--link-speed",
                "10G",
            ],
            "need 74.88 Gbit/s, over the link's 10.00 Gbit/s: lower --rate (at most 267094)",
        ),
        (
            &[
                "--src",
                "100.64.1.0/24",
                "--concurrent",
                "1048576",
                "--window",
                "1M",
            ],
            "over the 16384 MiB budget",
        ),
        (
            &["--src", "100.64.1.0/24", "--think", "recorded"],
            "--think recorded waits a replay's own pauses: give --profile FILE too",
        ),
        (&["--src", "100.64.1.0/24", "--think", "later"], "--think"),
        (
            &[
                "--src",
                "100.64.1.0/24",
                "--vlan",
                "100",
                "--inner-vlan",
                "200",
                "--outer-tpid",
                "0x9200",
            ],
            "0x9200: an outer TPID is 0x88a8 (802.1ad), 0x8100 or 0x9100",
        ),
        (
            &[
                "--src",
                "100.64.1.0/24",
                "--vlan",
                "100",
                "--outer-tpid",
                "0x8100",
            ],
            "--inner-vlan",
        ),
    ] {
        let mut all = vec!["tcp", "client", "-i", "nosuch0", "--server", "10.0.0.1:80"];
        all.extend(args);
        let line = common::linerate_usage_error(&all);
        assert!(line.contains(says), "{all:?}: {line}");
    }
    // Both ends in one command: each its own port, core and family alike.
    for (args, says) in [
        (
            &[
                "--server-interface",
                "nosuch0",
                "--server-address",
                "10.0.0.1/24",
            ][..],
            "give the server its own port",
        ),
        (
            &[
                "--server-interface",
                "nosuch1",
                "--server-address",
                "10.0.0.1/24",
                "--cores",
                "1,1",
            ],
            "each need their own core",
        ),
        (
            &[
                "--server-interface",
                "nosuch1",
                "--server-address",
                "2001:db8::2/64",
            ],
            "of different families",
        ),
        (
            &[
                "--server-interface",
                "nosuch1",
                "--server-address",
                "10.0.0.1",
            ],
            "--server-address 10.0.0.1: give ADDR/LEN",
        ),
    ] {
        let mut all = vec![
            "tcp",
            "both",
            "-i",
            "nosuch0",
            "--src",
            "100.64.1.0/24",
            "--gateway",
            "100.64.0.1/16",
            "--server",
            "10.0.0.1:80",
        ];
        all.extend(args);
        let line = common::linerate_usage_error(&all);
        assert!(line.contains(says), "{all:?}: {line}");
    }
    // The server's files are reserved before its port opens, as the client's are; it waits
    // only a replay's own pauses.
    for (args, says) in [
        (["--plot", "served.txt"], ".svg or .png"),
        (["--think", "recorded"], "give --profile FILE too"),
        (["--think", "1s"], "a fixed server delay is not built"),
    ] {
        let mut all = vec!["tcp", "server", "-i", "nosuch0", "--address", "10.0.0.1/24"];
        all.extend(args);
        let line = common::linerate_usage_error(&all);
        assert!(line.contains(says), "{all:?}: {line}");
    }
}

#[test]
fn linerates_client_and_server_through_the_nat_count_alike() {
    if !root_or_skip("linerates_client_and_server_through_the_nat_count_alike") {
        return;
    }
    let lab = nat_lab("sts");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (csv, plot) = (dir.path().join("served.csv"), dir.path().join("served.svg"));
    let server = Emulated::start(
        &lab,
        &[
            "--csv",
            csv.to_str().unwrap(),
            "--plot",
            plot.to_str().unwrap(),
        ],
    );
    let server_ip = server.ip;
    let gateway = linerate_lab::NAT_SERVERS_GATEWAY.to_string();
    let n = 3000u64;
    let report = {
        let out = run_client(&lab, &format!("{server_ip}:80"), n, 4096, &[]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        json(&String::from_utf8_lossy(&out.stdout))
    };
    // The NAT's table right away: a translation a connection, to its address on the servers'
    // network (in TIME_WAIT: the server forgot its own at once, as --time-wait 0 says, and
    // sent nothing more).
    let (translated, table) = translations(&lab, &gateway);
    let served = server.stop();
    assert_both_ends_count(&report, &served, n, n, n * 4096);
    assert_eq!(translated, n, "conntrack:\n{table}");
    // The server's seconds: the last row is its report, and the rows' rates add up to it.
    let mut rows = csv::Reader::from_path(&csv).expect("the server's CSV");
    let head = rows.headers().expect("a header").clone();
    let col = |name: &str| head.iter().position(|h| h == name).expect(name);
    let rows: Vec<csv::StringRecord> = rows.records().map(|r| r.expect("a row")).collect();
    let last = rows.last().expect("a row at the end at least");
    for key in [
        "accepted",
        "closed",
        "responses",
        "body_bytes",
        "retransmitted",
    ] {
        assert_eq!(
            last[col(key)],
            served["counters"][key].to_string(),
            "{key}: {last:?}"
        );
    }
    let t = col("elapsed_s");
    let accepted = over_the_seconds(&rows, t, col("cps"));
    assert!((accepted - n as f64).abs() < 0.01 * n as f64, "{accepted}");
    let bits = over_the_seconds(&rows, t, col("goodput_mbps")) * 1e6;
    let want = (n * 4096 * 8) as f64;
    assert!((bits - want).abs() < 0.01 * want, "{bits} of {want}");
    has_the_three_panels(&plot);
    both_ends_in_one_command_count_alike(&lab, server_ip, &gateway);
}

/// `tcp both` on the same lab: the server on the receiver's port and the client on the
/// sender's, one process, each end on its core; both reports in one JSON, adding up as two
/// commands' do, the DUT's conntrack a translation a connection, each end's CSV its own, and
/// nothing sent again or dropped on a clean NAT.
fn both_ends_in_one_command_count_alike(lab: &Lab, server_ip: std::net::IpAddr, gateway: &str) {
    in_dut(lab, &["conntrack", "-F"]);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (client_csv, server_csv) = (dir.path().join("client.csv"), dir.path().join("server.csv"));
    let (len, n) = (linerate_lab::NAT_SERVERS.1.to_string(), 1000u64);
    let (target, address) = (format!("{server_ip}:80"), format!("{server_ip}/{len}"));
    let mut args = vec![
        "tcp",
        "both",
        "-i",
        &lab.sender,
        "--src",
        "100.64.1.0/24",
        "--gateway",
        "100.64.0.1/16",
        "--server",
        &target,
        "-n",
        "1000",
        "--response-bytes",
        "4096",
        "--server-interface",
        &lab.receiver,
        "--server-netns",
        &lab.netns,
        "--server-address",
        &address,
        "--server-gateway",
        gateway,
        "--server-time-wait",
        "0",
        "--json",
        "--csv",
        client_csv.to_str().unwrap(),
        "--server-csv",
        server_csv.to_str().unwrap(),
    ];
    if std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2) {
        args.extend(["--cores", "0,1"]);
    }
    let out = linerate(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let (translated, table) = translations(lab, gateway);
    let both = json(&String::from_utf8_lossy(&out.stdout));
    let (report, served) = (&both["client"], &both["server"]);
    assert_both_ends_count(report, served, n, n, n * 4096);
    assert_eq!(translated, n, "conntrack:\n{table}");
    for end in [report, served] {
        assert_eq!(end["counters"]["retransmitted"], 0, "{both:#}");
        assert_eq!(end["link"]["rx_dropped"], 0, "{both:#}");
    }
    // Each end's lines and CSV: the last row its own report's counts.
    for (file, end, key, who) in [
        (&client_csv, report, "established", "client "),
        (&server_csv, served, "accepted", "server "),
    ] {
        assert!(
            stderr.lines().any(|l| l.starts_with(who)),
            "no {who}line: {stderr}"
        );
        let mut rows = csv::Reader::from_path(file).expect("a CSV");
        let head = rows.headers().expect("a header").clone();
        let col = head.iter().position(|h| h == key).expect(key);
        let last = rows.records().last().expect("a row").expect("a row");
        assert_eq!(last[col], end["counters"][key].to_string(), "{file:?}");
    }
}

/// IPv6 through the NAT lab's DUT, which routes it as a stateful firewall (no translation):
/// linerate's client, 255 addresses of the inside network, to its server on the servers' IPv6
/// network, 2,000 connections counted alike at both ends; the DUT's conntrack tracks each
/// with the client's own address, and its firewall dropped nothing (no invalid segment, no
/// new connection from outside). Then `lab nat --nat66 --ports 20000-20999`: 500 more, each
/// translated — conntrack's reply side goes to the DUT's own address on a port of the range,
/// and the server counts every one.
#[test]
fn ipv6_connections_through_the_labs_firewall_are_tracked_and_nat66_translates_them() {
    if !root_or_skip(
        "ipv6_connections_through_the_labs_firewall_are_tracked_and_nat66_translates_them",
    ) {
        return;
    }
    let lab = nat_lab("stf");
    let server_ip: std::net::IpAddr = "2001:db8:c6::2".parse().unwrap();
    let server = Emulated::start_at(
        &lab,
        server_ip,
        linerate_lab::NAT6_SERVERS.1,
        linerate_lab::NAT6_SERVERS_GATEWAY.into(),
        &[],
    );
    let client = |n: u64| {
        let out = linerate(&[
            "tcp",
            "client",
            "-i",
            &lab.sender,
            "--src",
            "2001:db8:64:0:1::/120",
            "--gateway",
            "2001:db8:64::1/64",
            "--server",
            "[2001:db8:c6::2]:80",
            "-n",
            &n.to_string(),
            "--response-bytes",
            "4096",
            "--json",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        json(&String::from_utf8_lossy(&out.stdout))
    };
    let tracked = || {
        in_dut(
            &lab,
            &[
                "conntrack",
                "-L",
                "-f",
                "ipv6",
                "-p",
                "tcp",
                "--dport",
                "80",
            ],
        )
    };
    let n = 2000u64;
    let routed = client(n);
    let table = tracked();
    let count = |table: &str, reply_to: &str| {
        table
            .lines()
            .filter(|l| {
                l.contains("src=2001:db8:64:0:1::")
                    && l.contains("dst=2001:db8:c6::2 ")
                    && l.contains(&format!("src=2001:db8:c6::2 dst={reply_to}"))
            })
            .count() as u64
    };
    // Routed: the server answers the client's own address.
    assert_eq!(
        count(&table, "2001:db8:64:0:1::"),
        n,
        "conntrack:\n{}",
        &table[..table.len().min(2000)]
    );
    let firewall = in_dut(&lab, &["nft", "list", "table", "ip6", "linerate_fw6"]);
    assert_eq!(
        firewall.matches("counter packets 0 bytes 0").count(),
        2,
        "{firewall}"
    );
    let translated = 500u64;
    in_dut(&lab, &["conntrack", "-F"]);
    // The guard holds the lab's lock, so it sets the rules (`lab nat --nat66 --ports …`'s way).
    lab.set_nat(&NatRules {
        ports: Some((20000, 20999)),
        limit: None,
        nat66: true,
    })
    .expect("lab nat --nat66 --ports 20000-20999");
    let nat66 = client(translated);
    let table = tracked();
    let served = server.stop();
    // Translated: every reply goes to the DUT's address on the servers' network, on a port of
    // the range; the server took all 2,500 from two kinds of source alike.
    let gateway = linerate_lab::NAT6_SERVERS_GATEWAY.to_string();
    assert_eq!(
        count(&table, &gateway),
        translated,
        "conntrack:\n{}",
        &table[..table.len().min(2000)]
    );
    for line in table
        .lines()
        .filter(|l| l.contains(&format!("dst={gateway} ")))
    {
        let port: u16 = line
            .rsplit("dport=")
            .next()
            .and_then(|p| p.split_whitespace().next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("a reply's port in {line}"));
        assert!((20000..=20999).contains(&port), "{line}");
    }
    assert_eq!(routed["counters"]["closed"], n, "{routed:#}");
    assert_eq!(nat66["counters"]["closed"], translated, "{nat66:#}");
    let both = n + translated;
    assert_eq!(served["counters"]["accepted"], both, "{served:#}");
    assert_eq!(served["counters"]["responses"], both, "{served:#}");
    assert_eq!(served["counters"]["body_bytes"], both * 4096, "{served:#}");
}

/// `linerate tcp server` (on the NAT lab's servers' network, its second address, or where
/// [`Emulated::spawn`] puts it), until [`Emulated::stop`].
struct Emulated {
    child: Child,
    _stderr: std::process::ChildStderr,
    ip: std::net::IpAddr,
}

impl Emulated {
    fn start(lab: &Lab, extra: &[&str]) -> Emulated {
        let (net, len) = linerate_lab::NAT_SERVERS;
        let ip = std::net::Ipv4Addr::from(u32::from(net) + 2);
        let gateway = linerate_lab::NAT_SERVERS_GATEWAY.into();
        Emulated::start_at(lab, ip.into(), len, gateway, extra)
    }

    /// The server at `ip`/`len` behind `gateway` on the receiver's interface.
    fn start_at(
        lab: &Lab,
        ip: std::net::IpAddr,
        len: u8,
        gateway: std::net::IpAddr,
        extra: &[&str],
    ) -> Emulated {
        let gateway = gateway.to_string();
        let mut flags = vec!["--gateway", &gateway, "--time-wait", "0", "-d", "60s"];
        flags.extend(extra);
        Emulated::spawn(&lab.receiver, &lab.netns, ip, len, &flags)
    }

    /// `linerate tcp server` at `ip`/`len` on `iface` in `netns` with `flags`, reporting in
    /// JSON; returns once it listens.
    fn spawn(iface: &str, netns: &str, ip: std::net::IpAddr, len: u8, flags: &[&str]) -> Emulated {
        let address = format!("{ip}/{len}");
        let mut child = Command::new(env!("CARGO_BIN_EXE_linerate"))
            .args(["tcp", "server", "-i", iface, "--netns", netns])
            .args(["--address", &address, "--json"])
            .args(flags)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("linerate tcp server");
        let stderr = common::listening(&mut child);
        Emulated {
            child,
            _stderr: stderr,
            ip,
        }
    }

    /// Stops it (SIGINT) and returns its JSON report.
    fn stop(self) -> serde_json::Value {
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let out = self.child.wait_with_output().expect("server exits");
        json(&String::from_utf8_lossy(&out.stdout))
    }
}

/// The client's and the server's reports agree: `n` connections each way, `turns` requests
/// and responses at each end, `bytes` of body both sent and received.
fn assert_both_ends_count(
    report: &serde_json::Value,
    served: &serde_json::Value,
    n: u64,
    turns: u64,
    bytes: u64,
) {
    let c = &report["counters"];
    for (key, want) in [
        ("attempted", n),
        ("established", n),
        ("closed", n),
        ("requests", turns),
        ("responses", turns),
        ("body_bytes", bytes),
    ] {
        assert_eq!(c[key], want, "{key}: {report:#}");
    }
    let s = &served["counters"];
    for (key, want) in [
        ("accepted", n),
        ("closed", n),
        ("requests", turns),
        ("responses", turns),
        ("body_bytes", bytes),
        ("bad_request", 0),
    ] {
        assert_eq!(s[key], want, "server {key}: {served:#}");
    }
}

/// The NAT held to 100 ports, 150 connections open at once, each two requests 3 s apart (a
/// translation in TIME_WAIT is free again to the kernel's NAT; a live one is not): 100 get a
/// translation, the other 50 SYNs find no port and are dropped — the client counts them failed
/// by its 2 s timeout, nginx logs the 100 × 2 requests, conntrack shows the 100. With any port
/// again, 50 more pass.
#[test]
fn a_nat_held_to_a_hundred_ports_runs_out_exactly() {
    if !root_or_skip("a_nat_held_to_a_hundred_ports_runs_out_exactly") {
        return;
    }
    let lab = nat_lab("stx");
    let nginx = Nginx::start(&lab.netns, &lab.receiver_ip.to_string(), &[1024]);
    // The test holds the lab's lock: the guard sets the ports (`linerate lab nat` does the same
    // through Lab::set_nat).
    lab.set_nat(&NatRules {
        ports: Some((10000, 10099)),
        limit: None,
        nat66: false,
    })
    .expect("lab nat --ports 10000-10099");
    let server = format!("{}:80", lab.receiver_ip);
    let run = |n: u64| {
        let extra = ["--timeout", "2s", "--requests", "2", "--think", "3s"];
        run_client(&lab, &server, n, 1024, &extra)
    };
    hundred_of_150_get_through(&run(150));
    assert_eq!(nginx.requests().len(), 200, "nginx's log");
    let table = in_dut(&lab, &["conntrack", "-L", "-p", "tcp", "--dport", "80"]);
    let held: Vec<&str> = table
        .lines()
        .filter(|l| l.contains("src=100.64.1."))
        .collect();
    assert_eq!(held.len(), 100, "conntrack:\n{table}");
    assert!(
        held.iter().all(|l| l.split_whitespace().any(|w| w
            .strip_prefix("dport=")
            .and_then(|p| p.parse::<u16>().ok())
            .is_some_and(|p| (10000..=10099).contains(&p)))),
        "a translation outside 10000-10099:\n{table}"
    );
    lab.set_nat(&NatRules::default())
        .expect("lab nat --ports any");
    let out = run(50);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(nginx.requests().len(), 300, "nginx's log");
    assert_eq!(lab.nat_limit_drops().expect("nft"), None, "no limit set");
    a_firewall_limit_lets_through_exactly_its_connections(&lab, &nginx, &run);
    back_to_back_runs_on_one_tuple_connect_at_once(&lab);
}

/// Runs of one connection each, back to back, conntrack flushed before each: the NAT gives each
/// run's connection the outside port the run before had, a tuple nginx still holds in
/// TIME-WAIT. Random initial sequence numbers would have nginx take about half of those SYNs
/// for old ones (a second lost to the SYN sent again); the client's TCP timestamps are newer
/// (tcpdump reads one in every SYN and SYN-ACK), so nginx takes each at once.
fn back_to_back_runs_on_one_tuple_connect_at_once(lab: &LabGuard) {
    let dir = tempfile::tempdir().expect("tempdir");
    let pcap = dir.path().join("syns.pcap");
    let filter = ["tcp[tcpflags] & tcp-syn != 0"];
    let tcpdump = Tcpdump::start(&lab.netns, &lab.receiver, &pcap, &filter);
    let server = format!("{}:80", lab.receiver_ip);
    let runs = 6;
    for _ in 0..runs {
        in_dut(lab, &["conntrack", "-F"]);
        let out = run_client(lab, &server, 1, 1024, &["--timeout", "5s"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}");
        let report = json(&stdout);
        assert_eq!(report["counters"]["retransmitted"], 0, "{report:#}");
    }
    tcpdump.stop();
    let frames = common::tcpdump(&pcap);
    let source = |f: &String| -> Option<String> {
        let head = &f[..f.find(": Flags [S")?];
        Some(head.rsplit_once(" > ")?.0.rsplit(' ').next()?.to_owned())
    };
    let syns: Vec<&String> = frames.iter().filter(|f| f.contains("Flags [S],")).collect();
    let answers = frames.iter().filter(|f| f.contains("Flags [S.],")).count();
    assert_eq!((syns.len(), answers), (runs, runs), "{frames:#?}");
    assert!(frames.iter().all(|f| f.contains("TS val")), "{frames:#?}");
    let tuples: std::collections::HashSet<String> = syns
        .iter()
        .map(|f| source(f).unwrap_or_else(|| panic!("no source in {f}")))
        .collect();
    assert_eq!(tuples.len(), 1, "one outside source each time: {tuples:?}");
}

/// A run of 150 connections held open, where the DUT lets 100 through: exit 1 with one line
/// saying 50 did not end cleanly, 100 established and closed, 50 failed by the timeout.
fn hundred_of_150_get_through(out: &std::process::Output) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stderr}{stdout}");
    assert!(
        stderr.contains("50 of 150 connections did not end cleanly"),
        "{stderr}{stdout}"
    );
    let report = json(&stdout);
    let c = &report["counters"];
    assert_eq!(
        (c["established"].as_u64(), c["closed"].as_u64()),
        (Some(100), Some(100)),
        "{report:#}"
    );
    assert_eq!(c["failed_timeout"], 50, "{report:#}");
}

/// The NAT as a firewall with a session limit of 100 (`lab nat --limit 100`): 150 connections
/// held open at once, 100 get through and complete both requests, the other 50 SYNs are
/// dropped at the limit (its rule's counter) and time out; conntrack holds the 100 only.
fn a_firewall_limit_lets_through_exactly_its_connections(
    lab: &LabGuard,
    nginx: &Nginx,
    run: &dyn Fn(u64) -> std::process::Output,
) {
    in_dut(lab, &["conntrack", "-F"]);
    // The guard holds the lab's lock, so it sets the limit (`lab nat --limit 100`'s way).
    lab.set_nat(&NatRules {
        ports: None,
        limit: Some(100),
        nat66: false,
    })
    .expect("lab nat --limit 100");
    let before = nginx.requests().len();
    hundred_of_150_get_through(&run(150));
    assert_eq!(nginx.requests().len() - before, 200, "nginx's log");
    let dropped = lab.nat_limit_drops().expect("nft").expect("a limit set");
    assert!(dropped >= 50, "the limit's rule dropped {dropped} SYNs");
    let table = in_dut(lab, &["conntrack", "-L", "-p", "tcp", "--dport", "80"]);
    let held = table
        .lines()
        .filter(|l| l.contains("src=100.64.1."))
        .count();
    assert_eq!(held, 100, "conntrack:\n{table}");
    let line = common::linerate_usage_error(&["lab", "nat", "--name", &lab.name, "--limit", "0"]);
    assert!(line.contains("--limit 0"), "{line}");
}

#[test]
fn lab_nat_refuses_a_lab_without_the_nat() {
    if !root_or_skip("lab_nat_refuses_a_lab_without_the_nat") {
        return;
    }
    let lab = common::lab("stn", 1);
    let err = lab
        .set_nat(&NatRules {
            ports: Some((1, 2)),
            limit: None,
            nat66: false,
        })
        .unwrap_err();
    assert!(
        matches!(err, linerate_lab::LabError::NotNat { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("--dut nat"), "{err}");
    let line = common::linerate_usage_error(&["lab", "nat", "--name", "nosuch", "--ports", "1-2"]);
    assert!(line.contains("no lab named nosuch"), "{line}");
    let line = common::linerate_usage_error(&["lab", "nat", "--name", &lab.name, "--ports", "9-1"]);
    assert!(line.contains("FIRST-LAST"), "{line}");
}

/// tcpdump writing what `iface` in `netns` sees (matching `filter`) to a pcap file.
struct Tcpdump {
    child: Child,
    /// Its stderr, held open: it prints its counts there as it ends.
    stderr: std::io::BufReader<std::process::ChildStderr>,
}

impl Tcpdump {
    /// Starts it and returns once it says "listening on" (its socket is bound).
    fn start(netns: &str, iface: &str, pcap: &Path, filter: &[&str]) -> Tcpdump {
        let mut child = Command::new("ip")
            .args(["netns", "exec", netns, "tcpdump", "-i", iface])
            // A 32 MiB buffer: a loaded machine's tcpdump falls behind a run's bursts, and
            // the kernel drops what its buffer has no room for.
            .args(["-U", "--immediate-mode", "-B", "32768", "-s", "0", "-w"])
            .arg(pcap)
            .args(filter)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("tcpdump (scripts/setup.sh installs it)");
        let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        std::io::BufRead::read_line(&mut err, &mut line).expect("tcpdump's stderr");
        assert!(line.contains("listening on"), "tcpdump: {line}");
        Tcpdump { child, stderr: err }
    }

    /// Stops it (SIGINT, 300 ms on for the last frames) and waits until its file is whole;
    /// the frames the kernel dropped for it, as it says at its end.
    fn stop(mut self) -> u64 {
        std::thread::sleep(Duration::from_millis(300));
        let pid = self.child.id() as i32;
        // SAFETY: kill(2) on our own child's pid; it has not been reaped.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
        self.child.wait().expect("tcpdump");
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut self.stderr, &mut rest);
        rest.lines()
            .find(|l| l.contains("dropped by kernel"))
            .and_then(|l| l.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    }
}

/// A real session captured by tcpdump (curl fetching 4096 bytes from nginx over a veth pair)
/// is the profile: linerate's client and server replay it through the NAT lab, every byte of
/// both sides checked, the counts exact at both ends; the recording's server side ends in the
/// 4096 body bytes nginx sent; and the same profile against nginx behind the NAT (lengths
/// checked: its answers carry a date) is logged by nginx once a connection.
#[test]
fn a_captured_session_replays_through_the_nat_both_ends_and_against_nginx() {
    if !root_or_skip("a_captured_session_replays_through_the_nat_both_ends_and_against_nginx") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let pcap = dir.path().join("session.pcap");
    {
        let pair = Pair::new();
        let (a, b) = (pair.ns("a"), pair.ns("b"));
        let sh = format!(
            "ip -n {a} addr add 10.77.0.1/24 dev {n}a && ip netns exec {a} ethtool -K {n}a tx off tso off gso off >/dev/null",
            n = pair.name
        );
        let out = Command::new("sh").args(["-c", &sh]).output().expect("sh");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let _nginx = Nginx::start(&a, "10.77.0.1", &[4096]);
        let tcpdump = Tcpdump::start(&b, &format!("{}b", pair.name), &pcap, &["tcp port 80"]);
        let body = curl(&b, "http://10.77.0.1/4096");
        assert_eq!(body, linerate_stateful::http::body(4096));
        tcpdump.stop();
    }
    let recording = linerate_stateful::Recording::read(&pcap).expect("the capture");
    assert_eq!(recording.turns.len(), 2, "{recording:?}");
    assert!(
        recording.turns[0]
            .bytes
            .starts_with(b"GET /4096 HTTP/1.1\r\n")
    );
    let answer = &recording.turns[1].bytes;
    assert!(answer.starts_with(b"HTTP/1.1 200 OK\r\n"));
    assert!(answer.ends_with(&linerate_stateful::http::body(4096)));
    let (to_server, to_client) = recording.bytes();

    let lab = nat_lab("stp");
    let profile = pcap.to_str().unwrap();
    let server = Emulated::start(&lab, &["--profile", profile]);
    let server_ip = server.ip;
    let client = |server: &str, n: u64, extra: &[&str]| {
        let n = n.to_string();
        let mut args = vec!["-n", &n, "--profile", profile, "--time-wait", "0"];
        args.extend(extra);
        let out = inside_client(&lab, server, &args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}\n{stdout}",
            String::from_utf8_lossy(&out.stderr)
        );
        json(&stdout)
    };
    let n = 500u64;
    let report = client(&format!("{server_ip}:80"), n, &[]);
    let served = server.stop();
    assert_both_ends_count(&report, &served, n, n, n * to_client);
    assert!(to_server > 0);

    // Against nginx behind the NAT: lengths checked, each replayed GET logged once; the
    // client waits the capture's own pause before its request (curl's, after the handshake).
    let nginx = Nginx::start(&lab.netns, &lab.receiver_ip.to_string(), &[4096]);
    let report = client(
        &format!("{}:80", lab.receiver_ip),
        200,
        &["--profile-check", "lengths", "--think", "recorded"],
    );
    assert_eq!(report["counters"]["closed"], 200, "{report:#}");
    let logged = nginx.requests();
    assert_eq!(logged.len(), 200, "nginx's log: {}", nginx.errors());
    assert!(
        logged
            .iter()
            .all(|(_, status, bytes)| status == "200" && bytes == "4096")
    );
    // A profile that cannot be read is one line naming it, before anything is sent.
    let line = common::linerate_usage_error(&[
        "tcp",
        "client",
        "-i",
        "nosuch0",
        "--server",
        "10.0.0.1:80",
        "--src",
        "100.64.1.0/24",
        "--profile",
        "/nonexistent.pcap",
    ]);
    assert!(line.contains("/nonexistent.pcap"), "{line}");
}

/// VLANs at both ends over a bare veth pair (this kernel has no 8021q to give a server of its
/// own a VLAN): linerate's client and server on VLAN 100 make 300 connections counted alike at
/// both ends, and every frame tcpdump sees on the wire is tagged 100 — at least every frame the
/// client says it sent and took. A server on VLAN 200, and an untagged one, see none of the
/// client's frames: its SYNs go unanswered.
#[test]
fn both_ends_on_a_vlan_tag_every_frame_and_see_only_their_own() {
    if !root_or_skip("both_ends_on_a_vlan_tag_every_frame_and_see_only_their_own") {
        return;
    }
    ends_on_vlans(
        "stv",
        &["--vlan", "100"],
        &[
            "ethertype 802.1Q (0x8100), length",
            ": vlan 100, p 0, ethertype",
        ],
        &[&["--vlan", "200"], &[]],
    );
}

/// The same on stacked VLANs (QinQ): both ends on 802.1ad 100 with 802.1Q 200 inside, every
/// frame tcpdump sees carries both tags; servers on the outer tag alone, on another inner one,
/// and on the inner one alone answer none.
#[test]
fn both_ends_on_stacked_vlans_tag_every_frame_twice_and_see_only_their_own() {
    if !root_or_skip("both_ends_on_stacked_vlans_tag_every_frame_twice_and_see_only_their_own") {
        return;
    }
    ends_on_vlans(
        "stq",
        &["--vlan", "100", "--inner-vlan", "200"],
        &[
            "ethertype 802.1Q-QinQ (0x88a8), length",
            ": vlan 100, p 0, ethertype 802.1Q (0x8100), vlan 200, p 0, ethertype",
        ],
        &[
            &["--vlan", "100"],
            &["--vlan", "100", "--inner-vlan", "201"],
            &["--vlan", "200"],
        ],
    );
}

/// Stacked VLANs under the outer TPIDs older switches use: 0x8100 outside (the kernel takes
/// that tag off and says its TPID) and 0x9100 (which it leaves in the bytes). Every frame
/// carries both tags as tcpdump decodes them; a server on the same VLANs under 802.1ad's
/// 0x88a8, or under the other TPID, answers none.
#[test]
fn stacked_vlans_under_an_outer_tpid_of_0x8100_or_0x9100() {
    if !root_or_skip("stacked_vlans_under_an_outer_tpid_of_0x8100_or_0x9100") {
        return;
    }
    let vlans = ["--vlan", "100", "--inner-vlan", "200"];
    let under = |tpid: &'static str| -> Vec<&'static str> {
        let mut flags = vlans.to_vec();
        flags.extend(["--outer-tpid", tpid]);
        flags
    };
    let (t8100, t9100) = (under("0x8100"), under("0x9100"));
    ends_on_vlans(
        "sto",
        &t8100,
        &[
            "ethertype 802.1Q (0x8100), length",
            ": vlan 100, p 0, ethertype 802.1Q (0x8100), vlan 200, p 0, ethertype",
        ],
        &[&vlans, &t9100],
    );
    ends_on_vlans(
        "stn",
        &t9100,
        &[
            "ethertype 802.1Q-9100 (0x9100), length",
            ": vlan 100, p 0, ethertype 802.1Q (0x8100), vlan 200, p 0, ethertype",
        ],
        &[&vlans, &t8100],
    );
}

/// Both ends of a veth pair with `tags`: 300 connections counted alike, every frame tcpdump
/// decodes carries what `decoded` says; a server with each of `others` answers none.
fn ends_on_vlans(prefix: &str, tags: &[&str], decoded: &[&str], others: &[&[&str]]) {
    let pair = Pair::with(prefix, "true", false);
    let (a, b) = (pair.ns("a"), pair.ns("b"));
    let (iface_a, iface_b) = (format!("{}a", pair.name), format!("{}b", pair.name));
    let ip = std::net::Ipv4Addr::new(10, 77, 0, 1).into();
    let client = |n: u64, timeout: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_linerate"))
            .args(["tcp", "client", "-i", &iface_b, "--netns", &b])
            .args(["--src", "10.77.0.128/25", "--gateway", "10.77.0.1/24"])
            .args(["--server", "10.77.0.1:80", "--json"])
            .args(tags)
            .args([
                "-n",
                &n.to_string(),
                "--timeout",
                timeout,
                "--time-wait",
                "0",
            ])
            .output()
            .expect("linerate tcp client");
        // A run with a connection that did not end cleanly exits 1, and still reports.
        let clean = out.status.success();
        (clean, json(&String::from_utf8_lossy(&out.stdout)))
    };
    let pcap = tempfile::NamedTempFile::new().unwrap();
    let tcpdump = Tcpdump::start(&b, &iface_b, pcap.path(), &[]);

    let mut flags = vec!["-d", "30s"];
    flags.extend(tags);
    let server = Emulated::spawn(&iface_a, &a, ip, 24, &flags);
    let n = 300u64;
    let (clean, report) = client(n, "5s");
    let served = server.stop();
    assert!(clean, "{report:#}");
    assert_both_ends_count(&report, &served, n, n, n * 1024);
    let dropped = tcpdump.stop();
    let out = Command::new("tcpdump")
        .args(["-r"])
        .arg(pcap.path())
        .args(["-nn", "-e"])
        .output()
        .expect("tcpdump -r");
    let text = String::from_utf8_lossy(&out.stdout);
    let frames: Vec<&str> = text.lines().collect();
    let link = &report["link"];
    let counted = link["tx_frames"].as_u64().unwrap() + link["rx_frames"].as_u64().unwrap();
    assert!(
        frames.len() as u64 + dropped >= counted && counted > 6 * n,
        "{} frames captured ({dropped} dropped by the kernel for tcpdump), {counted} counted by the client",
        frames.len()
    );
    let untagged: Vec<&&str> = frames
        .iter()
        .filter(|l| !decoded.iter().all(|d| l.contains(d)))
        .collect();
    assert!(
        untagged.is_empty(),
        "{} of {} frames not as {decoded:?}, first {:?}",
        untagged.len(),
        frames.len(),
        &untagged[..untagged.len().min(3)]
    );
    assert!(frames.iter().any(|l| l.contains("ARP")) && frames.iter().any(|l| l.contains("HTTP")));

    for other in others {
        let mut flags = vec!["-d", "30s"];
        flags.extend(*other);
        let server = Emulated::spawn(&iface_a, &a, ip, 24, &flags);
        let (clean, report) = client(2, "2s");
        let served = server.stop();
        assert!(!clean, "{other:?}: {report:#}");
        assert_eq!(
            report["counters"]["failed_timeout"], 2,
            "{other:?}: {report:#}"
        );
        assert_eq!(served["counters"]["accepted"], 0, "{other:?}: {served:#}");
    }
}
