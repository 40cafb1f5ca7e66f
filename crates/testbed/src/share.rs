//! An agent's share of a controller's test bed: the bed a [`Setup`] describes, opened on a
//! thread of its own, and the [`Status`] the controller polls it by.

use std::time::Duration;

use linerate_agent::{Lease, Setup, StartClock, Status};
use linerate_session::{Clock, End, PortOptions, ReceiverOptions, RxAttach, RxTarget};
use linerate_stream::StreamSpec;

use crate::bed::{BedSpec, Places, TestBed};
use crate::counts::LiveCounts;
use crate::error::{Result, TestBedError};
use crate::thread::{BedThread, Progress};

/// The clock an agent's stamps and receivers use for its start clock: TAI between hosts PTP
/// keeps together, the monotonic clock otherwise.
pub fn stamp_clock(start: StartClock) -> Clock {
    match start {
        StartClock::Realtime => Clock::Monotonic,
        StartClock::Tai => Clock::Tai,
    }
}

/// Opens `setup` on a thread of its own: its hosts' ports with `port`'s options (receivers on
/// the driver's hook, frames passed on to the stack when a capture runs here, and those of
/// hosts with a control plane to theirs, whose daemons the caller starts), their gateways
/// resolved, their flows compiled with the ids the controller gave. Each run waits up to
/// `drain` for what is on its way.
pub fn share(
    setup: Setup,
    mut port: PortOptions,
    clock: StartClock,
    drain: Duration,
) -> Result<BedThread> {
    // Counted before a port opens: what the tables and a plan cannot hold is refused at once.
    if setup.flows.len() > linerate_stream::MAX_STREAMS {
        return Err(TestBedError::usage(format!(
            "{} flows from this agent, over the {} a setup holds",
            setup.flows.len(),
            linerate_stream::MAX_STREAMS
        )));
    }
    linerate_stream::check_hosts(&setup.hosts, &[])
        .map_err(linerate_session::SessionError::from)?;
    let first = setup
        .hosts
        .first()
        .ok_or_else(|| TestBedError::usage("the setup has no host on this agent"))?;
    port.interface = Some(first.port.clone());
    port.clock = stamp_clock(clock);
    let mut spec = BedSpec::port(port);
    spec.rx = Some(RxTarget {
        at: None,
        attach: RxAttach::Drv,
        receiver: ReceiverOptions {
            pass: setup.pass,
            clock: stamp_clock(clock),
            ..ReceiverOptions::default()
        },
    });
    spec.places = Places::Hosts {
        hosts: setup.hosts,
        given: setup.given,
        peers: setup.peers,
        capture: Vec::new(),
    };
    let end = End {
        duration: setup.duration_ms.map(Duration::from_millis),
        count: None,
    };
    let (streams, ids): (Vec<_>, Vec<_>) = setup
        .flows
        .into_iter()
        .map(|f| {
            let mode = if f.interleaved {
                linerate_stream::Mode::Interleaved
            } else {
                linerate_stream::Mode::Sequence
            };
            (StreamSpec { mode, ..f.stream }, f.id)
        })
        .unzip();
    spec.to_stack = setup.to_stack;
    // The controller steers the share's flows while they run (a live port sends one merged
    // cycle, which cannot be steered).
    let controlled = spec.port.backend != linerate_session::Backend::Live;
    let open = move || {
        let mut bed = TestBed::open(&spec).map_err(|e| e.context("the devices' ports"))?;
        bed.set_controlled(controlled);
        bed.resolve()?;
        bed.compile_numbered(&streams, Some(&ids), end)
            .map_err(|e| e.context("flows"))?;
        Ok(bed)
    };
    BedThread::spawn(open, drain)
}

/// What the controller polls: the run's progress and result, and every place's receiver
/// counts of the flows that arrive here (`counts` of the bed set up, whose places are
/// `places`; `configured`: one is) and its link.
pub fn status(
    lease: &Lease,
    configured: bool,
    counts: &LiveCounts,
    places: &[String],
    progress: &Progress,
) -> Result<Status> {
    let rx = counts.read_flows(&lease.arriving())?;
    let links = places.iter().map(|p| counts.link(p, places)).collect();
    let (frames, bytes) = progress.sent();
    Ok(Status {
        configured,
        runs: lease.runs(),
        running: progress.running(),
        frames,
        bytes,
        started_ns: lease.started_ns(),
        result: progress.result(),
        rx,
        links,
        lease_expired: lease.expired(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(i: usize, port: &str) -> linerate_stream::HostSpec {
        format!(
            "name=h{i},port={port},ipv4=10.{}.{}.{}/8",
            (i >> 16) & 0xff,
            (i >> 8) & 0xff,
            (i & 0xff).max(1)
        )
        .parse()
        .unwrap()
    }

    /// 40,000 hosts failed after 14 s (E2BIG from the full hosts table) and 20,000 flows only
    /// once the ports were open and attached: both are counted first now, on no port at all.
    #[test]
    fn a_setup_over_what_a_port_holds_is_refused_before_anything_opens() {
        let clock = StartClock::Realtime;
        let port = || PortOptions::interface("");
        let mut setup = Setup {
            hosts: (0..HOSTS).map(|i| host(i, "nosuch0")).collect(),
            ..Setup::default()
        };
        const HOSTS: usize = 40_000;
        let e = share(setup.clone(), port(), clock, Duration::ZERO).unwrap_err();
        assert!(e.is_usage() && e.to_string().contains("16384"), "{e}");
        setup.hosts.truncate(linerate_stream::HOSTS_PER_PORT + 1);
        let e = share(setup.clone(), port(), clock, Duration::ZERO).unwrap_err();
        assert!(
            e.to_string().contains("over 1024 hosts") && e.to_string().contains("nosuch0"),
            "{e}"
        );
        setup.hosts.truncate(1);
        let stream = linerate_stream::StreamSpec {
            name: "f".into(),
            ..Default::default()
        };
        setup.flows = (0..20_000)
            .map(|i| linerate_agent::FlowSetup {
                id: i as u16,
                stream: stream.clone(),
                interleaved: true,
            })
            .collect();
        let e = share(setup, port(), clock, Duration::ZERO).unwrap_err();
        assert!(e.to_string().contains("20000 flows"), "{e}");
    }
}
