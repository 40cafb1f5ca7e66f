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
    /// A setting the client itself was given (a CA file that holds no certificate).
    #[error("{0}")]
    Usage(String),
}
