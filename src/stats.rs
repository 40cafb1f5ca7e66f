//! `--stats FILE`: a run's time series, one line a second per flow and per place, as
//! JSON lines (or CSV when FILE ends in `.csv`), then a last line per flow with what it sent,
//! exact. Per second a flow's line holds what its receiver counted (the receive program's own
//! counts, read live); the engine counts each flow's sent frames at the end of the run, so
//! while it runs a flow's sent frames are given only where its place sends that flow alone.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{Context, Result};
use linerate_engine::{Observer, Snapshot};
use linerate_testbed::{BedRun, FlowAt, LiveCounts};
use serde::Serialize;

/// One line of the series.
#[derive(Debug, Clone, Default, Serialize)]
struct Line<'a> {
    /// Seconds since the run's first tick.
    t: f64,
    /// `flow`, `place` (a sending place's totals), `received` (every frame a place's receiver
    /// counted, a flow's or not: a replay's frames carry no flow) or `end` (a flow's last
    /// line).
    kind: &'static str,
    name: &'a str,
    /// The phase of a procedure the line belongs to (`rfc2544`: `64 B thr`…).
    #[serde(skip_serializing_if = "str::is_empty")]
    phase: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    frames_tx: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tx_fps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    frames_rx: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rx_fps: Option<f64>,
    /// Frames its receiver found missing from the sequence so far.
    #[serde(skip_serializing_if = "Option::is_none")]
    lost: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    latency_p50_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    latency_p99_ns: Option<u64>,
}

const CSV_HEADER: &str =
    "t,kind,name,frames_tx,tx_fps,frames_rx,rx_fps,lost,latency_p50_ns,latency_p99_ns,phase";

impl Line<'_> {
    fn csv(&self) -> String {
        fn o<T: ToString>(v: Option<T>) -> String {
            v.map_or(String::new(), |v| v.to_string())
        }
        // Names are the user's: quoted when they hold what CSV must quote.
        let name = if self.name.contains([',', '"', '\n']) {
            format!("\"{}\"", self.name.replace('"', "\"\""))
        } else {
            self.name.to_owned()
        };
        let phase = if self.phase.contains([',', '"', '\n']) {
            format!("\"{}\"", self.phase.replace('"', "\"\""))
        } else {
            self.phase.to_owned()
        };
        format!(
            "{:.3},{},{name},{},{},{},{},{},{},{},{phase}",
            self.t,
            self.kind,
            o(self.frames_tx),
            o(self.tx_fps.map(|v| format!("{v:.1}"))),
            o(self.frames_rx),
            o(self.rx_fps.map(|v| format!("{v:.1}"))),
            o(self.lost),
            o(self.latency_p50_ns),
            o(self.latency_p99_ns)
        )
    }
}

/// Writes the series as the run ticks, beside the observer that draws the status line.
pub struct Stats<'a> {
    inner: &'a dyn Observer,
    out: Mutex<Writer>,
    counts: LiveCounts,
    /// Per flow: its name and where it is sent and counted.
    flows: Vec<(String, FlowAt)>,
    /// Places that send a single flow: their tick is that flow's.
    alone: Vec<usize>,
    /// Place names, by index.
    places: Vec<String>,
    /// The procedure's phase now (none outside one).
    phase: Mutex<String>,
}

struct Writer {
    file: BufWriter<std::fs::File>,
    csv: bool,
    start: Option<Instant>,
    /// Per flow, frames received at the last tick and when.
    last_rx: Vec<(u64, f64)>,
    /// Per place, every frame its receiver counted at the last tick and when.
    last_place_rx: Vec<(u64, f64)>,
    /// The first failure to write: the rest of the series is not written, and the run says so.
    failed: Option<String>,
}

impl std::fmt::Debug for Stats<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stats").finish_non_exhaustive()
    }
}

