use linerate_engine::EngineError;
use linerate_port::PortError;
use linerate_stream::StreamError;

/// A mistake in what the user asked for, as opposed to the system failing: exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

pub fn usage(message: impl Into<String>) -> anyhow::Error {
    UsageError(message.into()).into()
}

/// Walks the error chain for anything the user can fix by changing the command line.
pub fn is_usage(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause.is::<UsageError>()
            || cause.is::<StreamError>()
            || cause.is::<linerate_report::ReportError>()
            || cause
                .downcast_ref::<PortError>()
                .is_some_and(PortError::is_usage)
            || cause
                .downcast_ref::<EngineError>()
                .is_some_and(EngineError::is_usage)
    })
}
