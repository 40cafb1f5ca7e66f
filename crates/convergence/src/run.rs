//! The benchmark's run on a `--dut bgp` lab: the devices of [`crate::plan`] mapped as serve
//! maps a config, their test bed opened on a thread of its own and their BGP speakers started
//! (the same `TestBed` and `Routers` serve drives), the DUT's FIB read from its namespace, and
//! each event measured by polling the flows' receive counters. Everything it starts is
//! dropped on every way out: traffic stopped, daemons stopped, their namespaces deleted, the
//! lab's receive end given back to its sink.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use linerate_lab::{DutKind, Lab};
use linerate_otg as otg;
use linerate_routing::Routers;
use linerate_rx::RxTotals;
use linerate_session::{End, PortOptions, RxTarget};
use linerate_testbed::{BedSpec, BedThread, FlowAt, Places, Progress, TestBed};

use crate::ConvergenceError;
use crate::analysis::{Aggregate, Reading, Track};
use crate::plan::{self, Flows, Topology};
use crate::report::{Accounting, EventReport, FlowRow, Report, Spreads};

/// What takes the preferred path away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The preferred device withdraws its route range (its session stays up).
    Withdraw,
    /// The preferred device's bgpd is stopped (SIGTERM: it sends the DUT a Cease).
    Down,
}

impl Event {
    fn as_str(self) -> &'static str {
        match self {
            Event::Withdraw => "withdraw",
            Event::Down => "down",
        }
    }
}

/// How to run the benchmark.
#[derive(Debug, Clone)]
pub struct Settings {
    pub lab: String,
    pub prefixes: u32,
    pub event: Event,
    /// Frames per second, all flows together.
    pub rate_pps: f64,
    pub size: u32,
    pub repeat: u32,
    pub settle: Duration,
    pub timeout: Duration,
    /// The sending port's options (backend, cores); its interface is the lab's sender.
    pub port: PortOptions,
    /// How each port receives.
    pub rx: RxTarget,
}

/// How often the flows' counters are read while an event converges.
const POLL: Duration = Duration::from_millis(10);
/// How often the DUT's FIB is read (a dump of every route: dearer than the counters).
const FIB_POLL: Duration = Duration::from_millis(250);
/// How long a run waits for frames on their way after it is stopped.
const DRAIN: Duration = Duration::from_millis(500);

fn usage(why: impl Into<String>) -> ConvergenceError {
    ConvergenceError::Usage(why.into())
}

/// The lab named, with a BGP DUT that has the backup session.
pub fn check_lab(name: &str) -> Result<Lab, ConvergenceError> {
    linerate_lab::validate_name(name).map_err(|e| usage(format!("--lab {name}: {e}")))?;
    let lab = Lab::find(name)?.ok_or_else(|| {
        usage(format!(
            "no lab named {name}: bring one up with `linerate lab up --name {name} --dut bgp`"
        ))
    })?;
    match &lab.dut {
        Some(d) if d.kind == DutKind::Bgp => {}
        other => {
            let has = other.as_ref().map_or("no DUT", |d| d.kind.as_str());
            return Err(usage(format!(
                "lab {name} has {has}, not a BGP DUT: bring it up with `linerate lab up --name \
                 {name} --dut bgp`"
            )));
        }
    }
    if !linerate_lab::bird::has_backup(name) {
        return Err(usage(format!(
            "lab {name}'s BGP DUT has no backup session (it was brought up by an older \
             linerate): `linerate lab down --name {name}` and up again"
        )));
    }
    Ok(lab)
}

/// The benchmark's settings checked, before anything is started.
pub fn check(s: &Settings) -> Result<(Lab, Flows, u64), ConvergenceError> {
    let flows = Flows::of(s.prefixes)?;
    if s.repeat == 0 {
        return Err(usage("--repeat 0: give at least one event"));
    }
    if s.settle.is_zero() {
        return Err(usage(
            "--settle 0: give the quiet time that counts as converged",
        ));
    }
    if s.size < 64 {
        return Err(usage(format!(
            "--size {}: at least 64 (the signature must fit)",
            s.size
        )));
    }
    let pps = (s.rate_pps / f64::from(flows.count)).floor();
    if pps.is_nan() || pps < 1.0 {
        return Err(usage(format!(
            "--rate {:.0} pps over {} flows is under a frame a second each: raise it",
            s.rate_pps, flows.count
        )));
    }
    let lab = check_lab(&s.lab)?;
    Ok((lab, flows, pps as u64))
}

