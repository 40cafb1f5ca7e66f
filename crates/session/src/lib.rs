//! The test core of linerate: a [`Session`] of N ports, each opened once with its own sender,
//! lab sink and receiver, and any number of runs on them — for every command (tx, replay,
//! sweep, rfc2544, serve). Its options are its own typed values; it holds no argument parser
//! and prints nothing but warnings a run cannot return.
#![forbid(unsafe_code)]

mod auto;
mod compile;
mod error;
mod flows;
#[cfg(target_os = "linux")]
mod hosts;
#[cfg(target_os = "macos")]
mod macos;
mod multi;
mod netns;
mod options;
#[cfg_attr(target_os = "linux", path = "receiver/linux.rs")]
#[cfg_attr(target_os = "macos", path = "receiver/macos.rs")]
#[cfg_attr(
    not(any(target_os = "linux", target_os = "macos")),
    path = "receiver/other.rs"
)]
mod receiver;
mod sender;
mod session;
mod sink;
mod sweep;

pub use auto::PortNeeds;
pub use compile::{MIN_PPS, compile};
pub use error::{Result, SessionError, Setting};
pub use flows::{FlowSent, Foreign, RunFlows, lone_reports, sent_per_flow};
#[cfg(target_os = "linux")]
pub use hosts::{AskedNeighbours, HostSession, ports_of};
#[cfg(target_os = "macos")]
pub use macos::capture;
pub use multi::{PortOutcome, PortRun};
pub use netns::split as split_netns;
pub use options::{
    AfXdpOptions, Backend, Clock, End, PortOptions, ReceiverOptions, RxAttach, RxTarget, XdpAttach,
    XdpMode, allowed_cores, place_ports, workers,
};
pub use receiver::RunReceiver;
#[cfg(target_os = "macos")]
pub use receiver::{start_capture, warn_drops};
pub use sender::Sender;
pub use session::{Outcome, PortSession, RunOptions, Session};
pub use sink::{Counters, Sink, SinkResult, TempLab};
#[cfg(target_os = "linux")]
pub use sink::{LabSink, lab_at, lab_of, receive_end};
pub use sweep::{Cut, Series, Sweep, SweepObserver, Swept, plans as sweep_plans};
