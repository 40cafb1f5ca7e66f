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

/// The command was stopped (Ctrl-C, SIGTERM) before it finished what it was asked: exit 130,
/// as a shell reports a command ended by SIGINT.
#[derive(Debug, thiserror::Error)]
#[error("interrupted: {0}")]
pub struct Interrupted(pub String);

/// The exit code for an error, and whether to say anything: a reader that went away
/// (`linerate … | head`) is not an error of ours and ends quietly with 0.
pub fn exit_code(err: &anyhow::Error) -> (u8, bool) {
    let broken_pipe = err.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    });
    if broken_pipe {
        (0, false)
    } else if err.chain().any(|c| c.is::<Interrupted>()) {
        (130, true)
    } else if is_usage(err) {
        (2, true)
    } else {
        (1, true)
    }
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