/// The clock the receiver stamps arrivals with (bpf_ktime_get_ns).
fn now_ns() -> u64 {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .expect("CLOCK_MONOTONIC is always there");
    t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
}

/// The lab's addresses for the topology.
fn topology(lab: &Lab) -> Topology {
    let (west, ingress, egress, east) = linerate_lab::routed_addresses(&lab.name);
    let (dut_backup, backup) = linerate_lab::backup_addresses(&lab.name);
    Topology {
        tx_port: lab.sender.clone(),
        rx_port: format!("{}@{}", lab.receiver, lab.netns),
        source: (west, ingress),
        preferred: (east, egress),
        backup: (backup, dut_backup),
    }
}

/// What the DUT's kernel holds of BIRD's routes: next hop → routes.
fn fib(netns: &str) -> Result<HashMap<Ipv4Addr, u32>, ConvergenceError> {
    let out = Command::new("ip")
        .args(["-n", netns, "-4", "route", "show", "proto", "bird"])
        .output()
        .map_err(|source| ConvergenceError::Io {
            what: format!("reading the DUT's routes (ip -n {netns} route)"),
            source,
        })?;
    let mut by_hop = HashMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut words = line.split_whitespace();
        if let Some(hop) = words
            .by_ref()
            .skip_while(|w| *w != "via")
            .nth(1)
            .and_then(|a| a.parse().ok())
        {
            *by_hop.entry(hop).or_insert(0) += 1;
        }
    }
    Ok(by_hop)
}

/// Waits until the DUT's FIB holds all `n` prefixes through `hop` and none through `other`.
fn wait_fib(
    netns: &str,
    hop: Ipv4Addr,
    other: Ipv4Addr,
    n: u32,
    timeout: Duration,
    stop: &AtomicBool,
) -> Result<(), ConvergenceError> {
    let deadline = Instant::now() + timeout;
    loop {
        let f = fib(netns)?;
        let (via, left) = (
            f.get(&hop).copied().unwrap_or(0),
            f.get(&other).copied().unwrap_or(0),
        );
        if via == n && left == 0 {
            return Ok(());
        }
        interrupted(stop)?;
        if Instant::now() > deadline {
            return Err(ConvergenceError::Timeout(format!(
                "the DUT's FIB ({netns}) holds {via} of {n} prefixes via {hop} and {left} via \
                 {other} after {timeout:?}"
            )));
        }
        std::thread::sleep(FIB_POLL);
    }
}

fn interrupted(stop: &AtomicBool) -> Result<(), ConvergenceError> {
    if stop.load(Ordering::Relaxed) {
        return Err(ConvergenceError::Interrupted);
    }
    Ok(())
}

/// The flows' counters now, in the order of `at`.
fn read(bed: &BedThread, at: &[FlowAt], ids: &[u16]) -> Result<Vec<Reading>, ConvergenceError> {
    let totals = bed.counts().read_flows(ids)?;
    let by_place: Vec<Option<HashMap<u16, Reading>>> = totals
        .iter()
        .map(|t: &Option<RxTotals>| {
            t.as_ref().map(|t| {
                t.flows
                    .iter()
                    .map(|f| {
                        let r = Reading {
                            frames: f.frames,
                            lost: f.reached_loss(0),
                            last_ns: f.last_ns,
                        };
                        (f.flow, r)
                    })
                    .collect()
            })
        })
        .collect();
    Ok(at
        .iter()
        .map(|f| {
            f.rx.and_then(|p| by_place.get(p)?.as_ref()?.get(&f.id).copied())
                .unwrap_or_default()
        })
        .collect())
}

