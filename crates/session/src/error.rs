//! The one error type of the session: the shared failures nested as they come (`#[from]`),
//! each asked whether the user can fix it.

use linerate_engine::EngineError;
use linerate_port::{PortError, Usage as _};
use linerate_rx::RxError;
use linerate_stream::StreamError;

/// A setting of a port (or of its receiver or sink) that an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// The backend that sends.
    Backend,
    /// The interface the port sends on.
    Interface,
    /// The file the pcap backend writes.
    PcapFile,
    /// The cores the workers run on.
    Cores,
    /// The queues the workers drive.
    Queues,
    /// Where the port's receiver listens.
    Receiver,
    /// The clock the receiver stamps with.
    Clock,
    /// An interface whose every frame a sink counts.
    SinkInterface,
    /// The network namespace of that interface.
    SinkNetns,
    /// A lab made for the run.
    Lab,
    /// The port a host is on (its `port`).
    HostPort,
}

impl std::fmt::Display for Setting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Backend => "backend",
            Self::Interface => "interface",
            Self::PcapFile => "pcap file",
            Self::Cores => "cores",
            Self::Queues => "queues",
            Self::Receiver => "receive interface",
            Self::Clock => "clock",
            Self::SinkInterface => "sink interface",
            Self::SinkNetns => "sink network namespace",
            Self::Lab => "lab",
            Self::HostPort => "port",
        })
    }
}

/// Why a session could not open, attach or run.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// What was asked cannot be done as asked (a flag combination, a missing file or interface
    /// for the backend): the user's to fix.
    #[error("{0}")]
    Usage(String),
    /// One setting of a port cannot be used as given: which (for the caller to name in its
    /// own terms, a flag or a JSON path), and why in the library's words.
    #[error("{why}")]
    Setting { setting: Setting, why: String },
    #[error(transparent)]
    Port(#[from] PortError),
    #[error(transparent)]
    Engine(EngineError),
    /// A worker ended the run early; holds the report so far.
    #[error(transparent)]
    Interrupted(#[from] linerate_engine::Interrupted),
    /// The receive link died between runs: what it would count is not a measurement.
    #[error("{0}")]
    ReceiveLink(String),
    /// Ports on other machines (agents) failed a run: which, and why.
    #[error("{0}")]
    Agents(String),
    #[error(transparent)]
    Stream(#[from] StreamError),
    #[error(transparent)]
    Rx(#[from] RxError),
    /// What was being done when the cause failed.
    #[error("{context}")]
    Context {
        context: String,
        #[source]
        source: Box<SessionError>,
    },
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    #[error(transparent)]
    Lab(#[from] linerate_lab::LabError),
    #[cfg(target_os = "linux")]
    #[error(transparent)]
    Xdp(#[from] linerate_xdp::XdpError),
    #[cfg(target_os = "linux")]
    #[error(transparent)]
    Live(linerate_live::LiveError),
    #[cfg(target_os = "linux")]
    #[error(transparent)]
    Hosts(#[from] linerate_hosts::HostError),
    #[cfg(target_os = "linux")]
    #[error(transparent)]
    AfPacket(linerate_afpacket::AfPacketError),
    #[cfg(any(target_os = "macos", target_os = "freebsd"))]
    #[error(transparent)]
    Bpf(#[from] linerate_bpfdev::BpfError),
}

impl SessionError {
    pub fn usage(message: impl Into<String>) -> Self {
        Self::Usage(message.into())
    }

    /// `setting` cannot be used as given, for the reason `why`.
    pub fn setting(setting: Setting, why: impl Into<String>) -> Self {
        Self::Setting {
            setting,
            why: why.into(),
        }
    }

    /// The setting this error is about, if it is one setting's refusal.
    pub fn refused_setting(&self) -> Option<Setting> {
        match self {
            Self::Setting { setting, .. } => Some(*setting),
            _ => None,
        }
    }

    /// Wraps the error with what was being done.
    pub fn context(self, context: impl Into<String>) -> Self {
        Self::Context {
            context: context.into(),
            source: Box::new(self),
        }
    }

    /// True when the user can fix it by changing what they asked for (exit code 2). Every
    /// stream error is about what the stream spec asks for; a run a worker ended early was
    /// asked right, whatever its cause.
    pub fn is_usage(&self) -> bool {
        match self {
            Self::Usage(_) | Self::Setting { .. } | Self::Stream(_) => true,
            Self::Port(e) => e.is_usage(),
            Self::Engine(e) => e.is_usage(),
            Self::Interrupted(_) | Self::ReceiveLink(_) | Self::Agents(_) => false,
            Self::Rx(e) => e.is_usage(),
            Self::Context { source, .. } => source.is_usage(),
            #[cfg(any(target_os = "linux", target_os = "macos"))]
            Self::Lab(e) => e.is_usage(),
            #[cfg(target_os = "linux")]
            Self::Xdp(e) => e.is_usage(),
            #[cfg(target_os = "linux")]
            Self::Live(e) => e.is_usage(),
            #[cfg(target_os = "linux")]
            Self::Hosts(e) => e.is_usage(),
            #[cfg(target_os = "linux")]
            Self::AfPacket(e) => e.is_usage(),
            #[cfg(any(target_os = "macos", target_os = "freebsd"))]
            Self::Bpf(_) => false,
        }
    }

    /// The run a worker ended early, with its report so far, if that is what this is.
    pub fn interrupted(&self) -> Option<&linerate_engine::Interrupted> {
        match self {
            Self::Interrupted(i) => Some(i),
            Self::Context { source, .. } => source.interrupted(),
            _ => None,
        }
    }
}

/// A worker that failed mid-run is the run's own error, not the engine's refusal.
impl From<EngineError> for SessionError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::Interrupted(i) => Self::Interrupted(i),
            e => Self::Engine(e),
        }
    }
}

#[cfg(target_os = "linux")]
impl From<linerate_live::LiveError> for SessionError {
    fn from(e: linerate_live::LiveError) -> Self {
        match e {
            linerate_live::LiveError::Engine(e) => e.into(),
            e => Self::Live(e),
        }
    }
}

/// Its own sentence (CAP_NET_RAW alone) reaches the user, not the AF_XDP one.
#[cfg(target_os = "linux")]
impl From<linerate_afpacket::AfPacketError> for SessionError {
    fn from(e: linerate_afpacket::AfPacketError) -> Self {
        if e.is_usage() {
            Self::Usage(e.to_string())
        } else {
            Self::AfPacket(e)
        }
    }
}

pub type Result<T, E = SessionError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cause_decides_whether_the_user_can_fix_it() {
        assert!(SessionError::usage("no").is_usage());
        assert!(SessionError::from(PortError::NoSuchInterface("x0".into())).is_usage());
        let disk = || std::io::Error::other("disk");
        assert!(!SessionError::from(PortError::io("run", disk())).is_usage());
        assert!(SessionError::from(EngineError::NoWorkers).is_usage());
        let opened = SessionError::usage("no").context("open");
        assert!(opened.is_usage());
        assert_eq!(opened.to_string(), "open");
        assert!(opened.interrupted().is_none());
    }
}
