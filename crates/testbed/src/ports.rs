//! Ports of this machine without hosts: every port is a place that sends its own streams and
//! counts those sent toward it, all at once — flows between ports (OTG's `tx_rx.port`) that
//! leave from several ports. A stream's `from` and `to` name its places; its frames are its
//! own headers (the port's MAC, a lab's addresses where it leaves a lab's sender end).

use std::sync::Arc;

use linerate_engine::FlowControl;
use linerate_session::{PortOptions, PortRun, PortSession, RunOptions, RunReceiver, Session};
use linerate_stream::{Plan, StreamSpec};

use crate::FlowAt;
use crate::bed::{BedRun, BedSpec, Places};
use crate::error::{Result, TestBedError};

#[derive(Debug)]
pub(crate) struct LocalPorts {
    session: Session,
    /// Each port's location, `IFACE[@NETNS]`, in session order.
    places: Vec<String>,
    runs: Vec<PortRun>,
    plans: Vec<Plan>,
}

impl LocalPorts {
    /// Opens every port (port i's workers on core `cores[i % len]`, as hosts' ports are placed)
    /// and, when the spec asks for receivers, attaches one on each: it counts what the other
    /// ports send toward it.
    pub(crate) fn open(spec: &BedSpec) -> Result<LocalPorts> {
        let Places::Ports { ports, capture } = &spec.places else {
            unreachable!("opened for ports");
        };
        let places: Vec<String> = ports.iter().map(|(at, _)| at.clone()).collect();
        if let Some(at) = places
            .iter()
            .find(|at| crate::agents::agent_of(at).is_some())
        {
            return Err(TestBedError::usage(format!(
                "port {at} is an agent's: flows between ports run on this machine's ports; \
                 between agents' ports, give the ports devices and the flows their addresses"
            )));
        }
        for (i, at) in places.iter().enumerate() {
            if places[..i].contains(at) {
                return Err(TestBedError::usage(format!("port {at} is named twice")));
            }
        }
        let (cores, shared) = linerate_session::place_ports(&places, &spec.port.cores);
        if let Some(shared) = shared {
            eprintln!("linerate: warning: {shared}");
        }
        let options: Vec<PortOptions> = ports
            .iter()
            .zip(cores)
            .map(|((at, link), core)| PortOptions {
                interface: Some(at.clone()),
                cores: vec![core],
                link_speed: link.or(spec.port.link_speed),
                ..spec.port.clone()
            })
            .collect();
        let mut session = Session::open(&options)?;
        if let Some(rx) = &spec.rx {
            for (i, at) in places.iter().enumerate() {
                let mut rx = rx.clone();
                // A capture needs the frames to reach the stack.
                rx.receiver.pass |= capture.contains(at);
                session
                    .port_mut(i)
                    .receive_here(&rx)
                    .map_err(|e| e.context(format!("attaching the receiver on {at}")))?;
            }
        }
        Ok(LocalPorts {
            session,
            places,
            runs: Vec::new(),
            plans: Vec::new(),
        })
    }

    pub(crate) fn places(&self) -> Vec<String> {
        self.places.clone()
    }

    /// The place `name` names, for stream `stream`'s `key` (`from`, `to`).
    fn place(&self, stream: &StreamSpec, key: &str, name: &str) -> Result<usize> {
        self.places.iter().position(|p| p == name).ok_or_else(|| {
            TestBedError::usage(format!(
                "stream {}: {key} {name:?} is not a port of the test bed ({})",
                stream.name,
                self.places.join(", ")
            ))
        })
    }

    /// Each sending place's run, in place order, and the streams of each by their index in
    /// `streams`.
    fn runs(&self, streams: &[StreamSpec]) -> Result<(Vec<PortRun>, Vec<Vec<usize>>)> {
        let mut runs: Vec<(PortRun, Vec<usize>)> = Vec::new();
        for (i, s) in streams.iter().enumerate() {
            let Some(from) = &s.from else {
                return Err(TestBedError::usage(format!(
                    "stream {}: on several ports every stream names the port it leaves from \
                     (its from)",
                    s.name
                )));
            };
            let tx = self.place(s, "from", from)?;
            let rx =
                s.to.as_deref()
                    .map(|to| self.place(s, "to", to))
                    .transpose()?;
            if rx == Some(tx) {
                return Err(TestBedError::usage(format!(
                    "stream {}: it goes to the port it leaves from ({from}), whose receiver does \
                     not count what the port sends: give the far end of the link",
                    s.name
                )));
            }
            // Its places are the bed's to know: the port compiles the frame alone.
            let spec = StreamSpec {
                from: None,
                to: None,
                ..s.clone()
            };
            match runs.iter_mut().find(|(r, _)| r.port == tx) {
                Some((r, order)) => {
                    r.streams.push(spec);
                    r.to.push(rx);
                    order.push(i);
                }
                None => runs.push((
                    PortRun {
                        port: tx,
                        streams: vec![spec],
                        to: vec![rx],
                    },
                    vec![i],
                )),
            }
        }
        runs.sort_by_key(|(r, _)| r.port);
        Ok(runs.into_iter().unzip())
    }

