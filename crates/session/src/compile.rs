//! Streams compiled for a port: what the port and its lab impose and suggest, and the slowest
//! rate the pacer keeps.

use linerate_port::PortInfo;
use linerate_stream::{Limits, Plan, Shape, StreamSpec};

use crate::error::{Result, SessionError};
use crate::sink::Sink;

/// The slowest rate the pacer is asked to keep: below it the gap between two frames is longer
/// than any run anyone waits for (1000 s), and at 1e-300 it is not a number of nanoseconds.
pub const MIN_PPS: f64 = 1e-3;

/// Compiles the streams against what the port and the lab (its sink) impose and suggest.
pub fn compile(
    streams: &[StreamSpec],
    info: &PortInfo,
    lab: Option<&Sink>,
    link_mbps: Option<u64>,
) -> Result<Plan> {
    compile_from(streams, info, lab, link_mbps, 0)
}

/// [`compile`], the streams' flow ids starting at `first_flow`.
pub fn compile_from(
    streams: &[StreamSpec],
    info: &PortInfo,
    lab: Option<&Sink>,
    link_mbps: Option<u64>,
    first_flow: u16,
) -> Result<Plan> {
    let defaults = Limits::default();
    let limits = Limits {
        mtu: info.mtu,
        mtu_settable: matches!(info.backend, "pcap" | "null"),
        default_src_mac: info.mac,
        default_dst_mac: lab.map(|l| l.peer_mac),
        default_ipv4: lab.map_or(defaults.default_ipv4, |l| l.ips),
        link_mbps: link_mbps.or(info.link_speed.map(|s| s.mbps())),
        first_flow,
    };
    let plan = Plan::compile(streams, &limits)?;
    let rates: Vec<Option<f64>> = match &plan.shape {
        Shape::Cycle { pacing, .. } | Shape::Streamed { pacing, .. } => {
            vec![pacing.as_ref().map(|p| p.pps())]
        }
        Shape::Lanes(lanes) => lanes.iter().map(|l| Some(l.pacing.pps())).collect(),
    };
    for (rate, spec) in rates.into_iter().zip(streams) {
        if let Some(pps) = rate
            && (pps.is_nan() || pps < MIN_PPS)
        {
            return Err(SessionError::usage(format!(
                "stream {}: rate {} is {pps:.3e} frames/s, below the slowest linerate paces, \
                 {MIN_PPS} frames/s (one frame each {} s)",
                spec.name,
                spec.rate,
                1.0 / MIN_PPS
            )));
        }
    }
    Ok(plan)
}
