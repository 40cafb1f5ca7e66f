//! `--backend auto`, the default on an interface (root): on the lab's veth it picks live and
//! says why in one line of the report and in the JSON; a backend asked for by name prints no
//! such line; a plan live cannot lay out goes down the ladder to AF_XDP and says so; more
//! workers than AF_XDP has queues take AF_PACKET and say so. And the
//! terse report: ring and pacing counters with `-v` only.
#![cfg(target_os = "linux")]

mod common;

use common::{VethPair, json, linerate_ok, root_or_skip};
use linerate_lab::unique_name;

#[test]
fn tx_without_a_backend_picks_live_on_the_lab_and_says_why() {
    if !root_or_skip("tx_without_a_backend_picks_live_on_the_lab_and_says_why") {
        return;
    }
    let lab = common::lab("aut", 1);
    let before = lab.sink_counters().unwrap();
    let out = linerate_ok(&["tx", "-q", "-i", &lab.sender, "-n", "1000"]);
    let got = lab.sink_counters().unwrap().since(before);
    assert_eq!(got.packets, 1000, "sink count: {out}");
    let said: Vec<&str> = out.lines().filter(|l| l.starts_with("backend ")).collect();
    assert_eq!(said.len(), 1, "one line states the choice: {out}");
    // A kernel that refuses live frames to root: auto goes on to AF_XDP and says why, in the
    // kernel's own terms (not "run as root").
    if let Some(refused) = linerate_live::kernel_refuses_live_frames() {
        let why = format!(
            "backend afxdp: {} (veth) has no AF_XDP zero-copy",
            lab.sender
        );
        assert!(said[0].starts_with(&why), "{out}");
        assert!(said[0].contains(&refused), "{out}");
        assert!(!said[0].contains("run as root"), "{out}");
        eprintln!(
            "SKIPPED the rest of tx_without_a_backend_picks_live_on_the_lab_and_says_why: {refused}"
        );
        return;
    }
    let why = format!(
        "backend live: {} (veth) has no AF_XDP zero-copy; ",
        lab.sender
    );
    assert!(said[0].starts_with(&why), "{out}");
    assert!(out.contains("(live, live (redirect))"), "{out}");
    assert!(
        out.contains("received  1000 frames, 60000 bytes at the sink"),
        "{out}"
    );

    let report = json(&linerate_ok(&[
        "tx",
        "-q",
        "--json",
        "-i",
        &lab.sender,
        "-n",
        "1000",
    ]));
    assert_eq!(report["backend"], "live", "{report}");
    assert_eq!(report["backend_choice"]["backend"], "live", "{report}");
    let why = report["backend_choice"]["why"].as_str().unwrap();
    assert!(why.contains("has no AF_XDP zero-copy"), "{report}");
    assert_eq!(report["sink"]["packets"], 1000, "{report}");

    // An AF_XDP flag names AF_XDP: auto would otherwise pick a backend it does not apply to.
    let out = linerate_ok(&[
        "tx",
        "-q",
        "-i",
        &lab.sender,
        "-n",
        "1000",
        "--xdp-mode",
        "copy",
    ]);
    assert!(!out.contains("backend "), "{out}");
    assert!(out.contains("(afxdp, copy)"), "{out}");
}

/// More workers than the interface has queues, where the ladder would take AF_XDP (a veth whose
/// peer has no XDP program takes no live frames): AF_XDP binds a socket a queue, so auto takes
/// AF_PACKET, says why, and every frame arrives (counted by the far end's kernel).
#[test]
fn more_workers_than_queues_take_afpacket_and_say_why() {
    if !root_or_skip("more_workers_than_queues_take_afpacket_and_say_why") {
        return;
    }
    let pair = VethPair::with_queues(&unique_name("auq"), 1);
    let received = || {
        let out = std::process::Command::new("ip")
            .args(["netns", "exec", &pair.name, "cat"])
            .arg(format!("/sys/class/net/{}/statistics/rx_packets", pair.b()))
            .output()
            .expect("run ip");
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse::<u64>()
            .expect("a packet count")
    };
    let before = received();
    let (a, mac) = (pair.a(), pair.b_mac());
    let report = json(&linerate_ok(&[
        "tx",
        "-q",
        "--json",
        "-i",
        &a,
        "--dst-mac",
        &mac,
        "-n",
        "1000",
        "--cores",
        "0,1",
    ]));
    assert_eq!(report["backend"], "afpacket", "{report}");
    let why = report["backend_choice"]["why"].as_str().unwrap_or_default();
    assert!(
        why.starts_with(&format!(
            "{a} (veth) has no AF_XDP zero-copy, its driver does not take redirected XDP frames"
        )) && why.ends_with("2 workers need an AF_XDP queue each and it has 1: AF_PACKET"),
        "{report}"
    );
    assert_eq!(
        report["workers"].as_array().map(Vec::len),
        Some(2),
        "{report}"
    );
    assert_eq!(received() - before, 1000, "frames at the far end: {report}");
}

