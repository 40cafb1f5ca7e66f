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
            || cause
                .downcast_ref::<linerate_report::ReportError>()
                .is_some_and(report_usage)
            || cause
                .downcast_ref::<PortError>()
                .is_some_and(PortError::is_usage)
            || cause
                .downcast_ref::<EngineError>()
                .is_some_and(EngineError::is_usage)
    })
}

/// A result file that is empty, corrupt or of the wrong shape, or an option that cannot be met,
/// is the user's to fix; failing to write or draw is not.
fn report_usage(err: &linerate_report::ReportError) -> bool {
    use linerate_report::ReportError as E;
    !matches!(err, E::Io { .. } | E::Plot { .. })
}
