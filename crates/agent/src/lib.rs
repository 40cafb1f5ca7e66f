//! What a controller and its agents say to each other.
//!
//! A test bed's ports live on several machines. Each machine runs `linerate agent`, which serves
//! its own ports; one `linerate serve` is the controller that OTG clients (snappi) drive. The
//! controller splits a config into one [`Setup`] per agent — the hosts on that agent's ports, the
//! streams they send, each with its flow id from one numbering across the whole test bed — sets
//! them up everywhere or nowhere, starts every agent at one instant of their clocks, and reads
//! each agent's [`Status`]: what its ports sent and what its receivers counted, which it sums
//! into the OTG metrics.
//!
//! The transport is the agent's HTTPS API (the OTG server's own listener: its TLS, bearer token
//! and body limits) with the routes under [`PREFIX`]; docs/distributed.md says why not gRPC.
#![forbid(unsafe_code)]

#[cfg(target_os = "linux")]
pub mod client;
pub mod clock;
#[cfg(target_os = "linux")]
pub mod controller;
mod error;
pub mod lease;
pub mod proto;
#[cfg(target_os = "linux")]
pub mod tls;

#[cfg(target_os = "linux")]
pub use client::AgentClient;
pub use clock::{Offset, Sample, StartClock};
#[cfg(target_os = "linux")]
pub use controller::{Agents, AgentsView, Conductor, Controller, Placed, Split};
pub use error::AgentError;
pub use lease::Lease;
pub use proto::*;
