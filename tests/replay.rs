//! `linerate replay`: captures written by `tx --pcap` and by dumpcap replayed into a pcap file
//! and into the veth lab, where tcpdump catches them at the receive end; the bytes are compared
//! frame by frame (pcap-file reads both sides; tcpdump converts the pcapng, so the loader is not
//! its own judge). Bad captures are refused in one line with nothing sent.

mod common;

use std::path::{Path, PathBuf};
#[cfg(target_os = "linux")]
use std::process::Command;
use std::time::Duration;

use common::frames::{read as frames, repeat, same as same_frames, varied_capture};
#[cfg(target_os = "linux")]
use common::linerate;
use common::{json, linerate_ok, linerate_usage_error, within_three_attempts};

/// A pcapng (or any capture tcpdump reads) rewritten as pcap by tcpdump, then read (the lab
/// tests that use it are Linux's).
#[cfg(target_os = "linux")]
fn via_tcpdump(path: &Path, dir: &Path) -> Vec<Vec<u8>> {
    let out = dir.join("converted.pcap");
    let status = Command::new("tcpdump")
        .arg("-r")
        .arg(path)
        .arg("-w")
        .arg(&out)
        .output()
        .expect("tcpdump is installed (scripts/setup.sh)");
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    frames(&out)
}

/// How a capture is held, as the flags ask: loaded into the port's buffers (the default for
/// captures within the caps) or streamed from the mapped file.
const HOLDS: [(&str, &[&str]); 2] = [("loaded", &[]), ("streamed", &["--from-file"])];

/// `replay` with `args` then `extra`.
fn replay_ok(args: &[&str], extra: &[&str]) -> String {
    linerate_ok(&[&["replay"], args, extra].concat())
}

#[test]
fn replayed_into_a_pcap_file_byte_for_byte_and_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let source = varied_capture(dir.path());
    let want = frames(&source);
    assert_eq!(want.len(), 1000);
    assert!(want.iter().any(|f| f.len() > 1000) && want.iter().any(|f| f.len() < 200));
    let out = dir.path().join("out.pcap");
    let o = out.to_str().unwrap();
    let s = source.to_str().unwrap();
    for (mode, hold) in HOLDS {
        let report = json(&replay_ok(
            &[s, "--pcap", o, "--speed", "max", "--json", "-q"],
            hold,
        ));
        assert_eq!(report["submitted"], 1000);
        assert_eq!(report["capture"]["frames"], 1000);
        assert_eq!(report["capture"]["format"], "pcap (ns)");
        assert_eq!(report["capture"]["mode"], mode);
        same_frames(&frames(&out), &want);
        // Three loops: the sequence three times, exactly.
        replay_ok(
            &[s, "--pcap", o, "--speed", "max", "--loop", "3", "-q"],
            hold,
        );
        same_frames(&frames(&out), &repeat(&want, 3));
        // A count stops inside a loop, exactly.
        replay_ok(
            &[
                s, "--pcap", o, "--speed", "max", "--loop", "inf", "-n", "2345", "-q",
            ],
            hold,
        );
        same_frames(&frames(&out), &repeat(&want, 3)[..2345]);
        // Issue 41: -n alone asks for that many frames; the capture loops until they are sent.
        replay_ok(
            &[s, "--pcap", o, "--speed", "max", "-n", "2345", "-q"],
            hold,
        );
        same_frames(&frames(&out), &repeat(&want, 3)[..2345]);
        // MAC rewrite touches the addresses and nothing else.
        replay_ok(
            &[
                s,
                "--pcap",
                o,
                "--speed",
                "max",
                "-q",
                "--dst-mac",
                "02:00:00:00:00:aa",
                "--src-mac",
                "02:00:00:00:00:bb",
            ],
            hold,
        );
        let rewritten = frames(&out);
        assert_eq!(rewritten.len(), want.len(), "{mode}");
        for (got, sent) in rewritten.iter().zip(&want) {
            assert_eq!(&got[..12], &[2, 0, 0, 0, 0, 0xaa, 2, 0, 0, 0, 0, 0xbb]);
            assert_eq!(got[12..], sent[12..]);
        }
    }
}

