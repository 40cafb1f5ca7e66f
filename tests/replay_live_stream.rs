//! `linerate replay --stream --backend live`: a capture streamed from its mapped file through
//! the live program's rings of frame entries (crates/live/src/ring.rs), replayed into the veth
//! lab, where tcpdump catches it at the receive end byte for byte, in order, exactly once;
//! `--loop 3` sends it exactly three times and `--count` stops exactly, counted by the lab's
//! sink.

mod common;

#[cfg(target_os = "linux")]
mod lab {
    use std::path::Path;

    use super::common::frames::catcher::Catcher;
    use super::common::frames::{read as frames, repeat, same as same_frames, varied_capture};
    use super::common::{self, linerate_ok, root_or_skip};

    /// Streamed on live, as fast as the port goes unless the caller paces it.
    fn replay(lab: &linerate_lab::Lab, file: &Path, extra: &[&str]) -> serde_json::Value {
        let pace: &[&str] = if extra.contains(&"--rate") {
            &[]
        } else {
            &["--speed", "max"]
        };
        let live = ["--backend", "live", "--from-file"];
        common::replay_on_lab(lab, file, &[&live[..], extra, pace].concat())
    }

    /// Two captures written by `tx --pcap`: 1000 frames with every field varied (sizes
    /// 64-1518, so the ring's window is the whole frame), and 700 frames of 64 B whose source
    /// port alone counts (a window of a few bytes, the rest the template's) sent 7 times at max
    /// speed and paced, replayed with the receiver's MAC written over their own. One worker:
    /// tcpdump catches each byte for byte (addresses rewritten), in order, exactly once, and the
    /// report says "streamed". Then `--loop 3` and `--count` on the sink's counts.
    #[test]
    fn a_streamed_capture_arrives_byte_for_byte_in_order_once_and_loops_exactly() {
        if !root_or_skip("a_streamed_capture_arrives_byte_for_byte_in_order_once_and_loops_exactly")
        {
            return;
        }
        if !super::common::live_frames_or_skip(
            "a_streamed_capture_arrives_byte_for_byte_in_order_once_and_loops_exactly",
        ) {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let varied = varied_capture(dir.path());
        let small = dir.path().join("small.pcap");
        linerate_ok(&[
            "tx",
            "-q",
            "--pcap",
            small.to_str().unwrap(),
            "-n",
            "700",
            "--size",
            "64",
            "--vary",
            "src-port:inc:1-700",
        ]);
        let lab = common::lab("rs", 2);
        let mac = linerate_wire::format_mac(&lab.receiver_mac);
        // A call takes at most 4095 frames (a ring of 4096 entries): 4900 frames at max speed
        // go round the ring in two calls, and paced, in many short ones.
        for (source, loops, rate) in [
            (&varied, 1, None),
            (&small, 7, None),
            (&small, 7, Some("500k")),
        ] {
            let mut want = frames(source);
            for f in &mut want {
                f[..6].copy_from_slice(&lab.receiver_mac);
            }
            let want = repeat(&want, loops);
            let catcher = Catcher::start(&lab, "tcpdump", dir.path().join("rx.pcap"));
            let loops = loops.to_string();
            // The receive program passes the frames on to tcpdump (the lab's sink drops them).
            let mut extra = vec!["--dst-mac", &mac, "--loop", &loops, "--rx", "--rx-pass"];
            if let Some(rate) = rate {
                extra.extend(["--rate", rate]);
            }
            let r = replay(&lab, source, &extra);
            let got = frames(&catcher.finish(want.len()));
            same_frames(&got, &want);
            assert_eq!(r["capture"]["mode"], "streamed", "{}", source.display());
            assert_eq!(r["completed"], want.len(), "{}", source.display());
            assert_eq!(r["workers"].as_array().unwrap().len(), 1);
        }
        let bytes: u64 = frames(&varied).iter().map(|f| f.len() as u64).sum();
        let r = replay(&lab, &varied, &["--loop", "3"]);
        assert_eq!(r["sink"]["packets"], 3000, "{}", r["sink"]);
        assert_eq!(r["sink"]["bytes"], 3 * bytes);
        assert_eq!(r["sink"]["lost"], 0);
        // Two workers, endless, stopped by the count inside a lap.
        let r = replay(
            &lab,
            &varied,
            &["--loop", "inf", "-n", "2500", "--cores", "0,1"],
        );
        assert_eq!(r["sink"]["packets"], 2500, "{}", r["sink"]);
        assert_eq!(r["submitted"], 2500);
        assert_eq!(r["capture"]["mode"], "streamed");
    }

    /// Frames longer than the live program's 2,048-byte window cannot stream there: a capture
    /// of 3,000-byte frames on a lab whose sender carries them (MTU 3500) is refused in one line
    /// (exit 2) naming the backends that take it, and nothing reaches the sink.
    #[test]
    fn frames_over_the_live_window_are_refused_in_one_line() {
        if !root_or_skip("frames_over_the_live_window_are_refused_in_one_line") {
            return;
        }
        if !super::common::live_frames_or_skip(
            "frames_over_the_live_window_are_refused_in_one_line",
        ) {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let jumbo = dir.path().join("jumbo.pcap");
        let file = std::fs::File::create(&jumbo).unwrap();
        let mut w = pcap_file::pcap::PcapWriter::new(file).unwrap();
        for i in 0..10u8 {
            let mut f = vec![i; 3000];
            f[12..14].copy_from_slice(&[0x88, 0xb5]);
            w.write_packet(&pcap_file::pcap::PcapPacket::new(
                std::time::Duration::ZERO,
                3000,
                &f,
            ))
            .unwrap();
        }
        drop(w);
        let lab = common::lab("rj", 1);
        let mtu = std::process::Command::new("ip")
            .args(["link", "set", &lab.sender, "mtu", "3500"])
            .output()
            .unwrap();
        assert!(
            mtu.status.success(),
            "{}",
            String::from_utf8_lossy(&mtu.stderr)
        );
        let before = lab.sink_counters().unwrap();
        let line = common::linerate_usage_error(&[
            "replay",
            jumbo.to_str().unwrap(),
            "-i",
            &lab.sender,
            "--backend",
            "live",
            "--from-file",
            "--speed",
            "max",
        ]);
        assert!(line.contains("2048") && line.contains("afxdp"), "{line}");
        assert_eq!(lab.sink_counters().unwrap().since(before).packets, 0);
    }
}
