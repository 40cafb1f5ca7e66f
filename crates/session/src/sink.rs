//! Where a port's frames are counted without a receiver: a lab's pinned sink (when the port is
//! a lab's sender end) or a sink attached for one command; what it counted against a run; and
//! the lab a command makes for itself.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use crate::error::Result;

/// Reads a sink's (packets, bytes).
pub type Counters = Box<dyn Fn() -> Result<(u64, u64)> + Send + Sync>;

/// A sink counting every frame that arrives: a lab's (its name, the MAC and addresses of its
/// ends) or an interface's.
pub struct Sink {
    pub name: String,
    pub peer_mac: [u8; 6],
    pub ips: (Ipv4Addr, Ipv4Addr),
    pub counters: Counters,
    /// Who holds the lab's receive end when a lone receiver (`linerate rx`) does: it counts the
    /// run's frames there, the sink counts nothing, and the run reports no sink count.
    pub lone_receiver: Option<String>,
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sink").field("name", &self.name).finish()
    }
}

/// What arrived at a lab's sink during a run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SinkResult {
    pub lab: String,
    pub packets: u64,
    pub bytes: u64,
    /// Completed at the sender but not counted at the sink; None when the sink counted more than
    /// this run sent (another sender shares it), so the loss cannot be known.
    pub lost: Option<u64>,
    /// Frames the sink counted beyond what this run sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<u64>,
    /// Why (nearly) nothing was counted, when the frames say: ARP the sink does not count, or
    /// a destination MAC that is not the lab's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl SinkResult {
    /// What a lab's receive end counted against what the sender completed.
    pub fn new(lab: &str, packets: u64, bytes: u64, completed: u64) -> Self {
        SinkResult {
            lab: lab.to_owned(),
            packets,
            bytes,
            lost: completed.checked_sub(packets),
            extra: packets.checked_sub(completed).filter(|&n| n > 0),
            hint: None,
        }
    }

    /// When nine frames in ten or more went uncounted, says why if `first` (the run's first
    /// frame) shows it: the lab's sink passes ARP to its namespace's stack uncounted, and
    /// counts only frames to `peer_mac` (the MAC the lab's sender end sends to) or to a group.
    pub fn explain(&mut self, first: &[u8], peer_mac: [u8; 6]) {
        let completed = self.packets + self.lost.unwrap_or(0);
        if completed == 0 || self.packets * 10 > completed || first.len() < 14 {
            return;
        }
        let mut ethertype = u16::from_be_bytes([first[12], first[13]]);
        if ethertype == 0x8100 && first.len() >= 18 {
            ethertype = u16::from_be_bytes([first[16], first[17]]);
        }
        let dst: [u8; 6] = first[..6].try_into().expect("six bytes");
        self.hint = if ethertype == 0x0806 {
            Some(format!(
                "the frames are ARP, which the sink of lab {} passes to its namespace's stack without counting: give --rx to count them at the receive end",
                self.lab
            ))
        } else if dst[0] & 1 == 0 && dst != peer_mac {
            Some(format!(
                "the frames go to {}, not to lab {}'s {}: the lab's end drops them; give --dst-mac {} (or rewrite the capture's addresses)",
                linerate_wire::format_mac(&dst),
                self.lab,
                linerate_wire::format_mac(&peer_mac),
                linerate_wire::format_mac(&peer_mac)
            ))
        } else {
            None
        };
    }

    /// The line that says why there is no loss figure, when there is none.
    pub fn shared_warning(&self) -> Option<String> {
        self.extra.map(|extra| {
            format!(
                "the sink of lab {} counted {extra} frame(s) more than this run sent: another \
                 sender shares it, so the loss is unknown",
                self.lab
            )
        })
    }
}

impl Sink {
    /// The line a run that sends to a lab whose receive end a lone receiver holds says once.
    pub fn lone_receiver_note(&self) -> Option<String> {
        self.lone_receiver.as_ref().map(|who| {
            format!(
                "lab {}'s receive end is held by {who}, which counts this run's frames there; the sink counts nothing meanwhile, so this report has no sink count",
                self.name
            )
        })
    }

    /// [`Sink::of_lab`] for a command that needs the sink's count (a sweep): refused while a
    /// lone receiver holds the lab's receive end.
    pub fn of_lab_counting(iface: &str) -> Result<Option<Sink>> {
        match Self::of_lab(iface)? {
            Some(sink) if sink.lone_receiver.is_some() => Err(crate::SessionError::Usage(format!(
                "lab {}'s receive end is held by a lone receiver (`linerate rx`), which counts what arrives: this command counts at the sink; wait for the receiver to end, or use another lab",
                sink.name
            ))),
            sink => Ok(sink),
        }
    }