/// A capture from a pipe (a FIFO here, as `<(zcat trace.pcap.gz)` gives) is read whole and
/// loaded: the same frames in order; `--stream` is refused for it, since only a file maps. And
/// `--pcap` naming the capture itself is refused before the file is truncated.
#[cfg(unix)]
#[test]
fn a_pipe_is_loaded_and_the_capture_is_never_its_own_output() {
    let dir = tempfile::tempdir().unwrap();
    let source = varied_capture(dir.path());
    let want = frames(&source);
    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let out = dir.path().join("out.pcap");
    let feed = |bytes: Vec<u8>| {
        let fifo = fifo.clone();
        // Opening a FIFO for writing waits for its reader, linerate.
        std::thread::spawn(move || {
            let _ = std::fs::write(&fifo, bytes);
        })
    };
    let writer = feed(std::fs::read(&source).unwrap());
    let r = json(&replay_ok(
        &[
            fifo.to_str().unwrap(),
            "--pcap",
            out.to_str().unwrap(),
            "--speed",
            "max",
            "--json",
            "-q",
        ],
        &[],
    ));
    writer.join().unwrap();
    assert_eq!(r["capture"]["mode"], "loaded");
    same_frames(&frames(&out), &want);
    let line = linerate_usage_error(&["replay", fifo.to_str().unwrap(), "--null", "--from-file"]);
    assert!(line.contains("not a regular file"), "{line}");
    let before = std::fs::read(&source).unwrap();
    for hold in [&[][..], &["--from-file"][..]] {
        let line = linerate_usage_error(
            &[
                &[
                    "replay",
                    source.to_str().unwrap(),
                    "--pcap",
                    source.to_str().unwrap(),
                ],
                hold,
            ]
            .concat(),
        );
        assert!(line.contains("the capture being replayed"), "{line}");
    }
    assert_eq!(
        std::fs::read(&source).unwrap(),
        before,
        "the capture was written"
    );
}

/// A capture over the load caps (70,000 frames, 65,536 load) is streamed without being asked,
/// and says so; what it sends is the file, byte for byte, in order.
#[test]
fn a_capture_over_the_load_caps_is_streamed() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("large.pcap");
    linerate_ok(&[
        "tx",
        "-q",
        "--pcap",
        source.to_str().unwrap(),
        "-n",
        "70000",
        "--vary",
        "src-port:inc:1-65535",
        "--vary",
        "dst-port:inc:1-7",
    ]);
    let want = frames(&source);
    assert_eq!(want.len(), 70_000);
    let out = dir.path().join("out.pcap");
    let r = json(&replay_ok(
        &[
            source.to_str().unwrap(),
            "--pcap",
            out.to_str().unwrap(),
            "--speed",
            "max",
            "--json",
            "-q",
        ],
        &[],
    ));
    assert_eq!(r["capture"]["mode"], "streamed");
    assert_eq!(r["submitted"], 70_000);
    same_frames(&frames(&out), &want);
}

#[test]
fn two_workers_keep_the_order_of_their_own_frames() {
    let dir = tempfile::tempdir().unwrap();
    let source = varied_capture(dir.path());
    let want = frames(&source);
    let out = dir.path().join("out.pcap");
    let mut sorted = want.clone();
    sorted.sort();
    for (mode, hold) in HOLDS {
        replay_ok(
            &[
                source.to_str().unwrap(),
                "--pcap",
                out.to_str().unwrap(),
                "--speed",
                "max",
                "--cores",
                "0,1",
                "-q",
            ],
            hold,
        );
        let mut got = frames(&out);
        // Worker w sends frames w, w+2, …: each worker's frames arrive in capture order, and
        // all of them exactly once; how the two interleave is up to the scheduler.
        for w in 0..2 {
            let mine: Vec<&Vec<u8>> = want.iter().skip(w).step_by(2).collect();
            let seen: Vec<&Vec<u8>> = got.iter().filter(|f| mine.contains(f)).collect();
            assert_eq!(seen, mine, "{mode}: worker {w}'s frames out of order");
        }
        got.sort();
        assert_eq!(got, sorted, "{mode}");
    }
}

/// A capture of `n` 60-byte frames exactly `gap` apart, written with pcap-file.
fn evenly_spaced(dir: &Path, n: u32, gap: Duration) -> PathBuf {
    let path = dir.join("spaced.pcap");
    let file = std::fs::File::create(&path).unwrap();
    let header = pcap_file::pcap::PcapHeader {
        ts_resolution: pcap_file::TsResolution::NanoSecond,
        ..Default::default()
    };
    let mut w = pcap_file::pcap::PcapWriter::with_header(file, header).unwrap();
    for i in 0..n {
        let mut f = vec![0u8; 60];
        f[..6].copy_from_slice(&[0xff; 6]);
        f[12..14].copy_from_slice(&[0x88, 0xb5]);
        f[14..18].copy_from_slice(&i.to_be_bytes());
        let t = Duration::from_secs(1_700_000_000) + gap * i;
        w.write_packet(&pcap_file::pcap::PcapPacket::new(t, 60, &f))
            .unwrap();
    }
    path
}