/// Waits until every flow arrives without new loss for `settle`; the readings then.
fn steady(
    bed: &BedThread,
    at: &[FlowAt],
    ids: &[u16],
    pps: f64,
    s: &Settings,
    stop: &AtomicBool,
) -> Result<Vec<Reading>, ConvergenceError> {
    let deadline = Instant::now() + s.timeout;
    let settle = s.settle.as_nanos() as u64;
    let start = read(bed, at, ids)?;
    let mut tracks: Vec<Track> = start.iter().map(|r| Track::new(*r, pps)).collect();
    let from = now_ns();
    loop {
        std::thread::sleep(POLL.max(s.settle / 20));
        interrupted(stop)?;
        let now = read(bed, at, ids)?;
        let t = now_ns();
        let mut all = true;
        for (track, r) in tracks.iter_mut().zip(&now) {
            track.update(*r, t);
            all &= track.settled(from, t, settle);
        }
        if all {
            return Ok(now);
        }
        if Instant::now() > deadline {
            let waiting = tracks
                .iter_mut()
                .map(|k| usize::from(!k.settled(from, t, settle)))
                .sum::<usize>();
            return Err(ConvergenceError::Timeout(format!(
                "{waiting} of {} flows still lose frames or arrive not at all through the \
                 preferred path after {:?}",
                at.len(),
                s.timeout
            )));
        }
    }
}

