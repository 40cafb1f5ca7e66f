//! What the beds of several places of this machine share, hosts' and ports' alike: flow ids
//! given per stream, every place run at once as one bed's run, and a control per sending place.

use std::sync::Arc;

use linerate_engine::FlowControl;
use linerate_session::{PortOutcome, PortRun, RunOptions, Session};
use linerate_stream::Plan;

use crate::RunResult;
use crate::bed::{BedRun, PlaceRun};
use crate::error::{Result, TestBedError};

/// The first flow id of each run from the ids given per stream (`ids[i]`: stream `i`'s), which
/// must follow each other on one port; `order[k]` is the streams of run `k`, by index.
pub(crate) fn first_ids(runs: &[PortRun], order: &[Vec<usize>], ids: &[u16]) -> Result<Vec<u16>> {
    let streams = order.iter().map(Vec::len).sum::<usize>();
    if ids.len() != streams {
        return Err(TestBedError::usage(format!(
            "{streams} streams but {} flow ids",
            ids.len()
        )));
    }
    runs.iter()
        .zip(order)
        .map(|(r, order)| {
            let got = order
                .iter()
                .map(|&i| {
                    ids.get(i)
                        .copied()
                        .ok_or_else(|| TestBedError::usage(format!("stream {i}: no flow id")))
                })
                .collect::<Result<Vec<u16>>>()?;
            let first = *got
                .first()
                .ok_or_else(|| TestBedError::usage("a port's run without streams"))?;
            if got
                .iter()
                .enumerate()
                .any(|(i, &f)| usize::from(f) != usize::from(first) + i)
            {
                return Err(TestBedError::usage(format!(
                    "port {}: flow ids {got:?} do not follow each other (a controller numbers \
                     one port's flows consecutively)",
                    r.port
                )));
            }
            Ok(first)
        })
        .collect()
}

/// Runs every place's plan at once ([`Session::run_all`]; `cleared`: the receivers were
/// cleared by the caller, before a start instant shared with other beds) as one bed's run.
pub(crate) fn run(
    session: &mut Session,
    runs: &[PortRun],
    plans: &[Plan],
    run: RunOptions<'_>,
    cleared: bool,
) -> Result<BedRun> {
    let outcomes = if cleared {
        session.run_cleared(runs, plans, run)?
    } else {
        session.run_all(runs, plans, run)?
    };
    Ok(bed_run(outcomes))
}

/// Each place's outcome as the bed's run: frames per flow and per place, the totals, and the
/// mode of the first place that sent.
fn bed_run(outcomes: Vec<PortOutcome>) -> BedRun {
    let mut summary = RunResult::default();
    let mut mode = None;
    let mut places = Vec::with_capacity(outcomes.len());
    for o in outcomes {
        summary
            .per_flow
            .extend(o.sent.iter().map(|(id, _, n)| (*id, *n)));
        if let Some(r) = &o.report {
            summary.frames += r.completed;
            summary.bytes += r.bytes;
            summary.per_port.push((o.port, r.completed, r.bytes));
            summary.elapsed_s = summary.elapsed_s.max(r.elapsed_s);
            if mode.is_none() {
                mode = r.workers.first().map(|w| w.mode.clone());
            }
        }
        places.push(PlaceRun {
            place: o.port,
            report: o.report,
            sent: o.sent,
            received: o.flows,
        });
    }
    BedRun {
        summary,
        places,
        flows: Vec::new(),
        sink: None,
        mode,
    }
}

/// A control for each sending place's plan, set on its port: (place, control, first flow id).
pub(crate) fn set_control(
    session: &mut Session,
    runs: &[PortRun],
    plans: &[Plan],
) -> Vec<(usize, Arc<FlowControl>, u16)> {
    let mut made = Vec::with_capacity(runs.len());
    for (r, plan) in runs.iter().zip(plans) {
        if !crate::bed::steerable(plan) {
            continue;
        }
        let c = Arc::new(FlowControl::new(plan.streams.len()));
        session.port_mut(r.port).set_control(Some(Arc::clone(&c)));
        made.push((r.port, c, plan.first_flow));
    }
    made
}

/// The plan place `place` sends, of `runs` compiled into `plans`.
pub(crate) fn plan<'p>(runs: &[PortRun], plans: &'p [Plan], place: usize) -> Option<&'p Plan> {
    runs.iter().position(|r| r.port == place).map(|i| &plans[i])
}
