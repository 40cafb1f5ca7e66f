//! The receive side of a port on Linux: the XDP receive program, attached before the first
//! frame and read after each run's drain.

use std::time::{Duration, Instant};

use linerate_rx::{Receiver, RxProgress, RxTotals};

use crate::error::{Result, SessionError};
use crate::flows::{FlowSent, RunFlows, against, lone_reports};
use crate::options::RxTarget;

/// Gives a loaded receive program its hosts (its `bpf/hosts.h` maps) before it takes a link.
pub type FillHosts<'a> = &'a dyn Fn(&linerate_hosts::HostTable) -> Result<()>;

/// The receive side of a port's runs.
#[derive(Debug)]
pub struct RunReceiver {
    rx: Receiver,
    /// Where it listens, for the report.
    pub at: String,
    /// It took the lab's receive end from the sink (which then counts nothing this run).
    pub lab_end: bool,
    /// The receive interface and its namespace, to check its link between runs.
    link: (String, Option<String>),
}

impl RunReceiver {
    /// Attaches the receiver for a port on `interface`: no `target.at` means the lab's receive
    /// end (when `interface` is a lab's sender), else `IFACE` or `IFACE@NETNS`.
    pub fn start(target: &RxTarget, interface: Option<&str>) -> Result<RunReceiver> {
        Self::start_with_hosts(target, interface, None)
    }

    /// [`RunReceiver::start`] with the program's hosts' maps given by `hosts` after it is
    /// loaded and before it sees a frame: a frame of a device's control plane that arrives
    /// as it takes the link is passed on to the device's daemon, not counted as another frame
    /// and lost (a BGP keepalive in the window between attaching and filling the maps).
    pub fn start_with_hosts(
        target: &RxTarget,
        interface: Option<&str>,
        hosts: Option<FillHosts<'_>>,
    ) -> Result<RunReceiver> {
        let config = linerate_rx::RxConfig::from(&target.receiver);
        let load = || -> Result<Receiver> {
            let rx = Receiver::load(config)?;
            if let Some(fill) = hosts {
                fill(&rx.hosts()?)?;
            }
            Ok(rx)
        };
        let Some(at) = &target.at else {
            let lab = match interface {
                Some(iface) => crate::sink::lab_of(iface)?,
                None => None,
            };
            let Some(lab) = lab else {
                return Err(SessionError::setting(
                    crate::Setting::Receiver,
                    "a receiver without an interface takes the lab's receive end, but the port \
                     is not a lab's sender: name the receive interface (IFACE[@NETNS])",
                ));
            };
            return Self::lab_end(&lab, load()?);
        };
        let (iface, netns) = crate::netns::split(crate::Setting::Receiver, at)?;
        // A lab's receive end named outright (`<name>1@<name>-sink`, a port of a two-port
        // test) carries the lab's sink: it is borrowed as `--rx` alone borrows it.
        if let Some(lab) = crate::sink::lab_at(iface, netns)? {
            return Self::lab_end(&lab, load()?);
        }
        let rx = load()?.attach_loaded(iface, netns, target.attach.into())?;
        Ok(RunReceiver {
            rx,
            at: at.clone(),
            lab_end: false,
            link: (iface.to_owned(), netns.map(str::to_owned)),
        })
    }

    /// A receiver alone (`linerate rx`) on `iface` in `netns`: a lab's receive end
    /// (`<name>1` in `<name>-sink`) is borrowed from its sink as a run borrows it, under the
    /// end's lock, and given back when the receiver is dropped (Ctrl-C and errors included); a
    /// plain `tx` to the lab may send to it meanwhile (it counts any sender's frames). Any other
    /// interface gets the program attached in `attach` mode.
    pub fn lone(
        iface: &str,
        netns: Option<&str>,
        attach: crate::options::RxAttach,
        receiver: &crate::options::ReceiverOptions,
    ) -> Result<RunReceiver> {
        let config = linerate_rx::RxConfig::from(receiver);
        if let Some(lab) = crate::sink::lab_at(iface, netns)? {
            return Self::lab_end_as(
                &lab,
                Receiver::load(config)?,
                linerate_xdp::HolderKind::Receiver,
            );
        }
        let rx = Receiver::attach(iface, netns, attach.into(), config)?;
        Ok(RunReceiver {
            rx,
            at: iface.to_owned(),
            lab_end: false,
            link: (iface.to_owned(), netns.map(str::to_owned)),
        })
    }

    /// Still attached: false once the receive interface was deleted (or moved to another
    /// namespace, or the lab whose end it borrowed taken down).
    pub fn attached(&self) -> bool {
        self.rx.attached()
    }

