//! One error for the test bed: a place's own (the session's, an agent's) nested as it is.

use linerate_session::SessionError;

pub type Result<T, E = TestBedError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum TestBedError {
    /// What was asked cannot be done as asked: the user's to fix.
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Session(#[from] SessionError),
    #[cfg(target_os = "linux")]
    #[error(transparent)]
    Agent(#[from] linerate_agent::AgentError),
    /// The agents ran, and one of them failed or was lost: which, and why.
    #[error("{0}")]
    Agents(String),
    /// A capture could not start, or stopped by itself: where, and why.
    #[error("{0}")]
    Capture(String),
    /// The thread a test bed runs on is gone (it could not start, or ended).
    #[error("{0}")]
    Thread(String),
    /// A load bound of the RFC 2544 procedure that cannot be turned into frames per second.
    #[error("the {bound} load {rate}: {why}")]
    Load {
        bound: LoadBound,
        rate: String,
        why: String,
    },
    /// The min load searched is above the max load at a size.
    #[error(
        "the min load is above the max load at {size} B ({min:.0} > {max:.0} frames/s): lower \
         the min load or raise the max"
    )]
    MinAboveMax { size: usize, min: f64, max: f64 },
    /// What was being done when the cause failed.
    #[error("{context}")]
    Context {
        context: String,
        #[source]
        source: Box<TestBedError>,
    },
}

impl TestBedError {
    pub fn usage(message: impl Into<String>) -> Self {
        TestBedError::Usage(message.into())
    }

    /// Says what was being done when `self` happened.
    #[must_use]
    pub fn context(self, context: impl Into<String>) -> Self {
        TestBedError::Context {
            context: context.into(),
            source: Box::new(self),
        }
    }

    /// The user can fix it (exit code 2, HTTP 400).
    pub fn is_usage(&self) -> bool {
        match self {
            Self::Usage(_) | Self::Load { .. } | Self::MinAboveMax { .. } => true,
            Self::Session(e) => e.is_usage(),
            #[cfg(target_os = "linux")]
            Self::Agent(e) => e.is_usage(),
            Self::Agents(_) | Self::Capture(_) | Self::Thread(_) => false,
            Self::Context { source, .. } => source.is_usage(),
        }
    }

    /// The report so far of a run a worker ended early.
    pub fn interrupted(&self) -> Option<&linerate_engine::Interrupted> {
        match self {
            Self::Session(e) => e.interrupted(),
            Self::Context { source, .. } => source.interrupted(),
            _ => None,
        }
    }
}

/// Which bound of an RFC 2544 search a load is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadBound {
    Max,
    Min,
}

impl std::fmt::Display for LoadBound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LoadBound::Max => "max",
            LoadBound::Min => "min",
        })
    }
}
