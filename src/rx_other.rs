//! The receiver is an XDP program: Linux only for now (a /dev/bpf reader is planned for macOS).

use anyhow::Result;

use crate::cli::RxArgs;
use crate::usage;

pub fn run(_args: &RxArgs) -> Result<()> {
    Err(usage(
        "linerate rx needs Linux (XDP) on this version; on macOS count at a Linux receiver",
    ))
}

/// Per flow what came back: never on this platform yet.
#[derive(Debug, serde::Serialize)]
pub struct RunFlows {
    pub at: String,
    #[serde(skip)]
    pub lab_end: bool,
    pub flows: Vec<linerate_rx::FlowReport>,
    pub other: linerate_rx::RxGlobal,
}

impl RunFlows {
    pub fn all_frames(&self) -> (u64, u64) {
        (0, 0)
    }
}

/// Never constructed here: `begin` refuses `--rx`.
#[derive(Debug)]
pub enum RunReceiver {}

impl RunReceiver {
    pub fn finish(
        self,
        _tx: &[(u16, Option<String>, u64)],
        _drain: std::time::Duration,
    ) -> Result<RunFlows> {
        match self {}
    }
}

pub fn begin(args: &crate::cli::TxArgs) -> Result<Option<RunReceiver>> {
    match args.rx {
        Some(_) => Err(usage(
            "--rx needs Linux (the receive program is XDP) on this version; count at a Linux receiver with linerate rx",
        )),
        None => Ok(None),
    }
}

pub fn sent_per_flow(
    _plan: &linerate_stream::Plan,
    _report: &linerate_engine::Report,
) -> Vec<(u16, Option<String>, u64)> {
    Vec::new()
}
