use thiserror::Error;

/// What went wrong talking to one agent; every variant names it.
#[derive(Debug, Error)]
pub enum AgentError {
    /// No answer: the agent is down, unreachable, or its TLS or token handshake failed.
    #[error("agent {agent}: {why}")]
    Unreachable { agent: String, why: String },
    /// The agent answered with a refusal (its errors, as its API words them).
    #[error("agent {agent} refused {what} ({status}): {}", errors.join("; "))]
    Refused {
        agent: String,
        what: String,
        status: u16,
        errors: Vec<String>,
    },
    /// The answer was not what the protocol says.
    #[error("agent {agent}: {what}: {why}")]
    Protocol {
        agent: String,
        what: String,
        why: String,
    },
    /// The CA the client was given to check agents by holds no certificate.
    #[error("the agents' CA holds no PEM certificate")]
    NoCaCertificate,
    /// The flow ids of a test bed are 16 bits wide.
    #[error("more than 65,536 flows across the agents: the signature numbers flows in 16 bits")]
    TooManyFlows,
    /// A port named an agent the test bed was not set up on.
    #[error("no agent {0} in the test bed")]
    NoSuchAgent(String),
    /// A device's control plane cannot be placed on the test bed's agents.
    #[error("{0}")]
    Placement(String),
    /// One agent refused or failed its setup: the others were released.
    #[error("no agent keeps the config")]
    NotKept(#[source] Box<AgentError>),
    /// An agent's clock is not known closely enough and the controller is strict.
    #[error("{0}")]
    Unsynchronised(String),
    /// A start did not reach every agent: those it reached were stopped.
    #[error("the start")]
    Start(#[source] Box<AgentError>),
    /// An agent was lost earlier: the test bed holds nothing any more.
    #[error("{0}")]
    Lost(String),
    /// The thread that keeps the agents' leases could not start.
    #[error("start the agents' heartbeat: {0}")]
    Thread(#[source] std::io::Error),
}

impl AgentError {
    /// The user can fix it by changing what they asked for (exit code 2, HTTP 400).
    pub fn is_usage(&self) -> bool {
        match self {
            Self::NoCaCertificate
            | Self::TooManyFlows
            | Self::NoSuchAgent(_)
            | Self::Placement(_) => true,
            Self::NotKept(e) | Self::Start(e) => e.is_usage(),
            _ => false,
        }
    }
}