    /// Takes `lab`'s receive end from its sink for as long as the receiver lives.
    fn lab_end(lab: &linerate_lab::Lab, loaded: Receiver) -> Result<RunReceiver> {
        Self::lab_end_as(lab, loaded, linerate_xdp::HolderKind::Run)
    }

    /// Puts `loaded` (its maps filled) in place of the sink's program on `lab`'s receive end.
    fn lab_end_as(
        lab: &linerate_lab::Lab,
        loaded: Receiver,
        kind: linerate_xdp::HolderKind,
    ) -> Result<RunReceiver> {
        crate::sink::refuse_nat(lab)?;
        let rx = loaded.swap_loaded(&lab.pin_dir(), kind)?;
        Ok(RunReceiver {
            rx,
            at: "the lab's receive end".into(),
            lab_end: true,
            link: (lab.receiver.clone(), Some(lab.netns.clone())),
        })
    }

    /// Everything counted since the run began (or the receiver was attached), flows or not.
    /// Safe from any thread while a run is in progress: it only reads the program's maps.
    pub fn read(&self) -> Result<RxTotals> {
        Ok(self.rx.read()?)
    }

    /// [`RunReceiver::read`] of the flows `ids` only, for a caller that polls often.
    pub fn read_flows(&self, ids: &[u16]) -> Result<RxTotals> {
        Ok(self.rx.read_flows(ids)?)
    }

    /// Checks that the receive interface still carries frames to the program: not deleted,
    /// up, with carrier. A run on a dead receive link would read as 100 % loss, and a search
    /// would report "no rate meets it" for what it never measured.
    pub fn check_link(&self) -> Result<()> {
        let (iface, netns) = &self.link;
        let state = if self.rx.attached() {
            linerate_xdp::link_running(iface, netns.as_deref())?
        } else {
            None
        };
        let at = match netns {
            Some(ns) => format!("{iface} in {ns}"),
            None => iface.clone(),
        };
        match state {
            Some(true) => Ok(()),
            Some(false) => Err(SessionError::ReceiveLink(format!(
                "the receive interface {at} is down or has no carrier: nothing can arrive"
            ))),
            None => Err(SessionError::ReceiveLink(format!(
                "the receive interface {at} went away (deleted, or moved to another namespace)"
            ))),
        }
    }

    /// The maps of the hosts this receiver answers for (`bpf/hosts.h` in its program).
    pub fn hosts(&self) -> Result<linerate_hosts::HostTable> {
        Ok(self.rx.hosts()?)
    }

    /// Clears the counts, so the next run's sequence numbers start afresh.
    pub fn reset(&self) -> Result<()> {
        Ok(self.rx.reset()?)
    }

    /// What the receiver counted so far, for the status line (the flow table without the
    /// histograms); None if its maps cannot be read: the line then goes without it, and the
    /// report at the end says why.
    pub fn progress(&self) -> Option<RxProgress> {
        self.rx.progress().ok()
    }

    /// Waits up to `drain` for the frames still on their way (returns as soon as every flow has
    /// what was sent), then reads the flows against what each sent.
    pub fn finish(&self, tx: &[FlowSent], drain: Duration) -> Result<RunFlows> {
        let sent: u64 = tx.iter().map(|t| t.2).sum();
        let deadline = Instant::now() + drain;
        let mut totals = self.rx.read()?;
        while Instant::now() < deadline
            && totals.flows.iter().map(|f| f.unique()).sum::<u64>() < sent
        {
            std::thread::sleep(Duration::from_millis(10));
            totals = self.rx.read()?;
        }
        Ok(RunFlows {
            at: self.at.clone(),
            lab_end: self.lab_end,
            flows: against(tx, &totals),
            other: totals.global,
            foreign: crate::flows::foreign(tx, &totals),
        })
    }

    /// For frames the sender does not count per flow (a replayed capture): waits up to `drain`
    /// until the receive end has seen `frames` frames of any kind. Frames that do carry a
    /// signature (a capture of linerate's own traffic) are reported as a lone receiver does.
    pub fn finish_frames(&self, frames: u64, drain: Duration) -> Result<RunFlows> {
        let deadline = Instant::now() + drain;
        let mut totals = self.rx.read()?;
        while Instant::now() < deadline && totals.all_frames() < frames {
            std::thread::sleep(Duration::from_millis(10));
            totals = self.rx.read()?;
        }
        Ok(RunFlows {
            at: self.at.clone(),
            lab_end: self.lab_end,
            flows: lone_reports(&totals),
            other: totals.global,
            foreign: Default::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    /// The OTG server reads a session's receiver from its own thread while the run goes on.
    #[test]
    fn the_receiver_can_be_shared_across_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<super::RunReceiver>();
    }
}
