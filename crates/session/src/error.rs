//! The one error type of the session: the shared failures nested as they come (`#[from]`),
//! each asked whether the user can fix it.

use linerate_engine::EngineError;
use linerate_port::{PortError, Usage as _};
use linerate_rx::RxError;
use linerate_stream::StreamError;

/// Why a session could not open, attach or run.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// What was asked cannot be done as asked (a flag combination, a missing file or interface
    /// for the backend): the user's to fix.
    #[error("{0}")]
    Usage(String),
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
            Self::Usage(_) | Self::Stream(_) => true,
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
