//! Usage error or system error: the one place the exit code is decided. Each library error type
//! says itself whether the user can fix it (`is_usage`); this only asks them.

use linerate_engine::EngineError;
use linerate_port::PortError;
use linerate_report::ReportError;
use linerate_stream::StreamError;

/// A mistake in what the user asked for that no library type raised (a flag combination the
/// CLI refuses): exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

pub fn usage(message: impl Into<String>) -> anyhow::Error {
    UsageError(message.into()).into()
}

/// True when anything in the error chain is something the user can fix by changing the command.
pub fn is_usage(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause.is::<UsageError>()
            // Every stream error is about what the stream spec asks for.
            || cause.is::<StreamError>()
            || asks::<ReportError>(cause, ReportError::is_usage)
            || asks::<PortError>(cause, PortError::is_usage)
            || asks::<EngineError>(cause, EngineError::is_usage)
            || platform_is_usage(cause)
    })
}

fn asks<E: std::error::Error + 'static>(
    cause: &(dyn std::error::Error + 'static),
    is_usage: fn(&E) -> bool,
) -> bool {
    cause.downcast_ref::<E>().is_some_and(is_usage)
}

#[cfg(target_os = "linux")]
fn platform_is_usage(cause: &(dyn std::error::Error + 'static)) -> bool {
    asks::<linerate_lab::LabError>(cause, linerate_lab::LabError::is_usage)
        || asks::<linerate_xdp::XdpError>(cause, linerate_xdp::XdpError::is_usage)
        || asks::<linerate_live::LiveError>(cause, linerate_live::LiveError::is_usage)
}

#[cfg(not(target_os = "linux"))]
fn platform_is_usage(_cause: &(dyn std::error::Error + 'static)) -> bool {
    false
}
