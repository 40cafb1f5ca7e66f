//! Sweep and RFC 2544 results of linerate: the JSON result file with its context, the max-rate table, CSV,
//! plots and the comparison of several sweeps, plus the wire-rate arithmetic they share.
//! No network I/O and no measuring: the engine measures, this crate reports.

mod backends;
mod compare;
mod error;
mod host;
mod output;
mod plot;
mod rate;
mod result;
pub mod rfc2544;
mod table;
mod written;

pub use backends::{BACKENDS_FORMAT, BackendSweeps, INTERLEAVED, Skipped, backend_label};
pub use compare::{CompareRow, Comparison, EQUAL_WITHIN, LINE_RATE_PCT, compare, names_from_paths};
pub use error::ReportError;
pub use host::{HostInfo, interface_driver, interface_link_speed_mbps, rfc3339_utc};
pub use output::OutputFile;
pub use plot::{Curve, Panel, PlotFormat, plot_backends, plot_compare, plot_panels, plot_sweep};
pub use rate::{LinkSpeed, WIRE_OVERHEAD, line_rate_pps, wire_mbps};
pub use result::{
    BackendChoice, Context, FORMAT, MeasuredAt, Repetition, SizePoint, Summary, SweepResult,
};
pub use table::{
    context_line, csv_repetitions, csv_summary, format_cores, render_table, repetitions_csv_path,
    write_csv,
};
pub use written::{Outputs, Written, Wrote, choice_line, draw, reserve_plot, sweep_csv_paths};

#[cfg(test)]
mod tests;
