//! Interleaved streams on a real veth lab over AF_XDP (root): two streams at once, each at its
//! own rate, counted at the sink and seen frame by frame in a capture; bad files refused.
#![cfg(target_os = "linux")]

mod common;

use std::path::Path;
use std::sync::Mutex;

use common::{
    VethPair, catch_tx, json, linerate_ok, linerate_usage_error, root_or_skip, src_port,
    within_three_attempts,
};
use linerate_lab::unique_name;

/// Rate tests share the machine's two cores: they run one at a time.
static ALONE: Mutex<()> = Mutex::new(());

/// Two interleaved streams: 20 kpps from UDP source port 1 and 5 kpps from port 2.
fn two_streams(file: &Path, dst_mac: Option<&str>, counts: Option<(u64, u64)>) {
    let mac = dst_mac.map_or(String::new(), |m| format!("dst-mac = \"{m}\"\n"));
    let count = |c: Option<u64>| c.map_or(String::new(), |c| format!("count = {c}\n"));
    std::fs::write(
        file,
        format!(
            "mode = \"interleaved\"\n\
             [[stream]]\nname = \"fast\"\nsrc-port = 1\nrate = \"20k\"\n{mac}{}\
             [[stream]]\nname = \"slow\"\nsrc-port = 2\nrate = \"5k\"\n{mac}{}",
            count(counts.map(|c| c.0)),
            count(counts.map(|c| c.1)),
        ),
    )
    .unwrap();
}

#[test]
fn two_streams_at_their_own_rates_at_the_sink() {
    if !root_or_skip("two_streams_at_their_own_rates_at_the_sink") {
        return;
    }
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let lab = common::lab("il", 2);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("two.toml");
    two_streams(&file, None, None);
    within_three_attempts(|| {
        let out = linerate_ok(&[
            "tx",
            "-q",
            "--json",
            "-i",
            &lab.sender,
            "--stream",
            file.to_str().unwrap(),
            "-d",
            "2s",
        ]);
        let report = json(&out);
        assert_eq!(report["sink"]["lost"], 0, "{out}");
        assert_eq!(report["requested_pps"], 25_000.0);
        let per_stream = report["per_stream"].as_array().unwrap();
        assert_eq!(per_stream[0]["name"], "fast");
        let at_sink = report["sink"]["packets"].as_u64().unwrap();
        let frames: Vec<u64> = per_stream
            .iter()
            .map(|s| s["frames"].as_u64().unwrap())
            .collect();
        if (49_500..=50_500).contains(&at_sink)
            && (39_600..=40_400).contains(&frames[0])
            && (9_900..=10_100).contains(&frames[1])
        {
            Ok(())
        } else {
            Err(format!(
                "sink counted {at_sink} frames (asked 50,000 ± 1 %), per stream {frames:?} (asked 40,000 and 10,000 ± 1 %)"
            ))
        }
    });
}

#[test]
fn two_streams_interleave_four_to_one_on_the_wire() {
    if !root_or_skip("two_streams_interleave_four_to_one_on_the_wire") {
        return;
    }
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let pair = VethPair::new(&unique_name("ilc"));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("two.toml");
    two_streams(&file, Some(&pair.b_mac()), Some((2000, 500)));
    let frames = catch_tx(&pair, 2500, &["--stream", file.to_str().unwrap()]);
    let ports: Vec<&str> = frames.iter().map(|f| src_port(f)).collect();
    assert_eq!(ports.len(), 2500);
    assert_eq!(ports.iter().filter(|p| **p == "1").count(), 2000);
    assert_eq!(ports.iter().filter(|p| **p == "2").count(), 500);
    // On schedule every port-2 frame sits between port-1 frames (1000 switches); a stalled
    // sender catches up in batches, which may merge a few runs, but never one block then the other.
    let switches = ports.windows(2).filter(|w| w[0] != w[1]).count();
    assert!(
        switches >= 500,
        "only {switches} switches between the streams"
    );
    for part in ports.chunks(250) {
        let slow = part.iter().filter(|p| **p == "2").count();
        assert!(
            (25..=75).contains(&slow),
            "{slow} port-2 frames in a slice of 250 (4:1 is 50)"
        );
    }
}

#[test]
fn sequence_keys_and_max_are_refused_in_interleaved_files() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    let path = file.to_str().unwrap();
    let run = |text: &str| {
        std::fs::write(&file, text).unwrap();
        linerate_usage_error(&["tx", "--null", "-n", "10", "--stream", path])
    };
    let line = run(
        "mode = \"interleaved\"\n[[stream]]\nname = \"a\"\nrate = \"1k\"\ncount = 5\nnext = \"next\"\n[[stream]]\nname = \"b\"\nrate = \"1k\"\n",
    );
    assert!(
        line.contains("'a'") && line.contains("next and loops"),
        "{line}"
    );
    let line = run(
        "mode = \"interleaved\"\n[[stream]]\nname = \"a\"\nrate = \"1k\"\n[[stream]]\nname = \"b\"\n",
    );
    assert!(line.contains("'b'") && line.contains("not max"), "{line}");
    let line = run("[[stream]]\nmode = \"interleaved\"\n");
    assert!(line.contains("mode"), "{line}");
    let out = linerate_ok(&["tx", "--null", "-q", "--json", "-n", "5", "--stream", &{
        std::fs::write(
                &file,
                "mode = \"interleaved\"\n[[stream]]\nname = \"a\"\nrate = \"4k\"\n[[stream]]\nname = \"b\"\nrate = \"1k\"\n",
            )
            .unwrap();
        path.to_owned()
    }]);
    let report = json(&out);
    assert_eq!(report["per_stream"][0]["frames"], 4);
    assert_eq!(report["per_stream"][1]["frames"], 1);
}