    /// Reads the counters now.
    pub fn read(&self) -> Result<(u64, u64)> {
        (self.counters)()
    }

    /// Waits until the sink has seen everything the sender completed (frames still crossing
    /// the veth pair when the last completion came back), or until its count stops moving.
    pub fn settle(&self, before: (u64, u64), completed: u64) -> Result<SinkResult> {
        let deadline = Instant::now() + Duration::from_secs(3);
        let mut last = self.read()?;
        let mut still_since = Instant::now();
        loop {
            let got = last.0 - before.0;
            if got >= completed
                || Instant::now() >= deadline
                || still_since.elapsed() > Duration::from_millis(300)
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
            let now = self.read()?;
            if now != last {
                still_since = Instant::now();
            }
            last = now;
        }
        // Wrapping: a counter that went backwards (the sink was re-attached) reads as a huge
        // extra.
        Ok(SinkResult::new(
            &self.name,
            last.0.wrapping_sub(before.0),
            last.1.wrapping_sub(before.1),
            completed,
        ))
    }
}

/// A lab made for one command, removed when dropped.
pub struct TempLab {
    pub sender: String,
    #[cfg(target_os = "linux")]
    _guard: linerate_lab::LabGuard,
    #[cfg(target_os = "macos")]
    _guard: crate::macos::FethGuard,
}

impl std::fmt::Debug for TempLab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TempLab")
            .field("sender", &self.sender)
            .finish()
    }
}

impl TempLab {
    /// A lab of `queues` queues (a feth pair on macOS: one queue per end, whatever `queues`
    /// says), named `name` or a name of its own.
    #[cfg(target_os = "linux")]
    pub fn up(name: Option<&str>, queues: u32) -> Result<TempLab> {
        let config = linerate_lab::LabConfig {
            name: name.map_or_else(|| linerate_lab::unique_name("sw"), str::to_owned),
            queues,
        };
        let guard = linerate_lab::LabGuard::up(&config)?;
        Ok(TempLab {
            sender: guard.sender.clone(),
            _guard: guard,
        })
    }

    #[cfg(target_os = "macos")]
    pub fn up(name: Option<&str>, _queues: u32) -> Result<TempLab> {
        let guard = crate::macos::FethGuard::up(name)?;
        Ok(TempLab {
            sender: guard.lab.sender.clone(),
            _guard: guard,
        })
    }

    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    pub fn up(_name: Option<&str>, _queues: u32) -> Result<TempLab> {
        Err(crate::SessionError::setting(
            crate::Setting::Lab,
            "a lab needs Linux (network namespaces, veth, XDP): send on an interface instead",
        ))
    }
}

/// The lab whose sender end is `iface`, if it is one.
#[cfg(target_os = "linux")]
pub fn lab_of(iface: &str) -> Result<Option<linerate_lab::Lab>> {
    match iface.strip_suffix('0') {
        Some(name) => lab_where(name, |lab| lab.sender == iface),
        None => Ok(None),
    }
}

/// The lab whose receive end is `iface` in `netns` (`<name>1` in `<name>-sink`), if it is one.
#[cfg(target_os = "linux")]
pub fn lab_at(iface: &str, netns: Option<&str>) -> Result<Option<linerate_lab::Lab>> {
    match (iface.strip_suffix('1'), netns) {
        (Some(name), Some(ns)) => lab_where(name, |lab| lab.receiver == iface && lab.netns == ns),
        _ => Ok(None),
    }
}

