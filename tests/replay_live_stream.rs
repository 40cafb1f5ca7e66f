//! `linerate replay --stream --backend live`: a capture streamed from its mapped file through
//! the live program's rings of frame entries (crates/live/src/ring.rs), replayed into the veth
//! lab, where tcpdump catches it at the receive end byte for byte, in order, exactly once;
//! `--loop 3` sends it exactly three times and `--count` stops exactly, counted by the lab's
//! sink. (Helpers as in tests/replay.rs.)

mod common;

#[cfg(target_os = "linux")]
mod lab {
    use std::io::Read;
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    use super::common::{self, json, linerate_ok, root_or_skip};

    /// Every frame of a pcap file, in order.
    fn frames(path: &Path) -> Vec<Vec<u8>> {
        let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut reader = pcap_file::pcap::PcapReader::new(file).expect("a pcap file");
        let mut out = Vec::new();
        while let Some(p) = reader.next_packet() {
            out.push(p.expect("a whole frame").data.into_owned());
        }
        out
    }

    /// The first difference between what was sent and what arrived, for a readable failure.
    fn same_frames(got: &[Vec<u8>], want: &[Vec<u8>]) {
        if let Some(i) = (0..got.len().min(want.len())).find(|&i| got[i] != want[i]) {
            panic!(
                "frame {i} differs: {} bytes arrived, {} sent",
                got[i].len(),
                want[i].len()
            );
        }
        assert_eq!(got.len(), want.len(), "frames arrived vs sent");
    }

    /// tcpdump in the lab's sink namespace on its receive end, ready before anything is sent.
    struct Catcher {
        child: Child,
        path: PathBuf,
    }

    impl Catcher {
        fn start(lab: &linerate_lab::Lab, path: PathBuf) -> Self {
            let mut child = Command::new("ip")
                .args(["netns", "exec", &lab.netns, "tcpdump", "-i", &lab.receiver])
                // A 64 MiB buffer: at max speed on a loaded VM tcpdump falls behind.
                .args(["-B", "65536", "-Q", "in", "-U", "-n", "-w"])
                .arg(&path)
                .stderr(Stdio::piped())
                .spawn()
                .expect("tcpdump is installed (scripts/setup.sh)");
            let mut stderr = child.stderr.take().unwrap();
            let mut seen = Vec::new();
            let mut buf = [0u8; 256];
            while !String::from_utf8_lossy(&seen).contains("listening on") {
                let n = stderr.read(&mut buf).unwrap();
                assert!(n > 0, "tcpdump ended: {}", String::from_utf8_lossy(&seen));
                seen.extend_from_slice(&buf[..n]);
            }
            std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::stderr()));
            Self { child, path }
        }

        /// Waits until the file holds `expect` frames, then 300 ms more for any extra (a
        /// duplicate would show), and stops tcpdump with SIGINT so it writes what it holds.
        fn finish(mut self, expect: usize) -> Vec<Vec<u8>> {
            let start = Instant::now();
            while written(&self.path) < expect && start.elapsed() < Duration::from_secs(20) {
                std::thread::sleep(Duration::from_millis(50));
            }
            std::thread::sleep(Duration::from_millis(300));
            // SAFETY: kill(2) on the pid of a child this test spawned and has not reaped.
            unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
            self.child.wait().unwrap();
            frames(&self.path)
        }
    }

    /// Whole frames in a pcap file still being written.
    fn written(path: &Path) -> usize {
        let Ok(bytes) = std::fs::read(path) else {
            return 0;
        };
        let mut n = 0;
        if let Ok(mut r) = pcap_file::pcap::PcapReader::new(&bytes[..]) {
            while let Some(Ok(_)) = r.next_packet() {
                n += 1;
            }
        }
        n
    }

    fn replay(lab: &linerate_lab::Lab, file: &Path, extra: &[&str]) -> serde_json::Value {
        let mut args = vec![
            "replay",
            file.to_str().unwrap(),
            "-i",
            &lab.sender,
            "--backend",
            "live",
            "--stream",
            "--json",
            "-q",
        ];
        args.extend_from_slice(extra);
        // As fast as the port goes unless the caller paces it.
        if !extra.contains(&"--rate") {
            args.extend_from_slice(&["--speed", "max"]);
        }
        json(&linerate_ok(&args))
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
        let dir = tempfile::tempdir().unwrap();
        let varied = dir.path().join("varied.pcap");
        linerate_ok(&[
            "tx",
            "-q",
            "--pcap",
            varied.to_str().unwrap(),
            "-n",
            "1000",
            "--size-mode",
            "random:64-1518",
            "--vary",
            "src-port:inc:1000-1999",
            "--vary",
            "dst-ip:random:198.18.0.1-198.18.0.254",
            "--payload",
            "random:7",
        ]);
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
            let want: Vec<Vec<u8>> = (0..loops).flat_map(|_| want.iter().cloned()).collect();
            let catcher = Catcher::start(&lab, dir.path().join("rx.pcap"));
            let loops = loops.to_string();
            // The receive program passes the frames on to tcpdump (the lab's sink drops them).
            let mut extra = vec!["--dst-mac", &mac, "--loop", &loops, "--rx", "--rx-pass"];
            if let Some(rate) = rate {
                extra.extend(["--rate", rate]);
            }
            let r = replay(&lab, source, &extra);
            let got = catcher.finish(want.len());
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
}
