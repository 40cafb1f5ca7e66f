//! The receive side on a real lab (root): the receive program takes the lab's receive end for a
//! run and gives it back, `linerate rx` counts what arrives, and bad input.
#![cfg(target_os = "linux")]

mod common;

use std::time::{Duration, Instant};

use common::{linerate, linerate_usage_error, root_or_skip};
use linerate_rx::{Receiver, RxConfig};
use linerate_xdp::PinnedSink;

/// Polls `read` until it returns `want` or two seconds pass; returns the last value.
fn settle(want: u64, mut read: impl FnMut() -> u64) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let got = read();
        if got == want || Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends `n` broadcast frames of 60 bytes with no signature on `iface`, with trafgen.
fn unsigned_frames(iface: &str, n: u32) {
    trafgen(
        iface,
        n,
        b"{ fill(0xff, 6), 0x02, 0, 0, 0, 0, 1, 0x88, 0xb5, fill(0, 46) }",
    );
}

/// Sends with trafgen: `n` frames of `config` (trafgen's packet syntax) on `iface`.
/// Waits until `iface` has sent at least `frames` more than when called (the kernel's count).
fn wait_until_sent(iface: &str, frames: u64) {
    let path = format!("/sys/class/net/{iface}/statistics/tx_packets");
    let sent = || -> u64 {
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{path}: {e}"))
            .trim()
            .parse()
            .unwrap()
    };
    let base = sent();
    let deadline = Instant::now() + Duration::from_secs(30);
    while sent() < base + frames {
        assert!(Instant::now() < deadline, "{iface} sent nothing for 30 s");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn trafgen(iface: &str, n: u32, config: &[u8]) {
    let out = std::process::Command::new("trafgen")
        .args(["-o", iface, "-n", &n.to_string(), "-q", "-c", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write as _;
            c.stdin.take().expect("stdin").write_all(config)?;
            c.wait_with_output()
        })
        .expect("run trafgen (scripts/setup.sh installs netsniff-ng)");
    assert!(out.status.success(), "trafgen: {out:?}");
}

#[test]
fn the_receiver_borrows_the_labs_receive_end_and_gives_it_back() {
    if !root_or_skip("receive side on a lab") {
        return;
    }
    let lab = common::lab("rxs", 1);
    let sink = PinnedSink::open(&lab.pin_dir()).unwrap();
    let sink_packets = || sink.counters().unwrap().packets;
    let before = sink_packets();
    {
        let rx = Receiver::swap_into(&lab.pin_dir(), RxConfig::default()).unwrap();
        // A second receiver is refused, and so is a run that would count at the absent sink.
        assert!(matches!(
            Receiver::swap_into(&lab.pin_dir(), RxConfig::default()),
            Err(linerate_rx::RxError::Xdp(
                linerate_xdp::XdpError::ReceiveEndBusy { .. }
            ))
        ));
        let err = linerate_usage_error(&["tx", "-i", &lab.sender, "-n", "100", "--cores", "0"]);
        assert!(err.contains("in use by another receiver"), "{err}");
        // Frames without a signature (trafgen's): the receiver counts them as other, the sink
        // sees nothing.
        unsigned_frames(&lab.sender, 100);
        let other = settle(100, || rx.read().unwrap().global.other_frames);
        assert_eq!(other, 100);
        assert!(rx.read().unwrap().flows.is_empty());
        assert_eq!(sink_packets(), before);
    }
    // The sink is back and counts again.
    common::linerate_ok(&["tx", "-i", &lab.sender, "-n", "100", "--cores", "0"]);
    assert_eq!(settle(before + 100, sink_packets), before + 100);
}

#[test]
fn rx_refuses_bad_tables_and_unknown_interfaces_with_one_line() {
    for (args, says) in [
        (
            &["rx", "-i", "lo", "--rx-flows", "0", "-d", "1s"][..],
            "flow table of 0 flows",
        ),
        (
            &["rx", "-i", "lo", "--rx-hist-flows", "5000", "-d", "1s"][..],
            "latency histograms for 5000 flows",
        ),
    ] {
        let err = linerate_usage_error(args);
        assert!(err.contains(says), "{err}");
    }
    if !root_or_skip("rx on an unknown interface") {
        return;
    }
    let err = linerate_usage_error(&["rx", "-i", "lrnosuch0", "-d", "1s"]);
    assert!(err.contains("lrnosuch0"), "{err}");
}

/// The signature as the pcap holds it, decoded here by hand (big-endian fields from the tail)
/// with the L4 checksum checked by etherparse: an independent reading of the trailer.
#[test]
fn signed_frames_on_the_wire_carry_flow_sequence_time_and_valid_checksums() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("signed.pcap");
    common::linerate_ok(&[
        "tx",
        "--pcap",
        pcap.to_str().unwrap(),
        "-n",
        "1000",
        "--signature",
        "--size-mode",
        "inc:64-80",
        "--vary",
        "src-port:inc:1000-1006",
    ]);
    let mut reader = pcap_file::pcap::PcapReader::new(std::fs::File::open(&pcap).unwrap()).unwrap();
    let mut seqs = Vec::new();
    let mut last_ts = 0u64;
    while let Some(packet) = reader.next_packet() {
        let data = packet.unwrap().data.into_owned();
        let t = &data[data.len() - 18..];
        let be =
            |r: std::ops::Range<usize>| t[r].iter().fold(0u64, |a, &b| (a << 8) | u64::from(b));
        assert_eq!(be(14..18), 0x4c52_7367, "magic");
        assert_eq!(be(10..12), 0, "flow");
        seqs.push(be(6..10));
        let ts = be(0..6);
        assert!(ts >= last_ts, "transmit stamps go forward");
        last_ts = ts;
        let p = etherparse::SlicedPacket::from_ethernet(&data).unwrap();
        let (Some(etherparse::NetSlice::Ipv4(ip)), Some(etherparse::TransportSlice::Udp(u))) =
            (p.net, p.transport)
        else {
            panic!("IPv4/UDP");
        };
        let h = u.to_header();
        assert_eq!(
            h.calc_checksum_ipv4(&ip.header().to_header(), u.payload())
                .unwrap(),
            h.checksum,
            "UDP checksum of frame {}",
            seqs.len() - 1
        );
    }
    assert_eq!(seqs, (0..1000).collect::<Vec<u64>>());
    let err = linerate_usage_error(&[
        "tx",
        "--null",
        "-n",
        "1",
        "--signature",
        "--ipv6",
        "--size",
        "70",
    ]);
    assert!(err.contains("at least 84 B"), "{err}");
}

fn three_flows(dir: &std::path::Path) -> std::path::PathBuf {
    let file = dir.join("three.toml");
    std::fs::write(
        &file,
        r#"
mode = "interleaved"
[[stream]]
name = "fast"
rate = "20k"
count = 10000
src-port = 1001
[[stream]]
name = "mid"
rate = "10k"
count = 5000
src-port = 1002
[[stream]]
name = "slow"
rate = "5k"
count = 2500
src-port = 1003
"#,
    )
    .unwrap();
    file
}

fn flows(json: &serde_json::Value) -> Vec<serde_json::Value> {
    json["rx"]["flows"].as_array().expect("rx flows").clone()
}

#[test]
fn three_flows_arrive_whole_and_in_order_at_the_labs_receive_end() {
    if !root_or_skip("tx --rx on a lab") {
        return;
    }
    let lab = common::lab("rx3", 1);
    let dir = tempfile::tempdir().unwrap();
    let file = three_flows(dir.path());
    let out = common::json(&common::linerate_ok(&[
        "tx",
        "-i",
        &lab.sender,
        "--stream",
        file.to_str().unwrap(),
        "--rx",
        "--json",
        "--cores",
        "0",
    ]));
    let flows = flows(&out);
    assert_eq!(flows.len(), 3);
    for (f, (name, n)) in flows
        .iter()
        .zip([("fast", 10_000), ("mid", 5_000), ("slow", 2_500)])
    {
        assert_eq!(f["name"], name);
        assert_eq!(f["tx_frames"], n, "{f}");
        assert_eq!(f["rx_frames"], n, "{f}");
        assert_eq!(f["lost"], 0, "{f}");
        assert_eq!(f["late"], 0, "{f}");
        assert_eq!(f["duplicates"], 0, "{f}");
        let lat = &f["latency"];
        assert!(lat["min"].as_u64().unwrap() > 0, "{f}");
        assert!(lat["p99"].as_u64().is_some(), "{f}");
    }
    assert_eq!(out["rx"]["other"]["other_frames"], 0);
    // The sink line comes from the receiver this run, and agrees.
    assert_eq!(out["sink"]["packets"], 17_500);
    // The lab's sink is back afterwards.
    let sink = PinnedSink::open(&lab.pin_dir()).unwrap();
    let before = sink.counters().unwrap().packets;
    common::linerate_ok(&["tx", "-i", &lab.sender, "-n", "100", "--cores", "0"]);
    assert_eq!(
        settle(before + 100, || sink.counters().unwrap().packets),
        before + 100
    );
}

/// The live backend stamps in its program: the same known answer as AF_XDP's. Live sends
/// interleaved streams as their merged cycle, which needs endless lanes: the file's three rates
/// without counts, and `-n` the frames of 2500 of the cycle's 200 µs periods (4 + 2 + 1 frames),
/// so each stream sends what the AF_XDP run's counts ask. With two workers on a two-queue lab
/// each flow's sequence is split between them (w, w+2, …) and arrives on two CPUs.
#[test]
fn three_flows_stamped_by_the_live_program_arrive_whole_and_in_order() {
    if !root_or_skip("tx --backend live --rx on a lab") {
        return;
    }
    if !common::live_frames_or_skip(
        "three_flows_stamped_by_the_live_program_arrive_whole_and_in_order",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("three-endless.toml");
    let text = std::fs::read_to_string(three_flows(dir.path())).unwrap();
    let endless: String = text
        .lines()
        .filter(|l| !l.starts_with("count"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&file, endless).unwrap();
    for cores in ["0", "0,1"] {
        let lab = common::lab("rxv", 2);
        let out = common::json(&common::linerate_ok(&[
            "tx",
            "-i",
            &lab.sender,
            "--backend",
            "live",
            "--stream",
            file.to_str().unwrap(),
            "-n",
            "17500",
            "--rx",
            "--json",
            "--cores",
            cores,
        ]));
        let flows = flows(&out);
        assert_eq!(flows.len(), 3, "{out}");
        for (f, (name, n)) in flows
            .iter()
            .zip([("fast", 10_000), ("mid", 5_000), ("slow", 2_500)])
        {
            assert_eq!(f["name"], name);
            assert_eq!(f["tx_frames"], n, "cores {cores}: {f}");
            assert_eq!(f["rx_frames"], n, "cores {cores}: {f}");
            assert_eq!(f["lost"], 0, "cores {cores}: {f}");
            assert_eq!(f["late"], 0, "cores {cores}: {f}");
            assert_eq!(f["duplicates"], 0, "cores {cores}: {f}");
            assert!(f["latency"]["min"].as_u64().unwrap() > 0, "{f}");
        }
        assert_eq!(out["rx"]["other"]["other_frames"], 0);
        assert_eq!(out["sink"]["packets"], 17_500);
    }
}

/// The live program stamps a bulk of 16 frames with one clock read: the receiver times one frame
/// of each stamp, or all of them with `--rx-time-every-frame`, and counts every frame either way.
#[test]
fn the_receiver_times_one_frame_a_stamp_or_every_frame_when_asked() {
    if !root_or_skip("tx --backend live --rx on a lab") {
        return;
    }
    if !common::live_frames_or_skip(
        "the_receiver_times_one_frame_a_stamp_or_every_frame_when_asked",
    ) {
        return;
    }
    let lab = common::lab("rxt", 1);
    let run = |every: bool| {
        let mut args = vec![
            "tx",
            "-i",
            &lab.sender,
            "--backend",
            "live",
            "-n",
            "3200",
            "--rx",
            "--json",
            "--cores",
            "0",
        ];
        if every {
            args.push("--rx-time-every-frame");
        }
        let out = common::json(&common::linerate_ok(&args));
        let flows = flows(&out);
        assert_eq!(flows.len(), 1, "{out}");
        let f = &flows[0];
        assert_eq!(
            (f["rx_frames"].as_u64(), f["lost"].as_u64()),
            (Some(3200), Some(0)),
            "{f}"
        );
        f["latency"]["timed"]
            .as_u64()
            .unwrap_or_else(|| panic!("no timed count: {f}"))
    };
    let timed = run(false);
    // 200 bulks of 16 at least (a call's first frame starts a bulk afresh), never every frame.
    assert!((200..3200).contains(&timed), "timed {timed} of 3200");
    assert_eq!(run(true), 3200);
}

/// `tx --rx`'s status line on stderr carries the receiver's rate and loss so far, while stdout
/// holds nothing but the JSON; `-q` leaves stderr empty.
#[test]
fn the_status_line_shows_the_receiver_and_json_and_quiet_runs_stay_clean() {
    if !root_or_skip("tx --rx status line on a lab") {
        return;
    }
    let lab = common::lab("rxq", 1);
    let args = [
        "tx",
        "-i",
        &lab.sender,
        "--rx",
        "--rate",
        "20k",
        "-d",
        "1500ms",
        "--json",
        "--cores",
        "0",
    ];
    let out = linerate(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let json = common::json(&String::from_utf8_lossy(&out.stdout));
    assert!(
        json["rx"]["flows"][0]["rx_frames"].as_u64() > Some(0),
        "{json}"
    );
    let ticks: Vec<&str> = stderr.lines().filter(|l| l.contains(" Mpps ")).collect();
    assert!(!ticks.is_empty(), "no status line: {stderr}");
    for t in ticks {
        assert!(t.contains("  rx ") && t.contains("lost so far "), "{t}");
    }
    let quiet = linerate(&[&args[..], &["-q"]].concat());
    assert!(quiet.status.success());
    assert_eq!(
        String::from_utf8_lossy(&quiet.stderr),
        "",
        "-q prints nothing"
    );
    common::json(&String::from_utf8_lossy(&quiet.stdout));
}

/// `linerate rx -i IFACE --netns NETNS -d DURATION --json` started and waited for until its
/// program is attached: until then, frames would go uncounted.
fn lone_rx(iface: &str, netns: &str, duration: &str) -> std::process::Child {
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args([
            "rx", "-i", iface, "--netns", netns, "-d", duration, "--json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(3);
    while !common::xdp_attached(iface, Some(netns)) {
        assert!(Instant::now() < deadline, "rx never attached");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

#[test]
fn a_lone_receiver_counts_flows_and_stray_frames_apart() {
    if !root_or_skip("linerate rx on a veth pair") {
        return;
    }
    let pair = common::VethPair::new(&linerate_lab::unique_name("rxl"));
    let netns = pair.name.clone();
    let b = pair.b();
    let child = lone_rx(&b, &netns, "4s");
    let mac = pair.b_mac();
    let a = pair.a();
    common::linerate_ok(&[
        "tx",
        "-i",
        &a,
        "--dst-mac",
        &mac,
        "-n",
        "10000",
        "--rate",
        "50k",
        "--signature",
        "--cores",
        "0",
    ]);
    common::linerate_ok(&[
        "tx",
        "-i",
        &a,
        "--dst-mac",
        &mac,
        "-n",
        "500",
        "--cores",
        "0",
    ]);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = common::json(&String::from_utf8_lossy(&out.stdout));
    let f = &json["flows"][0];
    assert_eq!(f["rx_frames"], 10_000, "{json}");
    assert_eq!(f["lost"], 0, "{json}");
    assert_eq!(json["totals"]["global"]["other_frames"], 500, "{json}");
}

/// `tx --rx` through the DUT lab: each impairment's known answer in the per-flow report, the
/// loss and duplicates exactly as the impairment program counted them.
#[test]
fn the_flow_report_tells_a_duts_loss_duplicates_and_delay() {
    if !root_or_skip("tx --rx through a DUT") {
        return;
    }
    use linerate_lab::{DutKind, Impairments, LabConfig, LabGuard};
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_linerate"));
    let mut lab = LabGuard::up_with_dut(
        &LabConfig {
            name: linerate_lab::unique_name("rxd"),
            queues: 1,
        },
        Some(DutKind::Router),
    )
    .expect("lab up with a DUT");
    let sender = lab.sender.clone();
    let run = |n: u64| {
        // AF_XDP named: live paced at 50 kpps through the lab's delay line built a queue on
        // this machine (p50 6.3 ms for a 1 ms delay, growing through the run), which is the
        // pacing's burst shape meeting the delay line, not what this test is about.
        let out = common::json(&common::linerate_ok(&[
            "tx",
            "-i",
            &sender,
            "--backend",
            "afxdp",
            "--rx",
            "-n",
            &n.to_string(),
            "--rate",
            "50k",
            "--json",
            "-q",
            "--cores",
            "0",
        ]));
        flows(&out)[0].clone()
    };
    let n = 100_000u64;
    // Binomial(100000, 0.01): mean 1000, sigma 31.5; 5 sigma = 157.
    let (lo, hi) = (1000.0 - 157.0, 1000.0 + 157.0);

    lab.impair(
        &Impairments {
            loss: 1.0,
            ..Default::default()
        },
        bin,
    )
    .expect("loss 1%");
    let f = run(n);
    let dropped = lab.impair_counters().unwrap().dropped;
    assert_eq!(f["tx_frames"], n);
    assert_eq!(f["lost"], dropped, "{f}");
    let lost = dropped as f64;
    assert!(lo <= lost && lost <= hi, "lost {lost} not in {lo}..{hi}");
    assert_eq!(
        (f["late"].as_u64(), f["duplicates"].as_u64()),
        (Some(0), Some(0)),
        "{f}"
    );

    lab.impair(
        &Impairments {
            duplicate: 1.0,
            ..Default::default()
        },
        bin,
    )
    .expect("duplicate 1%");
    let f = run(n);
    let duplicated = lab.impair_counters().unwrap().duplicated;
    assert_eq!(f["lost"], 0, "{f}");
    assert_eq!(f["duplicates"], duplicated, "{f}");
    assert_eq!(f["rx_frames"], n + duplicated, "{f}");
    let dup = duplicated as f64;
    assert!(lo <= dup && dup <= hi, "duplicates {dup} not in {lo}..{hi}");

    lab.impair(
        &Impairments {
            delay: Duration::from_millis(1),
            ..Default::default()
        },
        bin,
    )
    .expect("delay 1 ms");
    let f = run(10_000);
    assert_eq!(f["lost"], 0, "{f}");
    let lat = &f["latency"];
    let (min, p50) = (lat["min"].as_u64().unwrap(), lat["p50"].as_u64().unwrap());
    // The delay line holds every frame 1 ms; its own cost and the path add well under 1 ms.
    assert!(min >= 1_000_000, "min {min} ns below the 1 ms delay: {f}");
    assert!(p50 < 2_000_000, "p50 {p50} ns: {f}");
}

/// Issue 27 #3: a receive end has one owner at a time. A second receiver — here a whole second
/// `tx --rx` — is refused in one line (exit 2) before it touches the link, and the first run,
/// which shared the end unseen before, counts every frame it sent.
#[test]
fn a_second_receiver_on_a_labs_receive_end_is_refused_and_the_first_counts_all() {
    if !root_or_skip("receive side on a lab") {
        return;
    }
    let lab = common::lab("rxo", 2);
    let first = std::process::Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args([
            "tx",
            "-i",
            &lab.sender,
            "--rx",
            "-n",
            "20000",
            "--rate",
            "10k",
        ])
        .args(["--cores", "0", "--json", "-q"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The first holds the receive end for its 2 s; the second comes once it is sending.
    wait_until_sent(&lab.sender, 2000);
    let err = linerate_usage_error(&[
        "tx",
        "-i",
        &lab.sender,
        "--rx",
        "-n",
        "100",
        "--cores",
        "1",
        "--queues",
        "1",
    ]);
    assert!(err.contains("in use by another receiver"), "{err}");
    // Nor may a plain run count at a sink that is not there.
    let err = linerate_usage_error(&["tx", "-i", &lab.sender, "-n", "100", "--cores", "1"]);
    assert!(err.contains("in use by another receiver"), "{err}");
    let out = first.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let report = common::json(&String::from_utf8_lossy(&out.stdout));
    let flow = &flows(&report)[0];
    assert_eq!(flow["tx_frames"], 20000, "{report}");
    assert_eq!(flow["rx_frames"], 20000, "{report}");
    assert_eq!(flow["lost"], 0, "{report}");
}

/// Issue 27 #4: a receiver killed (SIGKILL) while it held the lab's receive end leaves its
/// program on the sink's link. The next command that counts at the sink notices, puts the sink
/// back and says so; no run reports loss it did not measure.
#[test]
fn a_killed_receiver_does_not_poison_the_lab() {
    if !root_or_skip("receive side on a lab") {
        return;
    }
    let lab = common::lab("rxk", 1);
    let mut victim = std::process::Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args(["tx", "-i", &lab.sender, "--rx", "-d", "30s", "--rate", "1k"])
        .args(["--cores", "0", "-q"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let status = |json: bool| {
        let mut args = vec!["lab", "status", "--name", &lab.name];
        if json {
            args.push("--json");
        }
        linerate(&args)
    };
    // Wait until the receiver holds the end.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let out = common::json(&String::from_utf8_lossy(&status(true).stdout));
        if out["receive_end"] == "receiver" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the receiver never took the end: {out}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    victim.kill().unwrap();
    victim.wait().unwrap();
    let out = status(false);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the sink is back"), "{stderr}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("XDP sink attached"),
        "{out:?}"
    );
    let report = common::json(&common::linerate_ok(&[
        "tx",
        "-i",
        &lab.sender,
        "-n",
        "1000",
        "--cores",
        "0",
        "--json",
        "-q",
    ]));
    assert_eq!(report["sink"]["packets"], 1000, "{report}");
    assert_eq!(report["sink"]["lost"], 0, "{report}");
}

/// Issue 27 #18: `tx -i X --rx X` was accepted and reported 100 % loss; a port does not receive
/// what it sends. Refused in one line (exit 2) before anything is sent.
#[test]
fn receiving_on_the_transmit_port_is_refused() {
    if !root_or_skip("receive side on a lab") {
        return;
    }
    let lab = common::lab("rxx", 1);
    let err = linerate_usage_error(&[
        "tx",
        "-i",
        &lab.sender,
        "--rx",
        &lab.sender,
        "-n",
        "10",
        "--cores",
        "0",
    ]);
    assert!(err.contains("is the port that transmits"), "{err}");
}

/// Issue 27 #8: `rx` kept reporting, rc 0, after its interface was deleted. It now ends with
/// the counts so far and one line saying the interface went away (exit 1).
#[test]
fn rx_ends_when_its_interface_goes_away() {
    if !root_or_skip("linerate rx on a veth pair") {
        return;
    }
    let pair = common::VethPair::new(&linerate_lab::unique_name("rxg"));
    let netns = pair.name.clone();
    let b = pair.b();
    let child = lone_rx(&b, &netns, "30s");
    let deleted = std::process::Command::new("ip")
        .args(["link", "del", &pair.a()])
        .status()
        .unwrap();
    assert!(deleted.success());
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "rx ran on for {:?} after its interface went",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("went away during the run"), "{stderr}");
    // The counts so far are still printed.
    common::json(&String::from_utf8_lossy(&out.stdout));
}

/// Issue 27 #7: frames of signed flows the run did not send (another sender on the link) were in
/// no flow, not in "other" and not in the total, without a word. They are counted apart
/// (`rx.foreign`), in the receive end's total, and said in one warning line.
#[test]
fn frames_of_flows_the_run_did_not_send_are_counted_and_said() {
    if !root_or_skip("receive side on a lab") {
        return;
    }
    let lab = common::lab("rxf", 2);
    // Twelve signed frames, their flow id rewritten to 5 (the receive program reads the id and
    // the magic, not the checksum the rewrite breaks).
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("foreign.pcap");
    common::linerate_ok(&[
        "tx",
        "--pcap",
        pcap.to_str().unwrap(),
        "--signature",
        "-n",
        "12",
    ]);
    let mut config = String::new();
    for mut f in common::frames::read(&pcap) {
        let flow = f.len() - 8;
        f[flow..flow + 2].copy_from_slice(&5u16.to_be_bytes());
        let bytes: Vec<String> = f.iter().map(|b| format!("{b:#04x}")).collect();
        config.push_str(&format!("{{ {} }}\n", bytes.join(", ")));
    }
    let first = std::process::Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args([
            "tx",
            "-i",
            &lab.sender,
            "--rx",
            "-n",
            "20000",
            "--rate",
            "10k",
        ])
        .args(["--cores", "0", "--json", "-q"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Inject once the run is sending (its receive end is in place), not after a guessed sleep: a
    // slow machine may still be setting up after 600 ms, and frames that come before the run's
    // receive end are not the run's to count.
    wait_until_sent(&lab.sender, 2000);
    trafgen(&lab.sender, 12, config.as_bytes());
    let out = first.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let report = common::json(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(report["rx"]["foreign"]["frames"], 12, "{report}");
    assert_eq!(report["rx"]["foreign"]["flows"], 1, "{report}");
    let flow = &flows(&report)[0];
    assert_eq!(flow["rx_frames"], 20000, "{report}");
    assert_eq!(report["sink"]["packets"], 20012, "{report}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("12 frame(s) of 1 signed flow(s) this run did not send"),
        "{stderr}"
    );
}

/// Issue 40 #14: a receiver (`tx --rx IFACE@NETNS`) or a sweep's sink (`--sink-iface`) on a
/// veth's peer is the XDP program that lets the veth take live frames, but the port opened
/// before it attached: `--backend live` was refused and `auto` chose AF_XDP. Now each attaches
/// first, and live sends: every frame caught by tcpdump behind the receiver (which passes
/// them on) and counted, exactly, by the receiver and the sink.
#[test]
fn live_sends_to_a_receiver_or_a_sink_on_the_veths_peer() {
    if !root_or_skip("tx --rx IFACE@NETNS and sweep --sink-iface, live, on a veth pair") {
        return;
    }
    if !common::live_frames_or_skip("live_sends_to_a_receiver_or_a_sink_on_the_veths_peer") {
        return;
    }
    let pair = common::VethPair::new(&linerate_lab::unique_name("rxp"));
    let (a, b, mac) = (pair.a(), pair.b(), pair.b_mac());
    let at = format!("{b}@{}", pair.name);
    for backend in ["live", "auto"] {
        let mut out = String::new();
        let caught = common::capture(&pair, 1000, "udp", || {
            out = common::linerate_ok(&[
                "tx",
                "-i",
                &a,
                "--backend",
                backend,
                "--rx",
                &at,
                "--rx-pass",
                "--dst-mac",
                &mac,
                "-n",
                "1000",
                "--signature",
                "--json",
                "--cores",
                "0",
            ]);
        });
        assert_eq!(caught.len(), 1000, "{backend}");
        for line in &caught {
            assert!(line.contains(&format!("> {mac}")), "{backend}: {line}");
            assert!(line.contains("UDP"), "{backend}: {line}");
        }
        let json = common::json(&out);
        assert_eq!(json["backend"], "live", "{backend}: {json}");
        let flows = flows(&json);
        assert_eq!(flows.len(), 1, "{json}");
        assert_eq!(flows[0]["tx_frames"], 1000, "{backend}: {json}");
        assert_eq!(flows[0]["rx_frames"], 1000, "{backend}: {json}");
        assert_eq!(flows[0]["lost"], 0, "{backend}: {json}");
    }
    for backend in ["live", "auto"] {
        let out = common::linerate_ok(&[
            "sweep",
            "-i",
            &a,
            "--backend",
            backend,
            "--sink-iface",
            &b,
            "--sink-netns",
            &pair.name,
            "--sizes",
            "64",
            "-d",
            "100ms",
            "--warmup",
            "50ms",
            "--repeat",
            "1",
            "--cores",
            "0",
            "--json",
            "-",
        ]);
        let json = common::json(&out);
        assert_eq!(json["context"]["backend"], "live", "{backend}: {json}");
        let rep = &json["points"][0]["repetitions"][0];
        let sent = rep["tx_frames"].as_u64().expect("tx_frames");
        assert!(sent > 0, "{json}");
        assert_eq!(rep["rx_frames"], sent, "{backend}: {json}");
    }
}

/// `tx --stats`: a line a second per flow and per port, then each flow's exact totals. Two
/// streams interleaved (their place sends both, so a second's line gives what arrived, not a
/// per-flow sent count), 20,000 frames each at 10 kpps: the lines add up at the receiver to
/// what was sent, flow by flow; the CSV form is read back by the csv crate.
#[test]
fn tx_stats_writes_a_line_a_second_per_flow_that_adds_up_to_the_run() {
    if !root_or_skip("tx --stats on a lab") {
        return;
    }
    let lab = common::lab("rxst", 1);
    let dir = tempfile::tempdir().unwrap();
    let streams = dir.path().join("two.toml");
    std::fs::write(
        &streams,
        "mode = \"interleaved\"\n[[stream]]\nname = \"a\"\nrate = \"10k\"\ncount = 20000\nsrc-port = 1000\n\
         [[stream]]\nname = \"b\"\nrate = \"10k\"\ncount = 20000\nsrc-port = 2000\n",
    )
    .unwrap();
    let jsonl = dir.path().join("series.jsonl");
    let streams = streams.to_str().unwrap();
    common::linerate_ok(&[
        "tx",
        "-i",
        &lab.sender,
        "--rx",
        "--stream",
        streams,
        "--cores",
        "0",
        "-q",
        "--stats",
        jsonl.to_str().unwrap(),
    ]);
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for name in ["a", "b"] {
        let ticks: Vec<&serde_json::Value> = lines
            .iter()
            .filter(|l| l["kind"] == "flow" && l["name"] == name)
            .collect();
        assert!(!ticks.is_empty(), "{lines:?}");
        let mut last = 0;
        for t in &ticks {
            let rx = t["frames_rx"].as_u64().unwrap();
            assert!(rx >= last && rx <= 20_000, "{t}");
            assert!(t.get("frames_tx").is_none(), "a place of two flows: {t}");
            last = rx;
        }
        let end: Vec<_> = lines
            .iter()
            .filter(|l| l["kind"] == "end" && l["name"] == name)
            .collect();
        assert_eq!(end.len(), 1, "{lines:?}");
        assert_eq!(
            (end[0]["frames_tx"].as_u64(), end[0]["frames_rx"].as_u64()),
            (Some(20_000), Some(20_000))
        );
        assert_eq!(end[0]["lost"].as_u64(), Some(0));
    }
    // The port's line each second: its total so far, never past the run's.
    let place: Vec<u64> = lines
        .iter()
        .filter(|l| l["kind"] == "place")
        .map(|l| l["frames_tx"].as_u64().unwrap())
        .collect();
    assert!(
        !place.is_empty() && place.windows(2).all(|w| w[0] <= w[1]),
        "{place:?}"
    );
    assert!(*place.last().unwrap() <= 40_000);

    // CSV: one header, the same kinds of rows, read by the csv crate.
    let csv_path = dir.path().join("series.csv");
    common::linerate_ok(&[
        "tx",
        "-i",
        &lab.sender,
        "--rx",
        "-n",
        "15000",
        "--rate",
        "10k",
        "--cores",
        "0",
        "-q",
        "--stats",
        csv_path.to_str().unwrap(),
    ]);
    let mut reader = csv::Reader::from_path(&csv_path).unwrap();
    assert_eq!(
        reader.headers().unwrap().iter().collect::<Vec<_>>(),
        [
            "t",
            "kind",
            "name",
            "frames_tx",
            "tx_fps",
            "frames_rx",
            "rx_fps",
            "lost",
            "latency_p50_ns",
            "latency_p99_ns",
            "phase"
        ]
    );
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let ticks: Vec<_> = rows.iter().filter(|r| &r[1] == "flow").collect();
    assert!(!ticks.is_empty(), "{rows:?}");
    // One flow alone on its port: each second's line has its sent count too. The two are read
    // a moment apart (the workers' count at the tick, the receiver's after it), so what
    // arrived may run a few frames past it at 10 kpps, never more than 10 ms of them.
    for r in &ticks {
        let (tx, rx): (u64, u64) = (r[3].parse().unwrap(), r[5].parse().unwrap());
        assert!(rx <= tx + 100 && tx <= 15_000, "{r:?}");
    }
    let end = rows.iter().find(|r| &r[1] == "end").unwrap();
    assert_eq!((&end[3], &end[5], &end[7]), ("15000", "15000", "0"));
    // The receiver's total each second too, never past what was sent.
    let received: Vec<u64> = rows
        .iter()
        .filter(|r| &r[1] == "received")
        .map(|r| r[5].parse().unwrap())
        .collect();
    assert!(
        !received.is_empty() && received.iter().all(|&n| n <= 15_000),
        "{received:?}"
    );

    // replay --stats: a capture's frames carry no flow, so the port's lines are the series.
    let capture = dir.path().join("c.pcap");
    common::linerate_ok(&["tx", "--pcap", capture.to_str().unwrap(), "-n", "100", "-q"]);
    let replayed = dir.path().join("replay.jsonl");
    common::linerate_ok(&[
        "replay",
        capture.to_str().unwrap(),
        "-i",
        &lab.sender,
        "--rx",
        "--rate",
        "10k",
        "--loop",
        "200",
        "-q",
        "--stats",
        replayed.to_str().unwrap(),
    ]);
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&replayed)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds = |k: &str| lines.iter().filter(|l| l["kind"] == k).count();
    assert!(kinds("place") >= 1 && kinds("received") >= 1, "{lines:?}");
    assert_eq!(kinds("flow") + kinds("end"), 0, "{lines:?}");
    let sent: Vec<u64> = lines
        .iter()
        .filter(|l| l["kind"] == "place")
        .map(|l| l["frames_tx"].as_u64().unwrap())
        .collect();
    assert!(sent.windows(2).all(|w| w[0] <= w[1]) && *sent.last().unwrap() <= 20_000);
}

/// `lab status --json` of `lab`.
fn lab_status(lab: &linerate_lab::Lab) -> serde_json::Value {
    common::json(&common::linerate_ok(&[
        "lab", "status", "--name", &lab.name, "--json",
    ]))
}

/// Waits (10 s at most) until `ready` holds, polling every 20 ms.
fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ready() {
        assert!(Instant::now() < deadline, "{what}: not within 10 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The lab's sink is on its receive end and counts again: a plain `tx` of 1000 frames is
/// counted whole there.
fn assert_sink_is_back(lab: &linerate_lab::Lab) {
    let status = lab_status(lab);
    assert_eq!(status["receive_end"], "sink", "{status}");
    let report = common::json(&common::linerate_ok(&[
        "tx",
        "-i",
        &lab.sender,
        "-n",
        "1000",
        "--cores",
        "0",
        "--json",
        "-q",
    ]));
    assert_eq!(report["sink"]["packets"], 1000, "{report}");
    assert_eq!(report["sink"]["lost"], 0, "{report}");
}

/// `linerate rx` on a lab that is up (`-i <name>1 --netns <name>-sink`, issue 41) was refused
/// ("an XDP program is already attached … ip … xdp off", a fix that fails on a bpf_link). It
/// borrows the lab's receive end from the sink, as `tx --rx` does, and a plain `tx` to the lab
/// sends to it: the receiver counts every frame, and the sink is back when it ends.
#[test]
fn rx_on_a_labs_receive_end_counts_what_a_plain_tx_sends_and_gives_the_sink_back() {
    if !root_or_skip("linerate rx on a lab's receive end") {
        return;
    }
    let lab = common::lab("rxe", 1);
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args(["rx", "-i", &lab.receiver, "--netns", &lab.netns])
        .args(["-d", "5s", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("rx takes the lab's receive end", || {
        lab_status(&lab)["receive_end"] == "receiver"
    });
    let status = lab_status(&lab);
    let holder = status["receive_end_holder"].as_str().unwrap_or_default();
    assert!(holder.contains("`linerate rx`"), "{status}");
    let out = linerate(&[
        "tx",
        "-i",
        &lab.sender,
        "--signature",
        "-n",
        "10000",
        "--rate",
        "50k",
        "--cores",
        "0",
        "--json",
        "-q",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("held by `linerate rx`"), "{stderr}");
    let report = common::json(&String::from_utf8_lossy(&out.stdout));
    assert!(report["sink"].is_null(), "no sink count: {report}");
    // Another run that would count its own frames there is refused, naming the holder.
    let err = linerate_usage_error(&["tx", "-i", &lab.sender, "--rx", "-n", "10", "--cores", "0"]);
    assert!(err.contains("(`linerate rx`, pid"), "{err}");
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let json = common::json(&String::from_utf8_lossy(&out.stdout));
    let f = &json["flows"][0];
    assert_eq!(f["rx_frames"], 10_000, "{json}");
    assert_eq!(f["lost"], 0, "{json}");
    assert_eq!(json["totals"]["global"]["other_frames"], 0, "{json}");
    assert_sink_is_back(&lab);
}

/// Ctrl-C ends a lone receiver on a lab's receive end with its report, and the sink goes back.
#[test]
fn rx_stopped_by_ctrl_c_gives_the_labs_receive_end_back() {
    if !root_or_skip("linerate rx on a lab's receive end") {
        return;
    }
    let lab = common::lab("rxc", 1);
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args(["rx", "-i", &lab.receiver, "--netns", &lab.netns, "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("rx takes the lab's receive end", || {
        lab_status(&lab)["receive_end"] == "receiver"
    });
    common::linerate_ok(&[
        "tx",
        "-i",
        &lab.sender,
        "--signature",
        "-n",
        "500",
        "--cores",
        "0",
        "-q",
    ]);
    // SAFETY: a plain signal to the child this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let json = common::json(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(json["flows"][0]["rx_frames"], 500, "{json}");
    assert_sink_is_back(&lab);
}

/// `linerate sink` on a lab's receive end (its own `--help` example) was refused the same way.
/// It reads the lab's own sink, holding the end so that no receiver takes it from under the
/// count: what a plain `tx` sends is counted exactly by both, and the sink stays attached.
#[test]
fn sink_on_a_labs_receive_end_reads_the_labs_sink() {
    if !root_or_skip("linerate sink on a lab's receive end") {
        return;
    }
    let lab = common::lab("rxn", 1);
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args(["sink", "-i", &lab.receiver, "--netns", &lab.netns])
        .args(["-d", "4s", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("sink holds the lab's receive end", || {
        linerate_xdp::ReceiveEndLock::holder(&lab.pin_dir())
            .is_some_and(|h| h.kind == linerate_xdp::HolderKind::Sink)
    });
    let report = common::json(&common::linerate_ok(&[
        "tx",
        "-i",
        &lab.sender,
        "-n",
        "7000",
        "--rate",
        "50k",
        "--cores",
        "0",
        "--json",
        "-q",
    ]));
    assert_eq!(report["sink"]["packets"], 7000, "{report}");
    assert_eq!(report["sink"]["lost"], 0, "{report}");
    // A receiver would take the frames from the count: refused, naming `linerate sink`.
    let err = linerate_usage_error(&["tx", "-i", &lab.sender, "--rx", "-n", "10", "--cores", "0"]);
    assert!(err.contains("(`linerate sink`, pid"), "{err}");
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let json = common::json(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(json["packets"], 7000, "{json}");
    assert_eq!(json["bytes"], 7000 * 60, "{json}");
    assert!(common::xdp_attached(&lab.receiver, Some(&lab.netns)));
    assert_sink_is_back(&lab);
}

/// Where an interface is held by a bpf_link, the error says so and how to find its holder —
/// never `ip … xdp off`, which cannot remove a link: a lab's pinned link names the lab (and
/// `lab down`), another process's link the `bpftool` commands that find it.
#[test]
fn an_interface_held_by_a_bpf_link_is_named_without_ip_xdp_off() {
    if !root_or_skip("XDP attach errors") {
        return;
    }
    let lab = common::lab("rxh", 1);
    let err = linerate_xdp::Sink::attach(
        &lab.receiver,
        Some(&lab.netns),
        linerate_xdp::AttachMode::Drv,
    )
    .unwrap_err();
    assert!(
        matches!(&err, linerate_xdp::XdpError::HeldByLab { lab: l, .. } if *l == lab.name),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains(&format!("linerate lab down --name {}", lab.name)),
        "{text}"
    );
    assert!(!text.contains("detach it with"), "{text}");

    let pair = common::VethPair::new(&linerate_lab::unique_name("rxh"));
    let b = pair.b();
    let child = lone_rx(&b, &pair.name, "5s");
    let err = linerate_usage_error(&["sink", "-i", &b, "--netns", &pair.name, "-d", "1s"]);
    assert!(err.contains("through a bpf_link"), "{err}");
    assert!(err.contains("bpftool net"), "{err}");
    assert!(!err.contains("detach it with"), "{err}");
    // SAFETY: a plain signal to the child this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
}