impl<'a> Stats<'a> {
    /// Creates `path` for the series of the flows `names` (in the order compiled, at `flows`).
    pub fn create(
        path: &Path,
        inner: &'a dyn Observer,
        counts: LiveCounts,
        names: &[String],
        flows: &[FlowAt],
        places: &[String],
    ) -> Result<Stats<'a>> {
        let file = std::fs::File::create(path)
            .with_context(|| format!("--stats {}: cannot create it", path.display()))?;
        let csv = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
        let mut file = BufWriter::new(file);
        if csv {
            writeln!(file, "{CSV_HEADER}")?;
        }
        let alone = (0..places.len())
            .filter(|p| flows.iter().filter(|f| f.tx == *p).count() == 1)
            .collect();
        Ok(Stats {
            inner,
            out: Mutex::new(Writer {
                file,
                csv,
                start: None,
                last_rx: vec![(0, 0.0); flows.len()],
                last_place_rx: vec![(0, 0.0); places.len()],
                failed: None,
            }),
            counts,
            flows: names.iter().cloned().zip(flows.iter().copied()).collect(),
            alone,
            places: places.to_vec(),
            phase: Mutex::new(String::new()),
        })
    }

    /// Lines from now on belong to `phase`.
    pub fn phase(&self, phase: &str) {
        *self.phase.lock().unwrap_or_else(|p| p.into_inner()) = phase.to_owned();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Writer> {
        self.out.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The last lines (each flow's exact sent count, and what arrived), flushed; an error if
    /// any line could not be written.
    pub fn finish(&self, ran: Option<&BedRun>) -> Result<()> {
        let mut w = self.lock();
        let t = w.start.map_or(0.0, |s| s.elapsed().as_secs_f64());
        if let Some(ran) = ran {
            for f in &ran.flows {
                let line = Line {
                    t,
                    kind: "end",
                    name: &f.name,
                    frames_tx: Some(f.sent),
                    frames_rx: f.received.as_ref().map(|r| r.rx_frames),
                    lost: f.received.as_ref().map(|r| r.lost),
                    ..Line::default()
                };
                w.write(&line);
            }
        }
        if let Err(e) = w.file.flush() {
            w.failed.get_or_insert(e.to_string());
        }
        match &w.failed {
            Some(why) => Err(anyhow::anyhow!("--stats: writing the series failed: {why}")),
            None => Ok(()),
        }
    }
}

/// Frames a second from `last` to `n` over `span` seconds.
fn per_second(n: u64, last: u64, span: f64) -> f64 {
    if span > 0.0 {
        n.saturating_sub(last) as f64 / span
    } else {
        0.0
    }
}

impl Writer {
    fn write(&mut self, line: &Line<'_>) {
        if self.failed.is_some() {
            return;
        }
        let written = if self.csv {
            writeln!(self.file, "{}", line.csv())
        } else {
            serde_json::to_string(line)
                .map_err(std::io::Error::other)
                .and_then(|text| writeln!(self.file, "{text}"))
        };
        if let Err(e) = written {
            self.failed = Some(e.to_string());
        }
    }
}

impl Observer for Stats<'_> {
    fn tick(&self, s: &Snapshot) {
        self.inner.tick(s);
        let read = self.counts.read().ok();
        let phase = self.phase.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let phase = phase.as_str();
        let mut w = self.lock();
        let start = *w.start.get_or_insert_with(|| Instant::now() - s.elapsed);
        let t = start.elapsed().as_secs_f64();
        // The snapshot is of this machine's workers: the sending place's, when there is one.
        if let [place] = self.places.as_slice() {
            let line = Line {
                t,
                kind: "place",
                name: place,
                phase,
                frames_tx: Some(s.frames),
                tx_fps: Some(s.pps()),
                ..Line::default()
            };
            w.write(&line);
        }
        for (i, place) in self.places.iter().enumerate() {
            let Some(totals) = read.as_ref().and_then(|c| c.totals.get(i)?.as_ref()) else {
                continue;
            };
            let n = totals.all_frames();
            let (last, when) = w.last_place_rx[i];
            w.last_place_rx[i] = (n, t);
            let line = Line {
                t,
                kind: "received",
                name: place,
                phase,
                frames_rx: Some(n),
                rx_fps: Some(per_second(n, last, t - when)),
                ..Line::default()
            };
            w.write(&line);
        }
        for (k, (name, at)) in self.flows.iter().enumerate() {
            // (frames, lost, latency) at its receiver: nothing yet reads as zeros; no receiver,
            // as nothing.
            let received = read.as_ref().and_then(|c| {
                let totals = c.totals.get(at.rx?)?.as_ref()?;
                Some(
                    totals
                        .flow(at.id)
                        .map_or((0, 0, None), |f| (f.frames, f.estimated_loss(), f.latency)),
                )
            });
            let alone = self.places.len() == 1 && self.alone.contains(&at.tx);
            let (last, when) = w.last_rx[k];
            let rx_fps = received.map(|(n, _, _)| per_second(n, last, t - when));
            if let Some((n, _, _)) = received {
                w.last_rx[k] = (n, t);
            }
            let latency = received.and_then(|(_, _, l)| l);
            let line = Line {
                t,
                kind: "flow",
                name,
                phase,
                frames_tx: alone.then_some(s.frames),
                tx_fps: alone.then(|| s.pps()),
                frames_rx: received.map(|(n, _, _)| n),
                rx_fps,
                lost: received.map(|(_, lost, _)| lost),
                latency_p50_ns: latency.and_then(|l| l.p50),
                latency_p99_ns: latency.and_then(|l| l.p99),
            };
            w.write(&line);
        }
        if let Err(e) = w.file.flush() {
            w.failed.get_or_insert(e.to_string());
        }
    }
}
