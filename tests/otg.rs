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

#[test]
fn snappi_drives_linerate_serve_on_a_lab() {
    if !root_or_skip("linerate serve on a lab") {
        return;
    }
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python");
    if !python.exists() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "no virtualenv at {}: scripts/setup.sh makes it",
            python.display()
        );
        eprintln!("SKIPPED: no {} (run scripts/setup.sh)", python.display());
        return;
    }
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
    let big = "x".repeat(5000);
    let (code, _) = http(
        &url,
        &format!(
            "POST /config HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{big}",
            big.len()
        ),
    );
    assert_eq!(code, 413);
    let (code, body) = http(
        &url,
        &format!(
            "PATCH /config HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {token}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
        ),
    );
    assert_eq!(code, 405, "{body}");
    assert!(body.contains("update_config"), "{body}");
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
