//! What a run sent per flow and what came back: shared by the receivers of every platform.

use linerate_rx::{FlowReport, RxTotals};
use serde::Serialize;

/// Frames one flow sent in a run: flow id, stream name, frames.
pub type FlowSent = (u16, Option<String>, u64);

/// Per flow what was sent and what came back, and what was not a flow.
#[derive(Debug, Clone, Serialize)]
pub struct RunFlows {
    pub at: String,
    /// The receiver had the lab's receive end (the sink's counts come from it this run).
    #[serde(skip)]
    pub lab_end: bool,
    pub flows: Vec<FlowReport>,
    pub other: linerate_rx::RxGlobal,
    /// Frames of signed flows this run did not send: another sender stamping linerate's
    /// signature on the same link. In no flow of the run, but counted in its total.
    pub foreign: Foreign,
}

/// Frames that carried the signature of a flow the run did not send.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Foreign {
    pub flows: u32,
    pub frames: u64,
    pub bytes: u64,
}

impl RunFlows {
    /// Frames the receive end saw in all, flows or not: what the lab's sink would have counted.
    pub fn all_frames(&self) -> (u64, u64) {
        let g = &self.other;
        let frames = self.flows.iter().fold(
            (
                g.other_frames + g.untracked_frames,
                g.other_bytes + g.untracked_bytes,
            ),
            |(f, b), r| (f + r.rx_frames, b + r.rx_bytes),
        );
        (
            frames.0 + self.foreign.frames,
            frames.1 + self.foreign.bytes,
        )
    }

    /// The line a report adds when frames of flows this run did not send arrived.
    pub fn foreign_warning(&self) -> Option<String> {
        let f = &self.foreign;
        (f.frames > 0).then(|| {
            format!(
                "{} frame(s) of {} signed flow(s) this run did not send arrived at {}: another sender stamps linerate's signature on this link; they are in no flow above, and in the receive end's total",
                f.frames, f.flows, self.at
            )
        })
    }
}

/// The frames of the flows `totals` saw that `sent` does not name.
#[cfg(any(target_os = "linux", target_os = "macos"))]
pub(crate) fn foreign(sent: &[FlowSent], totals: &RxTotals) -> Foreign {
    totals
        .flows
        .iter()
        .filter(|f| !sent.iter().any(|s| s.0 == f.flow))
        .fold(Foreign::default(), |acc, f| Foreign {
            flows: acc.flows + 1,
            frames: acc.frames + f.frames,
            bytes: acc.bytes + f.bytes,
        })
}

/// Flow reports for a receiver that does not know what was sent: each flow's "sent" is the
/// highest sequence number seen + 1 less the frames the gaps never accounted for.
pub fn lone_reports(totals: &RxTotals) -> Vec<FlowReport> {
    totals
        .flows
        .iter()
        .map(|f| FlowReport::new(f.flow, None, f.unique() + f.estimated_loss(), Some(f)))
        .collect()
}

/// Each flow's report against what it sent.
#[cfg(any(target_os = "linux", target_os = "macos"))]
pub(crate) fn against(sent: &[FlowSent], totals: &RxTotals) -> Vec<FlowReport> {
    sent.iter()
        .map(|(id, name, n)| FlowReport::new(*id, name.clone(), *n, totals.flow(*id)))
        .collect()
}

/// Frames each flow of `plan` sent in a run: a lane's count, or a cycle's frames split by flow
/// from each worker's count.
pub fn sent_per_flow(
    plan: &linerate_stream::Plan,
    report: &linerate_engine::Report,
) -> Vec<FlowSent> {
    let base = plan.first_flow;
    let name = |flow: u16| {
        plan.streams
            .get(usize::from(flow.wrapping_sub(base)))
            .map(|s| s.name.clone())
    };
    match &plan.shape {
        // A capture's frames carry no signature: no flow to count.
        linerate_stream::Shape::Streamed { .. } => Vec::new(),
        linerate_stream::Shape::Lanes(_) => report
            .per_stream
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let flow = base + i as u16;
                (flow, name(flow), s.frames)
            })
            .collect(),
        linerate_stream::Shape::Cycle { cycle, .. } => {
            let workers = report.workers.len();
            let mut per_flow = std::collections::BTreeMap::<u16, u64>::new();
            for w in &report.workers {
                for (flow, n) in cycle.flow_counts(w.worker, workers, w.submitted) {
                    *per_flow.entry(flow).or_default() += n;
                }
            }
            per_flow
                .into_iter()
                .map(|(flow, n)| (flow, name(flow), n))
                .collect()
        }
    }
}
