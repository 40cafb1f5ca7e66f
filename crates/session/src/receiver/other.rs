//! No receive side on this platform yet: a port's receiver is refused when asked for.

use std::time::Duration;

use linerate_rx::{RxProgress, RxTotals};

use crate::error::{Result, SessionError};
use crate::flows::{FlowSent, RunFlows};
use crate::options::RxTarget;

/// Never constructed here: [`RunReceiver::start`] refuses.
#[derive(Debug)]
pub enum RunReceiver {}

impl RunReceiver {
    pub fn start(_target: &RxTarget, _interface: Option<&str>) -> Result<RunReceiver> {
        Err(SessionError::setting(
            crate::Setting::Receiver,
            "a port's receiver needs Linux (XDP) or macOS (/dev/bpf) on this version: count at one of those",
        ))
    }

    pub fn read(&self) -> Result<RxTotals> {
        match *self {}
    }

    /// The receive link's state is not checked here: always fine.
    pub fn check_link(&self) -> Result<()> {
        Ok(())
    }

    pub fn reset(&self) -> Result<()> {
        match *self {}
    }

    pub fn progress(&self) -> Option<RxProgress> {
        match *self {}
    }

    pub fn finish(&self, _tx: &[FlowSent], _drain: Duration) -> Result<RunFlows> {
        match *self {}
    }

    pub fn finish_frames(&self, _frames: u64, _drain: Duration) -> Result<RunFlows> {
        match *self {}
    }
}
