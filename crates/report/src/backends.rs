//! `linerate sweep --backends`: several backends measured in one run, interleaved, reported
//! side by side — a column per backend in the table and the CSV, a series per backend in the
//! JSON and the plot. Each backend's numbers are a whole [`SweepResult`] of their own, so the
//! arithmetic is the single sweep's.

use serde::Serialize;

use crate::compare::compare;
use crate::result::{Context, MeasuredAt, Repetition, Summary, SweepResult};
use crate::table::{format_cores, render_table};

/// Written into the file so a reader can tell it from a one-backend sweep (`linerate-sweep/1`).
pub const BACKENDS_FORMAT: &str = "linerate-sweep-backends/1";

/// How the runs were ordered, stated in every table and file: the drift of a long run (heat,
/// clocks, a neighbour's load) then falls on every backend alike.
pub const INTERLEAVED: &str = "interleaved: at each size every backend warms up in turn, then the repetitions alternate backend by backend";

/// Several backends swept in one run.
#[derive(Debug, Clone, PartialEq)]
pub struct BackendSweeps {
    /// One sweep per backend that ran, in column order; the first is the baseline of the ratios.
    pub sweeps: Vec<SweepResult>,
    /// Backends that were asked for (`all`) but cannot send here, with why.
    pub skipped: Vec<Skipped>,
}

/// A backend left out of the run, and the reason it gave.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Skipped {
    pub backend: String,
    pub why: String,
}

/// A backend's name in tables and legends: its mode too where it changes the numbers
/// (`afxdp copy` against `afxdp zerocopy`), else the backend alone (`live`, `afpacket`).
pub fn backend_label(c: &Context) -> String {
    match c.mode.split_whitespace().next() {
        Some(m @ ("copy" | "zerocopy")) => format!("{} {m}", c.backend),
        _ => c.backend.clone(),
    }
}

impl BackendSweeps {
    pub fn labels(&self) -> Vec<String> {
        self.sweeps
            .iter()
            .map(|s| backend_label(&s.context))
            .collect()
    }

    pub fn interrupted(&self) -> bool {
        self.sweeps.iter().any(|s| s.interrupted)
    }

    fn measured_at(&self) -> MeasuredAt {
        self.sweeps
            .first()
            .map_or(MeasuredAt::TxCompletions, |s| s.measured_at)
    }

    /// Every size some backend measured, in the order they ran.
    fn sizes(&self) -> Vec<usize> {
        let mut sizes: Vec<usize> = Vec::new();
        for size in self.sweeps.iter().flat_map(SweepResult::sizes) {
            if !sizes.contains(&size) {
                sizes.push(size);
            }
        }
        sizes
    }

    /// The comparison table (a row per size; per backend its Kpps and % of line; each backend
    /// against the first; a verdict), a context line per backend, the skipped backends and how
    /// the runs were ordered.
    pub fn render(&self) -> String {
        let labels = self.labels();
        let (mut out, marked) = match compare(&self.sweeps, &labels) {
            Ok(c) => (c.render_with(&self.sweeps), false),
            // One backend left, or a cut left the backends no size in common: each its own
            // table, which marks an interrupted sweep itself.
            Err(_) => (
                self.sweeps
                    .iter()
                    .zip(&labels)
                    .map(|(s, label)| format!("{label}:\n{}", render_table(s)))
                    .collect(),
                true,
            ),
        };
        for s in &self.skipped {
            out.push_str(&format!("{}: skipped, {}\n", s.backend, s.why));
        }
        out.push_str(INTERLEAVED);
        out.push('\n');
        if self.interrupted() && !marked {
            out.push_str(
                "INTERRUPTED: stopped before the end; only repetitions that ran their full duration are shown\n",
            );
        }
        out
    }

