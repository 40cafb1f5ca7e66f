//! The messages, as JSON bodies of the agent's routes.

use std::net::IpAddr;

use linerate_rx::RxTotals;
use linerate_stream::{HostSpec, StreamSpec};
use serde::{Deserialize, Serialize};

use crate::clock::StartClock;

/// Where the agent's routes live on its listener, beside the OTG API.
pub const PREFIX: &str = "/linerate/agent/v1";
/// POST a [`Setup`] (answered by [`SetupReply`]); DELETE it to detach everything.
pub const SETUP: &str = "/linerate/agent/v1/setup";
/// POST a [`Start`].
pub const START: &str = "/linerate/agent/v1/start";
/// POST (no body): stop transmitting; answered once the workers drained.
pub const STOP: &str = "/linerate/agent/v1/stop";
/// GET: a [`Status`]. Every call also renews the controller's lease.
pub const STATUS: &str = "/linerate/agent/v1/status";
/// GET: a [`ClockReading`], one sample of the offset measurement.
pub const CLOCK: &str = "/linerate/agent/v1/clock";
/// GET: [`Neighbours`], what each port's hosts learned.
pub const NEIGHBOURS: &str = "/linerate/agent/v1/neighbours";
/// POST a [`Capture`]: start or stop capturing on one of the agent's ports.
pub const CAPTURE: &str = "/linerate/agent/v1/capture";
/// POST a [`CaptureFile`]: the capture so far, as a pcap or pcapng file.
pub const CAPTURE_FILE: &str = "/linerate/agent/v1/capture/file";

/// POST a [`Steer`]: flows held, resumed, started, stopped or re-rated while a run goes on.
pub const FLOWS: &str = "/linerate/agent/v1/flows";

/// POST a [`RoutingAsk`]: the setup's control planes driven or read; the answer is what the
/// same call of `linerate_routing::Routers` returns, as JSON.
pub const ROUTING: &str = "/linerate/agent/v1/routing";

/// One call of the agent's `linerate_routing::Routers`, the controller's get_metrics,
/// get_states and set_control_state on devices whose ports are the agent's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "ask")]
pub enum RoutingAsk {
    /// `()`, or the daemon that died, as an error.
    Check,
    /// `protocol.all`: `()`.
    SetRunning { run: bool },
    /// `protocol.route`: whether a range of that name is the agent's.
    Announce { range: String, advertise: bool },
    /// `Vec<(String, Session)>`.
    Sessions,
    /// `Option<Prefixes>`: None when the peer is not the agent's.
    Learned { peer: String },
    /// `Vec<(String, Option<IsisView>)>`.
    Isis,
    /// `Vec<OspfState>`.
    Ospf,
    /// `Vec<Ospf6State>`.
    Ospf6,
    /// `Vec<LldpState>`.
    Lldp,
}

/// Flows of the agent's share steered while they run, each by its id.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Steer {
    pub changes: Vec<SteerFlow>,
}

/// One flow's change: its state (`running`, `paused` or `stopped`), its rate, or both.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SteerFlow {
    pub id: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<SteerRate>,
}

/// A flow's new rate: frames per second, its planned rate times a factor, or the planned one.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SteerRate {
    Pps(f64),
    TimesPlanned(f64),
    Planned,
}

/// Start (or stop) a capture on `port` (as the agent names it). The frames reach its stack only
/// if the setup said `pass`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capture {
    pub port: String,
    pub start: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaptureFile {
    pub port: String,
    pub pcapng: bool,
}

/// One agent's part of a test: its hosts, what they send, and the hosts elsewhere they send to.
/// A key it does not know is refused: a controller of another version, or a typo, would
/// otherwise have its intent dropped without a word.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Setup {
    /// Hosts on this agent's ports (`port` is `IFACE` or `IFACE@NETNS` on the agent).
    pub hosts: Vec<HostSpec>,
    /// Hosts on other agents: a stream toward one takes its address from here.
    pub peers: Vec<HostSpec>,
    /// Next hops whose MAC is given, never resolved (OTG `gateway_mac`).
    pub given: Vec<GivenMac>,
    /// The streams this agent's hosts send, each with its flow id. The ids of one sending
    /// port's streams are consecutive, ports in the order their hosts are first listed.
    pub flows: Vec<FlowSetup>,
    /// The flows that arrive at this agent's ports (sent here by any agent): what its status
    /// reports of its receivers.
    pub arriving: Vec<u16>,
    /// The run ends after this long (None: when stopped).
    pub duration_ms: Option<u64>,
    /// Received frames go on to the agent's stack too (a capture is running there).
    pub pass: bool,
    /// The control planes of devices on this agent's ports (their links' ports as the agent
    /// names them), started once its hosts are: daemons in namespaces of their own behind
    /// macvlans of the ports, as on the controller's own ports.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routers: Vec<linerate_routing::Device>,
    /// Hosts (by name) whose other frames go on to the stack, with the multicast groups their
    /// control plane listens to: what `BedSpec::to_stack` holds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub to_stack: Vec<(String, Vec<[u8; 6]>)>,
    /// Who sets it up: a controller's own id. While its lease is live, an agent refuses a setup
    /// from any other controller (409, naming the holder).
    #[serde(default)]
    pub controller: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GivenMac {
    pub host: String,
    pub hop: IpAddr,
    pub mac: [u8; 6],
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowSetup {
    /// The flow id its signature carries, unique across the test bed.
    pub id: u16,
    pub stream: StreamSpec,
    /// The stream runs at once with its port's others (`Mode::Interleaved`: a stream file's
    /// top-level mode, which the stream's own serde form leaves out); false: in sequence.
    #[serde(default)]
    pub interleaved: bool,
}

/// What a setup opened: the agent's ports in its session's order (the order [`Status`] lists
/// them in) and the clock its starts are scheduled on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetupReply {
    pub ports: Vec<String>,
    pub clock: StartClock,
}