/// Runs the benchmark; progress on stderr. `stop` (Ctrl-C) ends it early, everything torn
/// down.
pub fn run(s: &Settings, stop: &Arc<AtomicBool>) -> Result<Report, ConvergenceError> {
    let (lab, flows, pps) = check(s)?;
    let dut_ns = lab
        .dut
        .as_ref()
        .map(|d| d.netns.clone())
        .unwrap_or_default();
    let topo = topology(&lab);
    let config = plan::config(&topo, flows, pps, s.size);
    let body = serde_json::to_vec(&config).expect("a JSON value serializes");
    let refused = |r: otg::Refusals| {
        ConvergenceError::Otg(
            r.0.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
        )
    };
    let parsed = otg::parse_config(&body).map_err(refused)?;
    let mapped = otg::map_config(&parsed).map_err(refused)?;
    drop(parsed);

    eprintln!(
        "convergence: lab {}: {} prefixes, {} flows at {pps} pps each, event {}",
        lab.name,
        flows.prefixes,
        flows.count,
        s.event.as_str()
    );
    let hosts = mapped.placed_hosts();
    let mut port = s.port.clone();
    port.interface = Some(hosts[0].port.clone());
    // The sender's worker pinned to one core, so the DUT forwards and the receiver counts in
    // its context (veth) and a flow's frames seldom cross CPUs on the way: a loss is read
    // from the highest sequence number any CPU saw (`reached_loss`), where a frame still
    // in flight on the other CPU reads lost until it is counted.
    if port.cores.is_empty() {
        port.cores = linerate_session::allowed_cores().split_off(0);
        port.cores.drain(..port.cores.len() - 1);
    }
    let mut spec = BedSpec::port(port);
    spec.places = Places::Hosts {
        hosts,
        given: Vec::new(),
        peers: Vec::new(),
        capture: Vec::new(),
    };
    spec.rx = Some(s.rx.clone());
    spec.to_stack = mapped.routed_hosts();
    let streams = mapped.streams.clone();
    let bed = BedThread::spawn(
        move || {
            let mut bed = TestBed::open(&spec).map_err(|e| e.context("the devices' ports"))?;
            bed.resolve()
                .map_err(|e| e.context("the devices' gateways"))?;
            bed.compile(&streams, End::default())
                .map_err(|e| e.context("flows"))?;
            Ok(bed)
        },
        DRAIN,
    )?;
    let mut routers = Routers::start(mapped.routers.clone())?;
    // Traffic stops before the bed and the daemons go, whatever way this ends.
    let run = Running {
        stop: Arc::clone(stop),
        progress: Arc::new(Progress::default()),
    };
    let (preferred, backup) = (topo.preferred.0, topo.backup.0);
    eprintln!("convergence: waiting for the DUT to install every prefix via {preferred}");
    wait_fib(&dut_ns, preferred, backup, flows.prefixes, s.timeout, stop)?;

    let at: Vec<FlowAt> = bed.flows().to_vec();
    let ids: Vec<u16> = at.iter().map(|f| f.id).collect();
    let rate = pps as f64;
    bed.start(
        Arc::clone(&run.stop),
        Arc::clone(&run.progress),
        None,
        false,
    )?;
    eprintln!("convergence: traffic on; waiting until every flow arrives without loss");
    steady(&bed, &at, &ids, rate, s, stop)?;

    let mut events = Vec::new();
    for k in 1..=s.repeat {
        let base = read(&bed, &at, &ids)?;
        let mut tracks: Vec<Track> = base.iter().map(|r| Track::new(*r, rate)).collect();
        let event_ns = now_ns();
        match s.event {
            Event::Withdraw => {
                routers.announce(plan::PREFERRED_ROUTES, false)?;
            }
            Event::Down => {
                routers.set_device_running(plan::PREFERRED, false)?;
            }
        }
        eprintln!(
            "convergence: event {k} of {}: {}",
            s.repeat,
            s.event.as_str()
        );
        let report = measure(
            &bed,
            &at,
            &ids,
            &mut tracks,
            event_ns,
            &dut_ns,
            &topo,
            flows,
            s,
        )?;
        let r = EventReport { event: k, ..report };
        eprintln!(
            "convergence: event {k}: {} frames lost, loss-derived {:.1} ms, last prefix {} ms",
            r.aggregate.lost,
            r.aggregate.loss_ms,
            r.aggregate
                .last_prefix_ms
                .map_or("-".into(), |v| format!("{v:.1}"))
        );
        events.push(r);
        if k < s.repeat {
            // Undone: the preferred path back, and traffic on it without loss, before the
            // next event.
            match s.event {
                Event::Withdraw => {
                    routers.announce(plan::PREFERRED_ROUTES, true)?;
                }
                Event::Down => {
                    routers.set_device_running(plan::PREFERRED, true)?;
                }
            }
            wait_fib(&dut_ns, preferred, backup, flows.prefixes, s.timeout, stop)?;
            steady(&bed, &at, &ids, rate, s, stop)?;
        }
    }
    // The whole run's loss by the sender's count, against the receiver's sequence gaps that
    // every figure above comes from: equal for every flow when the gaps counted exactly.
    let progress = Arc::clone(&run.progress);
    drop(run);
    let accounting = account(&bed, &at, &ids, &progress, &events)?;
    drop(routers);
    drop(bed);
    let host = linerate_report::HostInfo::collect();
    Ok(Report {
        benchmark: "RFC 7747 BGP data-plane convergence (black box)".into(),
        lab: lab.name.clone(),
        dut: "BIRD".into(),
        event: s.event.as_str().into(),
        prefixes: flows.prefixes,
        flows: flows.count,
        prefixes_per_flow: flows.per_flow,
        rate_pps: rate * f64::from(flows.count),
        flow_rate_pps: rate,
        size: s.size,
        settle_ms: s.settle.as_secs_f64() * 1000.0,
        preferred_next_hop: preferred,
        backup_next_hop: backup,
        kernel: host.kernel,
        cpu: host.cpu_model,
        date: linerate_report::rfc3339_utc(std::time::SystemTime::now()),
        spread: Spreads::of(&events),
        events,
        accounting,
    })
}

