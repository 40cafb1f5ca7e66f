//! The test bed: N places, each a port of this machine or a port of an agent on another one,
//! with hosts (OTG devices) as an optional layer over any of them (or flows between this
//! machine's ports, no hosts), and one API every command
//! calls — [`TestBed::open`], [`TestBed::resolve`], [`TestBed::compile`], [`TestBed::run`],
//! live counts ([`TestBed::counts`]) and the stop flag. Where the ports are changes only how
//! the bed is opened. It parses no arguments and prints nothing but warnings a run cannot return.

#![forbid(unsafe_code)]

#[cfg(target_os = "linux")]
mod agents;
mod bed;
#[cfg(target_os = "linux")]
mod capture;
mod control;
mod counts;
mod error;
#[cfg(target_os = "linux")]
mod hosts;
#[cfg(target_os = "linux")]
mod ports;
pub mod rfc2544;
#[cfg(target_os = "linux")]
mod several;
#[cfg(target_os = "linux")]
mod share;
mod thread;

#[cfg(target_os = "linux")]
pub use agents::agent_of;
pub use bed::{BedRun, BedSpec, FlowRun, Go, PlaceRun, Places, TestBed};
#[cfg(target_os = "linux")]
pub use capture::{Kept, PortCapture};
pub use control::{BedControl, FlowChange, RateAsk, Remote};
pub use counts::{Counts, LiveCounts};
pub use error::{LoadBound, Result, TestBedError};
#[cfg(target_os = "linux")]
pub use linerate_agent::{AgentsView, Controller, GivenMac};
pub use linerate_agent::{FlowAt, FlowSetup, RunResult};
pub use linerate_engine::FlowState;
#[cfg(target_os = "linux")]
pub use share::{share, stamp_clock, status};
pub use thread::{BedThread, Progress};
