use thiserror::Error;

/// What went wrong with a device's control plane.
#[derive(Debug, Error)]
pub enum RoutingError {
    /// A device's description cannot be run as given; the text names the field.
    #[error("{0}")]
    Invalid(String),
    /// FRR is not installed where linerate looks for it.
    #[error("{path} is missing: install FRR (`apt-get install frr`, or ./scripts/setup.sh)")]
    NoDaemon { path: String },
    /// The device's daemon exited, or did not come up.
    #[error("device {device}: {daemon} {why}")]
    Daemon {
        device: String,
        daemon: &'static str,
        why: String,
    },
    /// The daemon answered something linerate cannot read.
    #[error("device {device}: unreadable answer to `{command}`: {why}")]
    Answer {
        device: String,
        command: String,
        why: String,
    },
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[cfg(target_os = "linux")]
    #[error(transparent)]
    Lab(#[from] linerate_lab::LabError),
}

impl RoutingError {
    /// The input's fault (exit 2, HTTP 400), not the machine's.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            RoutingError::Invalid(_) | RoutingError::NoDaemon { .. }
        )
    }
}