#[test]
fn a_backend_asked_by_name_prints_no_choice() {
    if !root_or_skip("a_backend_asked_by_name_prints_no_choice") {
        return;
    }
    let lab = common::lab("aun", 1);
    let args = ["tx", "-q", "-i", &lab.sender, "-n", "1000", "--backend"];
    let out = linerate_ok(&[&args[..], &["afxdp"]].concat());
    assert!(!out.contains("backend "), "{out}");
    assert!(out.contains("(afxdp, "), "{out}");
    assert!(out.contains("received  1000 frames"), "{out}");
    let report = json(&linerate_ok(&[&args[..], &["afxdp", "--json"]].concat()));
    assert!(report.get("backend_choice").is_none(), "{report}");
    // The JSON has every counter; the text report has them with -v alone.
    assert!(
        report["workers"][0]["stats"]["tx_ring_empty_descs"].is_u64(),
        "{report}"
    );
    assert!(report["pacing"].is_null(), "unpaced: {report}");
    assert!(!out.contains("tx_ring_empty_descs"), "{out}");
    let paced = [&args[..], &["afxdp", "--rate", "100k"]].concat();
    let terse = linerate_ok(&paced);
    assert!(terse.contains("pacing    asked 100.000 kpps"), "{terse}");
    assert!(
        !terse.contains("lateness") && !terse.contains("kicks"),
        "{terse}"
    );
    let verbose = linerate_ok(&[&paced[..], &["-v"]].concat());
    assert!(verbose.contains("lateness  p50 "), "{verbose}");
    assert!(
        verbose.contains("worker 0 tx_ring_empty_descs: "),
        "{verbose}"
    );
    assert!(verbose.contains("worker 0 kicks_busy: "), "{verbose}");
}

/// Interleaved streams with counts do not merge into the one cycle live's program sends:
/// `auto` catches live's refusal before any frame and sends them on the next rung.
#[test]
fn a_plan_live_cannot_lay_out_goes_down_the_ladder() {
    if !root_or_skip("a_plan_live_cannot_lay_out_goes_down_the_ladder") {
        return;
    }
    if !common::live_frames_or_skip("a_plan_live_cannot_lay_out_goes_down_the_ladder") {
        return;
    }
    let lab = common::lab("aud", 1);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("counted.toml");
    std::fs::write(
        &file,
        "mode = \"interleaved\"\n\
         [[stream]]\nname = \"a\"\nsrc-port = 1\nrate = \"20k\"\ncount = 200\n\
         [[stream]]\nname = \"b\"\nsrc-port = 2\nrate = \"5k\"\ncount = 50\n",
    )
    .unwrap();
    let stream = [
        "tx",
        "-q",
        "-i",
        &lab.sender,
        "--stream",
        file.to_str().unwrap(),
    ];
    let report = json(&linerate_ok(&[&stream[..], &["--json"]].concat()));
    assert_eq!(report["backend"], "afxdp", "{report}");
    assert_eq!(report["backend_choice"]["backend"], "afxdp", "{report}");
    let why = report["backend_choice"]["why"].as_str().unwrap();
    assert!(
        why.contains("live cannot send this: 2 interleaved streams"),
        "{report}"
    );
    assert!(why.ends_with("AF_XDP in copy mode"), "{report}");
    assert_eq!(report["sink"]["packets"], 250, "{report}");
    let out = linerate_ok(&stream);
    let said: Vec<&str> = out.lines().filter(|l| l.starts_with("backend ")).collect();
    assert_eq!(said.len(), 1, "{out}");
    assert!(said[0].starts_with("backend afxdp: "), "{out}");
}
