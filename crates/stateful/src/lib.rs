//! Stateful traffic: TCP clients and servers emulated on a port, for the devices that keep
//! state (NATs, firewalls, load balancers) and are judged in connections a second, concurrent
//! sessions and goodput.
//!
//! Each end is smoltcp's TCP (handshake, window scaling, retransmission and its timers, FIN and
//! RST, TIME-WAIT) over a [`Link`]: an AF_PACKET socket on Linux ([`PacketLink`]), two joined
//! queues in tests ([`mem::pair`]). On top, the HTTP/1.1 profile ([`http`]): a client asks
//! `GET /<bytes>` and checks every byte of the body against a pattern a server (linerate's,
//! or nginx serving a file of [`http::body`]) writes, one size or a mix of them ([`mix`]); or a
//! session captured in a pcap, replayed
//! turn by turn ([`recording`]). A client takes its connections' source
//! addresses and ports from ranges, opens them at a rate under a cap, and counts how each
//! ended ([`ClientCounters`]): attempted = established + failed, established = closed + active.

mod addr;
mod client;
mod counters;
mod error;
pub mod http;
#[cfg(target_os = "linux")]
mod linux;
pub mod mem;
pub mod mix;
pub mod recording;
mod schedule;
mod server;
mod stack;
mod table;

pub use addr::{Addresses, OUTER_TPIDS, QINQ_TPID, Range};
pub use client::{
    ClientConfig, ClientReport, ClientSnapshot, TemplateReport, TimedOut, run_client,
};
pub use counters::{ClientCounters, Percentiles, ServerCounters};
pub use error::StatefulError;
#[cfg(target_os = "linux")]
pub use linux::PacketLink;
pub use mix::HttpTemplate;
pub use recording::{Check, Recording, Replay};
pub use schedule::Schedule;
pub use server::{ServerConfig, ServerReport, ServerSnapshot, run_server};
pub use stack::{Link, LinkCounters};