/// Sent against received per flow once traffic has stopped and drained.
fn account(
    bed: &BedThread,
    at: &[FlowAt],
    ids: &[u16],
    progress: &Progress,
    events: &[EventReport],
) -> Result<Accounting, ConvergenceError> {
    let sent: HashMap<u16, u64> = progress
        .result()
        .map(|r| r.per_flow.into_iter().collect())
        .unwrap_or_default();
    let totals = bed.counts().read_flows(ids)?;
    let mut a = Accounting {
        lost_in_events: events.iter().map(|e| e.aggregate.lost).sum(),
        ..Accounting::default()
    };
    for (i, f) in at.iter().enumerate() {
        let stats =
            f.rx.and_then(|p| totals.get(p)?.as_ref()?.flow(f.id).cloned());
        let tx = sent.get(&f.id).copied().unwrap_or(0);
        let (unique, gaps) = stats.map_or((0, 0), |s| (s.unique(), s.reached_loss(0)));
        let lost = tx.saturating_sub(unique);
        a.sent += tx;
        a.received += unique;
        a.lost += lost;
        a.gap_lost += gaps;
        if lost != gaps {
            a.inexact.push(plan::flow_name(i as u32));
        }
    }
    Ok(a)
}

/// Traffic that stops when dropped (and waits for the run to end).
struct Running {
    stop: Arc<AtomicBool>,
    progress: Arc<Progress>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.progress.wait_ended(Duration::from_secs(10));
    }
}

/// One event from its trigger to every flow settled through the next-best path.
#[allow(clippy::too_many_arguments)]
fn measure(
    bed: &BedThread,
    at: &[FlowAt],
    ids: &[u16],
    tracks: &mut [Track],
    event_ns: u64,
    dut_ns: &str,
    topo: &Topology,
    flows: Flows,
    s: &Settings,
) -> Result<EventReport, ConvergenceError> {
    let settle = s.settle.as_nanos() as u64;
    let deadline = Instant::now() + s.timeout;
    let mut fib_done: Option<u64> = None;
    let mut fib_read = Instant::now() - FIB_POLL;
    let mut last_fib = HashMap::new();
    loop {
        std::thread::sleep(POLL);
        let now = read(bed, at, ids)?;
        let t = now_ns();
        for (track, r) in tracks.iter_mut().zip(&now) {
            track.update(*r, t);
        }
        if fib_done.is_none() && fib_read.elapsed() >= FIB_POLL {
            fib_read = Instant::now();
            last_fib = fib(dut_ns)?;
            let via = |hop| last_fib.get(&hop).copied().unwrap_or(0);
            if via(topo.backup.0) == flows.prefixes && via(topo.preferred.0) == 0 {
                fib_done = Some(now_ns());
            }
        }
        // Every flow asked (no short cut): each one's quiet window starts when it is first
        // asked.
        if let Some(done) = fib_done
            && tracks
                .iter_mut()
                .fold(true, |all, k| k.settled(done, t, settle) & all)
        {
            break;
        }
        if Instant::now() > deadline {
            let waiting = match fib_done {
                Some(done) => tracks
                    .iter_mut()
                    .map(|k| usize::from(!k.settled(done, t, settle)))
                    .sum(),
                None => tracks.len(),
            };
            let via = |hop| last_fib.get(&hop).copied().unwrap_or(0);
            return Err(ConvergenceError::Timeout(format!(
                "not converged after {:?}: the DUT's FIB has {} of {} prefixes via the \
                 next-best path {} ({} still via {}), {waiting} of {} flows not settled",
                s.timeout,
                via(topo.backup.0),
                flows.prefixes,
                topo.backup.0,
                via(topo.preferred.0),
                topo.preferred.0,
                at.len()
            )));
        }
    }
    let rows: Vec<FlowRow> = tracks
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let i = i as u32;
            FlowRow {
                flow: plan::flow_name(i),
                first_prefix: flows.first(i),
                prefixes: flows.prefixes_of(i),
                rate_pps: k.rate(),
                times: k.result(event_ns),
            }
        })
        .collect();
    Ok(EventReport {
        event: 0,
        fib_ms: fib_done.map(|d| (d as f64 - event_ns as f64) / 1e6),
        measured_ms: (now_ns() as f64 - event_ns as f64) / 1e6,
        aggregate: Aggregate::of(rows.iter().map(|r| (r.rate_pps, &r.times))),
        flows: rows,
    })
}