/// Lab `name` when there is one and `is_it` holds; a name no lab may have, or parts of one
/// linerate did not make, are no lab.
#[cfg(target_os = "linux")]
fn lab_where(
    name: &str,
    is_it: impl Fn(&linerate_lab::Lab) -> bool,
) -> Result<Option<linerate_lab::Lab>> {
    use linerate_lab::{Lab, LabError};
    if linerate_lab::validate_name(name).is_err() {
        return Ok(None);
    }
    match Lab::find(name) {
        Ok(Some(lab)) if is_it(&lab) => Ok(Some(lab)),
        Ok(_) => Ok(None),
        Err(LabError::Incomplete { .. } | LabError::NotOurs { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// What runs on `lab`'s receive end, after putting the sink back if a receiver that died left
/// its program there (said in one line on stderr).
#[cfg(target_os = "linux")]
pub fn receive_end(lab: &linerate_lab::Lab) -> Result<linerate_xdp::ReceiveEnd> {
    Ok(said(lab.receive_end()?, &lab.name))
}

/// `end` as found on lab `name`'s receive end, with the line a sink put back deserves.
#[cfg(target_os = "linux")]
fn said(end: linerate_xdp::ReceiveEnd, name: &str) -> linerate_xdp::ReceiveEnd {
    if end == linerate_xdp::ReceiveEnd::Restored {
        eprintln!(
            "linerate: lab {name}'s receive end still ran the program of a receiver that was killed before it could put the sink back: the sink is back and counts from now"
        );
    }
    end
}

#[cfg(target_os = "linux")]
impl Sink {
    /// The pinned sink of the lab whose sender end is `iface`, if it is one. A sink that does
    /// not run would report every frame lost: a running receiver's program there is refused,
    /// and one left by a receiver that died is replaced by the sink first.
    pub fn of_lab(iface: &str) -> Result<Option<Sink>> {
        let Some(lab) = lab_of(iface)? else {
            return Ok(None);
        };
        refuse_nat(&lab)?;
        let sink = linerate_xdp::PinnedSink::open(&lab.pin_dir())?;
        let mut lone_receiver = None;
        if said(sink.receive_end()?, &lab.name) == linerate_xdp::ReceiveEnd::InUse {
            let by = linerate_xdp::ReceiveEndLock::holder(&lab.pin_dir());
            match by {
                // A lone receiver counts whatever arrives: this run's frames are its to count.
                Some(h) if h.kind == linerate_xdp::HolderKind::Receiver => {
                    lone_receiver = Some(h.to_string());
                }
                by => {
                    return Err(linerate_xdp::XdpError::ReceiveEndBusy {
                        lab: lab.name.clone(),
                        by,
                    }
                    .into());
                }
            }
        }
        Ok(Some(Sink {
            name: lab.name.clone(),
            peer_mac: lab.dst_mac(),
            ips: (lab.sender_ip, lab.receiver_ip),
            counters: Box::new(move || {
                let c = sink.counters()?;
                Ok((c.packets, c.bytes))
            }),
            lone_receiver,
        }))
    }

    /// Attaches the XDP sink to `iface` (in `netns`) for as long as the returned side lives.
    pub fn attach(iface: &str, netns: Option<&str>) -> Result<Sink> {
        let sink = linerate_xdp::Sink::attach(iface, netns, linerate_xdp::AttachMode::Drv)?;
        Ok(Sink {
            name: iface.to_owned(),
            peer_mac: [0xff; 6],
            ips: linerate_stream::Limits::default().default_ipv4,
            counters: Box::new(move || {
                let c = sink.counters()?;
                Ok((c.packets, c.bytes))
            }),
            lone_receiver: None,
        })
    }
}

/// A NAT lab's receive end is the servers' host: there is no sink to count at or borrow.
#[cfg(target_os = "linux")]
pub(crate) fn refuse_nat(lab: &linerate_lab::Lab) -> Result<()> {
    if lab
        .dut
        .as_ref()
        .is_some_and(|d| d.kind == linerate_lab::DutKind::Nat)
    {
        return Err(crate::SessionError::Usage(format!(
            "lab {} has the NAT DUT: its receive end is the servers' host, with no sink to count at; send stateful traffic there with `linerate tcp client` (docs/stateful.md), or bring the lab up with another --dut",
            lab.name
        )));
    }
    Ok(())
}

/// A lab's own sink, read by `linerate sink` on the lab's receive end: the sink stays on the
/// link (nothing is attached or swapped), and the end's lock is held for as long as this lives,
/// so no receiver takes the end from under the count (it is refused, naming `linerate sink`).
#[cfg(target_os = "linux")]
#[derive(Debug)]
pub struct LabSink {
    pub lab: linerate_lab::Lab,
    sink: linerate_xdp::PinnedSink,
    _lock: linerate_xdp::ReceiveEndLock,
}

#[cfg(target_os = "linux")]
impl LabSink {
    /// The sink of the lab whose receive end is `iface` in `netns`, if it is one. A receiver that
    /// died on the end is replaced by the sink first; a running one is in the way (refused).
    pub fn at(iface: &str, netns: Option<&str>) -> Result<Option<LabSink>> {
        let Some(lab) = lab_at(iface, netns)? else {
            return Ok(None);
        };
        refuse_nat(&lab)?;
        let dir = lab.pin_dir();
        let sink = linerate_xdp::PinnedSink::open(&dir)?;
        if said(sink.receive_end()?, &lab.name) == linerate_xdp::ReceiveEnd::InUse {
            return Err(linerate_xdp::XdpError::ReceiveEndBusy {
                lab: lab.name.clone(),
                by: linerate_xdp::ReceiveEndLock::holder(&dir),
            }
            .into());
        }
        let lock = linerate_xdp::ReceiveEndLock::take(&dir, linerate_xdp::HolderKind::Sink)?;
        Ok(Some(LabSink {
            lab,
            sink,
            _lock: lock,
        }))
    }

    /// The lab sink's counters so far (since `lab up`), summed over CPUs.
    pub fn counters(&self) -> Result<linerate_xdp::SinkCounters> {
        Ok(self.sink.counters()?)
    }

    /// The receive interface is still there (the lab was not taken down meanwhile).
    pub fn present(&self) -> Result<bool> {
        Ok(linerate_xdp::link_running(&self.lab.receiver, Some(&self.lab.netns))?.is_some())
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
impl Sink {
    pub fn of_lab(_iface: &str) -> Result<Option<Sink>> {
        Ok(None)
    }

    pub fn attach(_iface: &str, _netns: Option<&str>) -> Result<Sink> {
        Err(crate::SessionError::setting(
            crate::Setting::SinkInterface,
            "counting at an interface needs Linux (XDP)",
        ))
    }
}

#[cfg(test)]
mod tests {

    /// Issue 41: a run the sink counted (nearly) none of says why when its frames show it.
    #[test]
    fn nothing_counted_is_explained_by_the_frames() {
        let lab_mac = [2, 0, 0, 0, 0, 1];
        let frame = |dst: [u8; 6], ethertype: u16| {
            let mut f = dst.to_vec();
            f.extend([2, 0, 0, 0, 0, 9]);
            f.extend(ethertype.to_be_bytes());
            f.resize(60, 0);
            f
        };
        let hint = |counted, dst, ethertype| {
            let mut r = SinkResult::new("lr", counted, 0, 100);
            r.explain(&frame(dst, ethertype), lab_mac);
            r.hint
        };
        let foreign = hint(0, [0, 0x1b, 0x21, 1, 2, 3], 0x0800).unwrap();
        assert!(
            foreign.contains("00:1b:21:01:02:03")
                && foreign.contains("--dst-mac 02:00:00:00:00:01"),
            "{foreign}"
        );
        assert!(hint(0, lab_mac, 0x0806).unwrap().contains("give --rx"));
        // Counted, addressed to the lab, or to a group: nothing to say.
        assert_eq!(hint(95, [0, 0x1b, 0x21, 1, 2, 3], 0x0800), None);
        assert_eq!(hint(0, lab_mac, 0x0800), None);
        assert_eq!(hint(0, [0xff; 6], 0x0800), None);
    }

    use super::*;

    #[test]
    fn the_loss_is_known_only_when_the_sink_saw_no_more_than_was_sent() {
        let r = SinkResult::new("l", 90, 9000, 100);
        assert_eq!((r.lost, r.extra), (Some(10), None));
        assert!(r.shared_warning().is_none());
        let r = SinkResult::new("l", 100, 0, 100);
        assert_eq!((r.lost, r.extra), (Some(0), None));
        let r = SinkResult::new("l", 105, 0, 100);
        assert_eq!((r.lost, r.extra), (None, Some(5)));
        assert!(r.shared_warning().unwrap().contains("5 frame(s) more"));
    }

    #[test]
    fn settle_waits_for_the_frames_still_on_their_way() {
        // Ten more frames arrive at each read, up to the 100 the sender completed.
        let seen = std::sync::atomic::AtomicU64::new(0);
        let sink = Sink {
            name: "lab".into(),
            peer_mac: [0; 6],
            ips: (Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST),
            counters: Box::new(move || {
                let n = (seen.load(std::sync::atomic::Ordering::Relaxed) + 10).min(100);
                seen.store(n, std::sync::atomic::Ordering::Relaxed);
                Ok((n, n * 64))
            }),
            lone_receiver: None,
        };
        let r = sink.settle((0, 0), 100).unwrap();
        assert_eq!(
            (r.packets, r.bytes, r.lost, r.extra),
            (100, 6400, Some(0), None)
        );
    }
}
