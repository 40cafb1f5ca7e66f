//! A capture on a place: an AF_PACKET socket made inside the port's network namespace (a
//! socket keeps the namespace it was made in, so its thread reads it from ours), read by a
//! thread of its own into a bounded store, and written out as a pcap or pcapng file.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use linerate_afpacket::CaptureSocket;
use linerate_port::savefile::{SaveFormat, SaveOptions, write_capture};

use crate::error::{Result, TestBedError};
use crate::thread::locked;

/// Frames one capture keeps (about 1.5 GB of 1518-byte frames would be too many for one
/// file answer; this is the most one holds).
pub const CAPTURE_FRAMES: usize = 1_000_000;
pub const CAPTURE_BYTES: usize = 256 << 20;

type Frames = Arc<Mutex<Vec<(SystemTime, Vec<u8>)>>>;

/// One port's capture: running or stopped, what it kept, and why it stopped by itself if it
/// did. Dropped, its thread stops.
#[derive(Debug, Default)]
pub struct PortCapture {
    running: Option<(Arc<AtomicBool>, std::thread::JoinHandle<()>)>,
    frames: Frames,
    failed: Arc<Mutex<Option<String>>>,
}

impl Drop for PortCapture {
    fn drop(&mut self) {
        self.stop();
    }
}

impl PortCapture {
    /// Starts capturing on `location` (`IFACE[@NETNS]`).
    pub fn start(location: &str) -> Result<PortCapture> {
        let (iface, netns) = match location.split_once('@') {
            Some((i, n)) => (i.to_owned(), Some(n)),
            None => (location.to_owned(), None),
        };
        let failed_open = |e: &dyn std::fmt::Display| {
            TestBedError::Capture(format!("capture on {location}: {e}"))
        };
        let socket = linerate_xdp::in_netns(netns, || Ok(CaptureSocket::open(&iface)))
            .map_err(|e| failed_open(&e))?
            .map_err(|e| failed_open(&e))?;
        let mut capture = PortCapture::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (frames, failed, halt) = (
            Arc::clone(&capture.frames),
            Arc::clone(&capture.failed),
            Arc::clone(&stop),
        );
        let at = location.to_owned();
        let thread = std::thread::Builder::new()
            .name("capture".into())
            .spawn(move || {
                if let Err(e) = read(&socket, &frames, &halt) {
                    *locked(&failed) = Some(format!("the capture on {at} stopped: {e}"));
                }
            })
            .map_err(|e| failed_open(&e))?;
        capture.running = Some((stop, thread));
        Ok(capture)
    }

    /// Stops the thread; the frames stay.
    pub fn stop(&mut self) {
        if let Some((stop, thread)) = self.running.take() {
            stop.store(true, Ordering::Relaxed);
            let _ = thread.join();
        }
    }

    /// It runs, and has not stopped by itself.
    pub fn running(&self) -> bool {
        self.running.is_some() && locked(&self.failed).is_none()
    }

    /// Why it stopped by itself, when it did.
    pub fn failed(&self) -> Option<String> {
        locked(&self.failed).clone()
    }

    /// What it kept so far, to write out without holding the capture (its thread goes on).
    pub fn kept(&self) -> Kept {
        Kept {
            frames: Arc::clone(&self.frames),
            failed: self.failed(),
        }
    }
}

/// The frames a capture kept, read while it may still run.
#[derive(Debug)]
pub struct Kept {
    frames: Frames,
    failed: Option<String>,
}

impl Kept {
    /// The frames as a file whose interface is named `interface`: each frame with its FCS as
    /// the wire carried it (so a frame of an OTG flow of size 128 is 128 bytes, as ixia-c's
    /// captures show them), in the host's byte order as libpcap writes. A capture that stopped
    /// on an error answers with it.
    pub fn file(&self, pcapng: bool, interface: &str) -> Result<Vec<u8>> {
        if let Some(why) = &self.failed {
            return Err(TestBedError::Capture(why.clone()));
        }
        let options = SaveOptions {
            format: if pcapng {
                SaveFormat::Pcapng
            } else {
                SaveFormat::Pcap
            },
            fcs: true,
            interface: Some(interface.to_owned()),
        };
        let frames = locked(&self.frames);
        let mut out = Vec::new();
        write_capture(
            &mut out,
            frames.iter().map(|(at, f)| (*at, f.as_slice())),
            &options,
        )
        .map_err(|e| TestBedError::Capture(format!("writing the capture: {e}")))?;
        Ok(out)
    }
}

fn read(
    socket: &CaptureSocket,
    frames: &Frames,
    stop: &AtomicBool,
) -> std::result::Result<(), linerate_afpacket::AfPacketError> {
    let mut buf = vec![0u8; 65536];
    let mut kept_bytes = 0usize;
    while !stop.load(Ordering::Relaxed) {
        let Some(frame) = socket.next(&mut buf)? else {
            continue;
        };
        let mut kept = locked(frames);
        if kept.len() < CAPTURE_FRAMES && kept_bytes + frame.len() <= CAPTURE_BYTES {
            kept_bytes += frame.len();
            kept.push((SystemTime::now(), frame));
        }
    }
    Ok(())
}