/// Start the run set up, at `at_ns` on the agent's clock (None: now).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Start {
    pub at_ns: Option<u64>,
}

/// A start's answer: the number of the run it started, which its [`Status`] carries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Started {
    pub runs: u64,
}

/// One offset sample's two agent timestamps: when the request arrived and when the answer left.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClockReading {
    pub clock: StartClock,
    pub received_ns: u64,
    pub sent_ns: u64,
}

/// An agent's state: its run's progress and result, and every port's receiver counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// A setup is in place.
    pub configured: bool,
    /// Runs started since the agent began (a status of the run just started has the new
    /// number).
    pub runs: u64,
    /// A run is under way (or waiting for its start instant).
    pub running: bool,
    /// Frames and bytes (without FCS) sent so far in this run, all ports.
    pub frames: u64,
    pub bytes: u64,
    /// When the run's first frame was due, on the agent's clock.
    pub started_ns: Option<u64>,
    /// The last run's result, once it ended.
    pub result: Option<RunResult>,
    /// Per port, in [`SetupReply::ports`] order: what its receiver counted this run, of the
    /// flows [`Setup::arriving`] names (and every frame that is not a flow).
    pub rx: Vec<Option<RxTotals>>,
    /// Per port: its link is up.
    pub links: Vec<bool>,
    /// Why the agent stopped and detached on its own (its controller went silent).
    pub lease_expired: Option<String>,
}

/// A run's end: frames per flow and per port, or why it failed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// (flow id, frames sent).
    pub per_flow: Vec<(u16, u64)>,
    /// (port index on the agent, frames, bytes without FCS).
    pub per_port: Vec<(usize, u64, u64)>,
    pub frames: u64,
    pub bytes: u64,
    /// Seconds the longest-sending port sent.
    pub elapsed_s: f64,
    pub error: Option<String>,
}

/// Where a flow of a test bed is sent and counted: its id in the signature, the port that
/// sends it and the port whose receiver counts it (ports by their index in the whole test bed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowAt {
    pub id: u16,
    pub tx: usize,
    pub rx: Option<usize>,
}

/// Per port, in [`SetupReply::ports`] order: the neighbours its hosts asked for and how many
/// others they heard from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Neighbours {
    pub ports: Vec<PortNeighbours>,
}

/// `linerate_hosts::NeighbourReport` on the wire.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortNeighbours {
    pub asked: Vec<Neighbour>,
    pub others: usize,
}

/// `linerate_hosts::AskedNeighbour` on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Neighbour {
    pub addr: IpAddr,
    pub vlan: Option<u16>,
    pub mac: [u8; 6],
    #[serde(default)]
    pub learned: Option<[u8; 6]>,
    #[serde(default)]
    pub conflict: bool,
}

impl From<linerate_hosts::NeighbourReport> for PortNeighbours {
    fn from(r: linerate_hosts::NeighbourReport) -> Self {
        PortNeighbours {
            asked: r
                .asked
                .into_iter()
                .map(|n| Neighbour {
                    addr: n.addr,
                    vlan: n.vlan,
                    mac: n.mac,
                    learned: n.learned,
                    conflict: n.conflict,
                })
                .collect(),
            others: r.others,
        }
    }
}

impl From<PortNeighbours> for linerate_hosts::NeighbourReport {
    fn from(p: PortNeighbours) -> Self {
        linerate_hosts::NeighbourReport {
            asked: p
                .asked
                .into_iter()
                .map(|n| linerate_hosts::AskedNeighbour {
                    addr: n.addr,
                    vlan: n.vlan,
                    mac: n.mac,
                    learned: n.learned,
                    conflict: n.conflict,
                })
                .collect(),
            others: p.others,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setup_with_a_key_it_does_not_know_is_refused() {
        let mut setup = serde_json::to_value(Setup::default()).unwrap();
        serde_json::from_value::<Setup>(setup.clone()).unwrap();
        setup["host"] = serde_json::json!([]);
        let e = serde_json::from_value::<Setup>(setup).unwrap_err();
        assert!(e.to_string().contains("unknown field `host`"), "{e}");
    }
}