/// `--speed 1x` of a capture 500 ms long (501 frames 1 ms apart) takes 500 ms, `2x` 250 ms,
/// streamed too.
/// Tolerance: no frame leaves more than a 20 µs slice early, so the floor is the capture's own
/// length less 1 %; the ceiling is +20 %, room for a loaded 2-core VM (a preempted thread catches
/// up at twice the rate); three attempts, since a stall over 50 ms is written off, not caught up.
#[test]
fn speed_keeps_the_capture_timing_scaled() {
    let dir = tempfile::tempdir().unwrap();
    let source = evenly_spaced(dir.path(), 501, Duration::from_millis(1));
    let runs: [(&str, f64, &[&str]); 3] = [
        ("1x", 0.5, &[]),
        ("2x", 0.25, &[]),
        ("2x", 0.25, &["--from-file"]),
    ];
    for (speed, secs, hold) in runs {
        within_three_attempts(|| {
            let r = json(&replay_ok(
                &[
                    source.to_str().unwrap(),
                    "--null",
                    "--speed",
                    speed,
                    "--json",
                    "-q",
                ],
                hold,
            ));
            assert_eq!(r["submitted"], 501);
            let took = r["elapsed_s"].as_f64().unwrap();
            if took >= secs * 0.99 && took <= secs * 1.2 {
                Ok(())
            } else {
                Err(format!(
                    "--speed {speed}: {took:.4} s, want {secs} s -1 %/+20 %"
                ))
            }
        });
    }
}

/// Writes a pcap-file capture with one change, for the refusals.
fn write_pcap(path: &Path, link: pcap_file::DataLink, snaplen: u32, frames: &[Vec<u8>]) {
    let header = pcap_file::pcap::PcapHeader {
        datalink: link,
        snaplen,
        ..Default::default()
    };
    let file = std::fs::File::create(path).unwrap();
    let mut w = pcap_file::pcap::PcapWriter::with_header(file, header).unwrap();
    for f in frames {
        w.write_packet(&pcap_file::pcap::PcapPacket::new(
            Duration::ZERO,
            f.len() as u32,
            f,
        ))
        .unwrap();
    }
}

#[test]
fn bad_captures_are_refused_in_one_line_and_nothing_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let good = varied_capture(dir.path());
    let bytes = std::fs::read(&good).unwrap();
    let eth = vec![0x11u8; 60];
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "truncated",
            bytes[..bytes.len() - 100].to_vec(),
            "truncated",
        ),
        (
            "wrong-magic",
            [b"\x7fELF".as_slice(), &bytes[4..]].concat(),
            "not a pcap or pcapng",
        ),
        ("empty", Vec::new(), "too short"),
    ];
    let mut files: Vec<(PathBuf, &str)> = Vec::new();
    for (name, data, why) in cases {
        let p = dir.path().join(name);
        std::fs::write(&p, data).unwrap();
        files.push((p, why));
    }
    let wifi = dir.path().join("wifi.pcap");
    write_pcap(
        &wifi,
        pcap_file::DataLink::IEEE802_11,
        65535,
        std::slice::from_ref(&eth),
    );
    files.push((wifi, "Ethernet captures only"));
    let big = dir.path().join("big.pcap");
    write_pcap(
        &big,
        pcap_file::DataLink::ETHERNET,
        65535,
        &[eth.clone(), vec![0x11; 1600]],
    );
    files.push((big, "over the 1514"));
    // Snaplen 64: the second frame was 100 bytes on the wire, 64 in the file.
    let cut = dir.path().join("cut.pcap");
    write_pcap(
        &cut,
        pcap_file::DataLink::ETHERNET,
        64,
        &[eth.clone(), vec![0x11; 64]],
    );
    let mut raw = std::fs::read(&cut).unwrap();
    let at = raw.len() - 64 - 4;
    raw[at..at + 4].copy_from_slice(&100u32.to_be_bytes());
    std::fs::write(&cut, raw).unwrap();
    files.push((cut, "cut to 64 of its 100 bytes"));
    for ((path, why), (mode, hold)) in files.iter().flat_map(|f| HOLDS.map(|h| (f, h))) {
        let out = dir.path().join("never.pcap");
        let line = linerate_usage_error(
            &[
                &[
                    "replay",
                    path.to_str().unwrap(),
                    "--pcap",
                    out.to_str().unwrap(),
                ],
                hold,
            ]
            .concat(),
        );
        assert!(line.contains(why), "{} {mode}: {line}", path.display());
        assert!(line.contains(path.to_str().unwrap()), "{line}");
        assert!(
            !out.exists(),
            "{}: a refused capture wrote {}",
            path.display(),
            out.display()
        );
    }
    let missing = linerate_usage_error(&["replay", "/nonexistent.pcap", "--null"]);
    assert!(missing.contains("/nonexistent.pcap"), "{missing}");
    let line = linerate_usage_error(&[
        "replay",
        good.to_str().unwrap(),
        "--null",
        "--speed",
        "fast",
    ]);
    assert!(line.contains("not a speed"), "{line}");
    let line = linerate_usage_error(&["replay", good.to_str().unwrap(), "--null", "--loop", "0"]);
    assert!(line.contains("--loop"), "{line}");
    // The receiver's stamp clock has nothing to read in a capture: refused, not ignored.
    let line =
        linerate_usage_error(&["replay", good.to_str().unwrap(), "--null", "--clock", "tai"]);
    assert!(line.contains("--clock"), "{line}");
}