    /// Compiles each place's streams, flows numbered across the places (or as `ids` gives
    /// them); each flow is counted by the receiver of the place it goes to.
    pub(crate) fn compile(
        &mut self,
        streams: &[StreamSpec],
        ids: Option<&[u16]>,
    ) -> Result<Vec<FlowAt>> {
        let (runs, order) = self.runs(streams)?;
        let firsts = ids
            .map(|ids| crate::several::first_ids(&runs, &order, ids))
            .transpose()?;
        let plans = self.session.compile_from(&runs, firsts.as_deref())?;
        let receives = |place: usize| self.session.port(place).rx_handle().is_some();
        let mut flows = vec![FlowAt::default(); streams.len()];
        for ((r, plan), order) in runs.iter().zip(&plans).zip(&order) {
            for (j, (&i, to)) in order.iter().zip(&r.to).enumerate() {
                flows[i] = FlowAt {
                    id: plan.first_flow + j as u16,
                    tx: r.port,
                    rx: to.filter(|&to| receives(to)),
                };
            }
        }
        self.runs = runs;
        self.plans = plans;
        Ok(flows)
    }

    pub(crate) fn check(&self, streams: &[StreamSpec]) -> Result<()> {
        let (runs, _) = self.runs(streams)?;
        for r in &runs {
            self.session.port(r.port).compile(&r.streams)?;
        }
        Ok(())
    }

    pub(crate) fn run(&mut self, run: RunOptions<'_>, cleared: bool) -> Result<BedRun> {
        crate::several::run(&mut self.session, &self.runs, &self.plans, run, cleared)
    }

    /// A control for each sending port's plan, set on the port: (place, control, first flow id).
    pub(crate) fn set_control(&mut self) -> Vec<(usize, Arc<FlowControl>, u16)> {
        crate::several::set_control(&mut self.session, &self.runs, &self.plans)
    }

    pub(crate) fn plan(&self, place: usize) -> Option<&Plan> {
        crate::several::plan(&self.runs, &self.plans, place)
    }

    pub(crate) fn first_sender(&self) -> Option<&PortSession> {
        let first = self.runs.first().map_or(0, |r| r.port);
        self.session.ports().get(first)
    }

    pub(crate) fn check_receivers(&self) -> Result<()> {
        self.session
            .ports()
            .iter()
            .try_for_each(PortSession::check_receiver)
            .map_err(Into::into)
    }

    pub(crate) fn receivers(&self) -> Vec<Option<Arc<RunReceiver>>> {
        self.session
            .ports()
            .iter()
            .map(PortSession::rx_handle)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    use linerate_engine::{Observer, Snapshot};
    use linerate_session::{Backend, End};

    use super::*;
    use crate::bed::{Go, TestBed};

    struct Quiet;

    impl Observer for Quiet {
        fn tick(&self, _: &Snapshot) {}
    }

    /// Two null ports (named as interfaces no lab has): each sends its own streams, flows
    /// numbered across them in place order whatever the order of the streams, each counted
    /// as its place sent it.
    #[test]
    fn streams_between_two_ports_are_numbered_across_them_and_each_port_sends_its_own() {
        let (a, b) = ("lrnull-a", "lrnull-b");
        let spec = BedSpec {
            places: Places::Ports {
                ports: vec![(a.into(), None), (b.into(), Some(1000))],
                capture: Vec::new(),
            },
            ..BedSpec::port(PortOptions {
                backend: Backend::Null,
                ..PortOptions::interface("unused")
            })
        };
        let mut bed = TestBed::open(&spec).unwrap();
        assert_eq!(bed.places(), [a, b]);
        assert!(!bed.is_one_port() && !bed.on_agents());
        let stream = |name: &str, from: &str, to: &str, count| StreamSpec {
            name: name.into(),
            signature: true,
            count: Some(count),
            rate: linerate_stream::Rate::Pps(1e5),
            mode: linerate_stream::Mode::Interleaved,
            from: Some(from.into()),
            to: Some(to.into()),
            ..StreamSpec::seed()
        };
        // b→a first in the list: a's streams are still flows 0 and 1.
        let streams = [
            stream("ba", b, a, 30),
            stream("ab", a, b, 20),
            stream("ab2", a, b, 10),
        ];
        bed.compile(&streams, End::default()).unwrap();
        let at = |id, tx| FlowAt { id, tx, rx: None };
        assert_eq!(bed.flows(), [at(2, 1), at(0, 0), at(1, 0)]);
        let stop = Arc::new(AtomicBool::new(false));
        let go = Go {
            stop: &stop,
            observer: &Quiet,
            drain: Duration::ZERO,
            start_at: None,
            cleared: false,
        };
        let ran = bed.run(go).unwrap();
        let sent: Vec<(&str, u64)> = ran
            .flows
            .iter()
            .map(|f| (f.name.as_str(), f.sent))
            .collect();
        assert_eq!(sent, [("ba", 30), ("ab", 20), ("ab2", 10)]);
        let mut per_port: Vec<(usize, u64)> = ran
            .summary
            .per_port
            .iter()
            .map(|(p, f, _)| (*p, *f))
            .collect();
        per_port.sort_unstable();
        assert_eq!(per_port, [(0, 30), (1, 30)]);
        assert_eq!(bed.plan(1).map(|p| p.first_flow), Some(2));
        // A stream to the port it leaves from, or from no port of the bed, is refused.
        let own = bed
            .compile(&[stream("aa", a, a, 1)], End::default())
            .unwrap_err();
        assert!(own.to_string().contains("far end"), "{own}");
        let nowhere = bed
            .compile(&[stream("x", "lr9", a, 1)], End::default())
            .unwrap_err();
        assert!(
            nowhere.is_usage() && nowhere.to_string().contains("\"lr9\""),
            "{nowhere}"
        );
    }
}