    pub fn to_json(&self) -> String {
        #[derive(Serialize)]
        struct Backend<'a> {
            backend: &'a str,
            label: String,
            context: &'a Context,
        }
        #[derive(Serialize)]
        struct Measured<'a> {
            summary: Summary,
            repetitions: &'a [Repetition],
        }
        #[derive(Serialize)]
        struct Point<'a> {
            size: usize,
            /// Keyed by backend, in column order; a backend a cut stopped before this size is absent.
            backends: InOrder<'a, Measured<'a>>,
        }
        #[derive(Serialize)]
        struct File<'a> {
            format: &'static str,
            measured_at: MeasuredAt,
            order: &'static str,
            #[serde(skip_serializing_if = "std::ops::Not::not")]
            interrupted: bool,
            backends: Vec<Backend<'a>>,
            skipped: &'a [Skipped],
            points: Vec<Point<'a>>,
        }
        let points = self
            .sizes()
            .into_iter()
            .map(|size| {
                let backends = self
                    .sweeps
                    .iter()
                    .filter_map(|s| {
                        let p = s.point(size)?;
                        let m = Measured {
                            summary: p.summary(s.context.link_speed_mbps),
                            repetitions: &p.repetitions,
                        };
                        Some((s.context.backend.as_str(), m))
                    })
                    .collect();
                Point {
                    size,
                    backends: InOrder(backends),
                }
            })
            .collect();
        let file = File {
            format: BACKENDS_FORMAT,
            measured_at: self.measured_at(),
            order: INTERLEAVED,
            interrupted: self.interrupted(),
            backends: self
                .sweeps
                .iter()
                .map(|s| Backend {
                    backend: &s.context.backend,
                    label: backend_label(&s.context),
                    context: &s.context,
                })
                .collect(),
            skipped: &self.skipped,
            points,
        };
        // Plain structs of strings and numbers cannot fail to serialize.
        serde_json::to_string_pretty(&file).expect("a sweep result serializes") + "\n"
    }

    /// A row per size, the size's line rate, then per backend (named `live_…`, `afxdp_…`) its
    /// median, min, max, wire Mbps, % of line, repetitions and mode; a backend a cut stopped
    /// before a size has empty cells there.
    pub fn csv_summary(&self) -> String {
        const PER_BACKEND: [&str; 7] = [
            "kpps_median",
            "kpps_min",
            "kpps_max",
            "mbps",
            "pct_of_line",
            "repetitions",
            "mode",
        ];
        let mut header = vec!["size".to_owned(), "line_rate_kpps".to_owned()];
        for s in &self.sweeps {
            header.extend(PER_BACKEND.map(|c| format!("{}_{c}", s.context.backend)));
        }
        header.extend(["measured_at", "interface", "cores"].map(str::to_owned));
        let c = self.sweeps.first().map(|s| &s.context);
        let link = c.and_then(|c| c.link_speed_mbps);
        let opt = |v: Option<f64>| v.map(|v| format!("{v:.3}")).unwrap_or_default();
        let rows = self.sizes().into_iter().map(|size| {
            let any = self.sweeps.iter().find_map(|s| s.point(size));
            let mut row = vec![
                size.to_string(),
                opt(any.and_then(|p| p.line_rate_kpps(link))),
            ];
            for s in &self.sweeps {
                row.extend(match s.point(size) {
                    Some(p) => [
                        format!("{:.3}", p.kpps_median()),
                        format!("{:.3}", p.kpps_min()),
                        format!("{:.3}", p.kpps_max()),
                        format!("{:.3}", p.mbps_median()),
                        opt(p.pct_of_line(s.context.link_speed_mbps)),
                        p.repetitions.len().to_string(),
                        s.context.mode.clone(),
                    ],
                    None => Default::default(),
                });
            }
            row.extend([
                measured_at_name(self.measured_at()).to_owned(),
                c.map(|c| c.interface.clone()).unwrap_or_default(),
                c.map(|c| format_cores(&c.cores)).unwrap_or_default(),
            ]);
            row
        });
        csv_rows(std::iter::once(header).chain(rows))
    }

    /// One row per measured run with the raw counts, the backend first.
    pub fn csv_repetitions(&self) -> String {
        let header = [
            "backend",
            "size",
            "repetition",
            "tx_frames",
            "tx_bytes",
            "rx_frames",
            "rx_bytes",
            "elapsed_s",
            "kpps",
        ]
        .map(str::to_owned)
        .to_vec();
        let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
        let rows = self.sizes().into_iter().flat_map(|size| {
            self.sweeps.iter().flat_map(move |s| {
                let reps = s.point(size).map_or(&[][..], |p| &p.repetitions[..]);
                reps.iter().enumerate().map(move |(i, r)| {
                    vec![
                        s.context.backend.clone(),
                        size.to_string(),
                        (i + 1).to_string(),
                        r.tx_frames.to_string(),
                        r.tx_bytes.to_string(),
                        opt(r.rx_frames),
                        opt(r.rx_bytes),
                        r.elapsed_s.to_string(),
                        format!("{:.3}", r.kpps()),
                    ]
                })
            })
        });
        csv_rows(std::iter::once(header).chain(rows))
    }
}

fn measured_at_name(m: MeasuredAt) -> &'static str {
    match m {
        MeasuredAt::Sink => "sink",
        MeasuredAt::TxCompletions => "tx_completions",
    }
}

fn csv_rows(rows: impl Iterator<Item = Vec<String>>) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    // Writing into memory cannot fail, nor can its bytes be anything but the UTF-8 given.
    rows.for_each(|row| w.write_record(&row).expect("CSV into memory"));
    let bytes = w.into_inner().expect("CSV into memory");
    String::from_utf8(bytes).expect("CSV of UTF-8 fields")
}

/// A JSON object whose keys keep the order given (the columns' order), where a map would sort them.
struct InOrder<'a, T>(Vec<(&'a str, T)>);

impl<T: Serialize> Serialize for InOrder<'_, T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}