#[cfg(target_os = "linux")]
mod lab {
    use std::process::Command;
    use std::time::Duration;

    use super::*;
    use common::frames::catcher::Catcher;
    use common::{replay_on_lab as replay, root_or_skip};

    /// The capture `tx --pcap` wrote (1000 frames, every field varied), replayed into the lab at
    /// max speed with one worker: tcpdump at the receive end catches every frame byte for byte,
    /// in order, once; the receive program (`--rx`, passing frames on to tcpdump) counts them
    /// as "other" (no signature).
    #[test]
    fn a_tx_capture_arrives_byte_for_byte_in_order_once() {
        if !root_or_skip("a_tx_capture_arrives_byte_for_byte_in_order_once") {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let source = varied_capture(dir.path());
        let want = frames(&source);
        let lab = common::lab("rp", 2);
        let catcher = Catcher::start(&lab, "tcpdump", dir.path().join("rx.pcap"));
        let r = replay(&lab, &source, &["--speed", "max", "--rx", "--rx-pass"]);
        let got = frames(&catcher.finish(want.len()));
        same_frames(&got, &want);
        assert_eq!(r["completed"], 1000);
        assert_eq!(r["rx"]["other"]["other_frames"], 1000, "{}", r["rx"]);
        assert_eq!(r["sink"]["packets"], 1000);
        assert_eq!(r["sink"]["lost"], 0);
        // Streamed from the file, copied into the port's buffers batch by batch.
        for backend in ["afxdp", "afpacket"] {
            let catcher = Catcher::start(&lab, "tcpdump", dir.path().join("rx.pcap"));
            let r = replay(
                &lab,
                &source,
                &[
                    "--from-file",
                    "--backend",
                    backend,
                    "--speed",
                    "max",
                    "--rx",
                    "--rx-pass",
                ],
            );
            assert_eq!(r["capture"]["mode"], "streamed");
            same_frames(&frames(&catcher.finish(want.len())), &want);
            assert_eq!(r["sink"]["packets"], 1000, "{backend}");
        }
    }

    /// A pcapng written by dumpcap at the lab's receive end (tcpdump 4.99 writes pcap only),
    /// replayed three times at its own timing (2x): the receive end sees its frames three
    /// times, in order, byte for byte; tcpdump converts the pcapng for the comparison.
    #[test]
    fn a_dumpcap_pcapng_loops_exactly_three_times() {
        if !root_or_skip("a_dumpcap_pcapng_loops_exactly_three_times") {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let lab = common::lab("rq", 2);
        let ng = dir.path().join("dumpcap.pcapng");
        let catcher = Catcher::start(&lab, "dumpcap", ng.clone());
        linerate_ok(&[
            "tx",
            "-q",
            "-i",
            &lab.sender,
            "--rx",
            "--rx-pass",
            "-n",
            "300",
            "--rate",
            "20k",
            "--vary",
            "src-port:inc:1-300",
            "--size-mode",
            "inc:64-363",
        ]);
        let ng = catcher.finish(300);
        let want = via_tcpdump(&ng, dir.path());
        assert_eq!(want.len(), 300, "dumpcap caught {} frames", want.len());
        let catcher = Catcher::start(&lab, "tcpdump", dir.path().join("rx.pcap"));
        let r = replay(
            &lab,
            &ng,
            &["--speed", "2x", "--loop", "3", "--rx", "--rx-pass"],
        );
        let got = frames(&catcher.finish(900));
        assert_eq!(r["capture"]["format"], "pcapng");
        assert_eq!(r["capture"]["speed"], "2x");
        same_frames(&got, &repeat(&want, 3));
        assert_eq!(r["sink"]["packets"], 900);
    }

    /// `--loop 3` sends exactly three times and `--count` stops exactly, on each Linux backend
    /// (live keeps the capture's frames in its frame map), loaded and streamed, counted by the
    /// lab's sink.
    #[test]
    fn loops_and_counts_are_exact_on_every_backend() {
        if !root_or_skip("loops_and_counts_are_exact_on_every_backend") {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let source = varied_capture(dir.path());
        let bytes: u64 = frames(&source).iter().map(|f| f.len() as u64).sum();
        let lab = common::lab("rl", 2);
        let runs = [
            ("afxdp", false),
            ("live", false),
            ("afpacket", false),
            ("afxdp", true),
            ("live", true),
            ("afpacket", true),
        ];
        let live =
            common::live_frames_or_skip("loops_and_counts_are_exact_on_every_backend (live)");
        for (backend, stream) in runs {
            if backend == "live" && !live {
                continue;
            }
            let hold: &[&str] = if stream { &["--from-file"] } else { &[] };
            let replay = |extra: &[&str]| replay(&lab, &source, &[extra, hold].concat());
            let r = replay(&["--backend", backend, "--speed", "max", "--loop", "3"]);
            let mode = if stream { "streamed" } else { "loaded" };
            assert_eq!(r["capture"]["mode"], mode, "{backend}");
            assert_eq!(r["sink"]["packets"], 3000, "{backend}: {}", r["sink"]);
            assert_eq!(r["sink"]["bytes"], 3 * bytes, "{backend}");
            assert_eq!(r["sink"]["lost"], 0, "{backend}");
            let r = replay(&[
                "--backend",
                backend,
                "--speed",
                "max",
                "--loop",
                "inf",
                "-n",
                "2500",
            ]);
            assert_eq!(r["sink"]["packets"], 2500, "{backend}: {}", r["sink"]);
            assert_eq!(r["submitted"], 2500, "{backend}");
        }
    }

    /// An interface's MTU bounds the capture's frames before anything is sent.
    #[test]
    fn frames_over_the_interface_mtu_are_refused() {
        if !root_or_skip("frames_over_the_interface_mtu_are_refused") {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let source = varied_capture(dir.path());
        let lab = common::lab("rm", 1);
        let set = |mtu: &str| {
            let out = Command::new("ip")
                .args(["link", "set", &lab.sender, "mtu", mtu])
                .output()
                .unwrap();
            assert!(out.status.success());
        };
        set("1000");
        // The stack may send a frame of its own as the MTU changes: count from after that.
        std::thread::sleep(Duration::from_millis(300));
        let before = lab.sink_counters().unwrap();
        let out = linerate(&[
            "replay",
            source.to_str().unwrap(),
            "-i",
            &lab.sender,
            "--speed",
            "max",
        ]);
        let sent = lab.sink_counters().unwrap().since(before).packets;
        set("1500");
        let line = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{line}");
        assert!(line.contains("MTU of 1000"), "{line}");
        assert_eq!(sent, 0);
    }
}

/// Issue 27 #17: a capture truncated by another process while it was streamed killed the replay
/// with SIGBUS (rc 135, no word, no report). The faulting page is replaced and the run ends
/// before a frame of it is sent: one line, exit 1, and the report so far.
#[test]
fn a_capture_cut_short_while_streamed_ends_the_run_with_the_report_so_far() {
    let dir = tempfile::tempdir().unwrap();
    let capture = common::frames::varied_capture(dir.path());
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args(["replay", capture.to_str().unwrap(), "--null", "--from-file"])
        .args(["--loop", "inf", "--speed", "max", "--json", "-q"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    // A replay that never notices would run forever: end it after 30 s so the test fails.
    let watchdog = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(30));
        // SAFETY: kill(2) on the child's pid; if it already exited, the signal goes nowhere
        // the test cares about (the pid is not reused within the test's run).
        unsafe { libc::kill(pid, libc::SIGKILL) };
    });
    std::thread::sleep(Duration::from_millis(500));
    std::fs::OpenOptions::new()
        .write(true)
        .open(&capture)
        .unwrap()
        .set_len(4096)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    drop(watchdog);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cut short (truncated) while it was streamed"),
        "{stderr}"
    );
    let report = common::json(&String::from_utf8_lossy(&out.stdout));
    assert!(report["completed"].as_u64().unwrap() > 0, "{report}");
}
