//! Frames in capture files, for the tests that compare what was sent with what arrived: read
//! with pcap-file (not linerate's own loader), compared with a readable failure, and caught at
//! a lab's receive end by tcpdump or dumpcap.

use std::path::{Path, PathBuf};

/// Every frame of a pcap file, in order (pcap-file's reader; a pcapng goes through tcpdump
/// first).
pub fn read(path: &Path) -> Vec<Vec<u8>> {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut reader = pcap_file::pcap::PcapReader::new(file).expect("a pcap file");
    let mut out = Vec::new();
    while let Some(p) = reader.next_packet() {
        out.push(p.expect("a whole frame").data.into_owned());
    }
    out
}

/// The first difference between what was sent and what arrived, for a readable failure.
pub fn same(got: &[Vec<u8>], want: &[Vec<u8>]) {
    if let Some(i) = (0..got.len().min(want.len())).find(|&i| got[i] != want[i]) {
        panic!(
            "frame {i} differs: {} bytes arrived, {} sent",
            got[i].len(),
            want[i].len()
        );
    }
    assert_eq!(got.len(), want.len(), "frames arrived vs sent");
}

/// A capture of 1000 frames whose fields all vary: sizes 64-1518 at random, source ports
/// counting, destination addresses at random, random payload; written by `tx --pcap`.
pub fn varied_capture(dir: &Path) -> PathBuf {
    let path = dir.join("varied.pcap");
    super::linerate_ok(&[
        "tx",
        "-q",
        "--pcap",
        path.to_str().unwrap(),
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
    path
}

/// `frames` sent `times` times over.
pub fn repeat(frames: &[Vec<u8>], times: usize) -> Vec<Vec<u8>> {
    (0..times).flat_map(|_| frames.iter().cloned()).collect()
}

/// Catching frames at a lab's receive end (the lab is Linux's).
#[cfg(target_os = "linux")]
pub mod catcher {
    use std::io::Read;
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    /// A capture tool running in the lab's sink namespace on its receive end, started and
    /// ready ("listening on" / "Capturing on") before anything is sent.
    pub struct Catcher {
        child: Child,
        path: PathBuf,
    }

    impl Catcher {
        /// `tool` is tcpdump (pcap, ns stamps, inbound only) or dumpcap (pcapng, UDP only).
        pub fn start(lab: &linerate_lab::Lab, tool: &str, path: PathBuf) -> Self {
            let mut cmd = Command::new("ip");
            cmd.args(["netns", "exec", &lab.netns, tool, "-i", &lab.receiver]);
            match tool {
                // A 64 MiB buffer: at max speed on a loaded VM tcpdump falls behind, and the
                // kernel drops what its default 2 MiB cannot hold.
                "tcpdump" => cmd.args([
                    "-B",
                    "65536",
                    "-Q",
                    "in",
                    "-U",
                    "-n",
                    "--time-stamp-precision=nano",
                    "-w",
                ]),
                // dumpcap writes pcapng with µs timestamps by default. (Its "inbound" filter
                // caught 2 of 300 frames here; the replies the stack sends are not UDP.)
                _ => cmd.args(["-f", "udp", "-w"]),
            };
            let mut child = cmd.arg(&path).stderr(Stdio::piped()).spawn().expect(tool);
            let mut stderr = child.stderr.take().unwrap();
            let mut seen = Vec::new();
            let mut buf = [0u8; 256];
            loop {
                let text = String::from_utf8_lossy(&seen);
                if text.contains("listening on") || text.contains("Capturing on") {
                    break;
                }
                let n = stderr.read(&mut buf).unwrap();
                assert!(n > 0, "{tool} ended: {text}");
                seen.extend_from_slice(&buf[..n]);
            }
            // Keep reading its stderr so it never blocks on a full pipe.
            std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::stderr()));
            Self { child, path }
        }

        /// Waits until the file holds `expect` frames, then 300 ms more for any extra (a
        /// duplicate would show), stops the tool with SIGINT so it writes what it holds, and
        /// returns the file. Waiting on the file's length alone is not enough: on a loaded VM
        /// the tool can sit for half a second with frames still in its ring, and SIGINT ends it
        /// without reading them.
        pub fn finish(mut self, expect: usize) -> PathBuf {
            let start = Instant::now();
            while written(&self.path) < expect && start.elapsed() < Duration::from_secs(20) {
                std::thread::sleep(Duration::from_millis(50));
            }
            std::thread::sleep(Duration::from_millis(300));
            // SAFETY: kill(2) on the pid of a child this test spawned and has not reaped.
            unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
            self.child.wait().unwrap();
            self.path.clone()
        }
    }

    /// Whole frames in a capture file still being written (pcap or pcapng).
    fn written(path: &Path) -> usize {
        let Ok(bytes) = std::fs::read(path) else {
            return 0;
        };
        let mut n = 0;
        if let Ok(mut r) = pcap_file::pcap::PcapReader::new(&bytes[..]) {
            while let Some(Ok(_)) = r.next_packet() {
                n += 1;
            }
        } else if let Ok(mut r) = pcap_file::pcapng::PcapNgReader::new(&bytes[..]) {
            while let Some(Ok(block)) = r.next_block() {
                n += usize::from(matches!(block, pcap_file::pcapng::Block::EnhancedPacket(_)));
            }
        }
        n
    }
}
