//! Usage error or system error: the one place the exit code is decided. Each library error type
//! says itself whether the user can fix it (`is_usage`); this only asks them, outermost first.

use linerate_engine::EngineError;
use linerate_files::FileError;
use linerate_port::{PortError, Usage as _};
use linerate_report::ReportError;
use linerate_session::SessionError;
use linerate_stream::StreamError;
use linerate_testbed::TestBedError;

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

/// True when the error is the user's to fix. The outermost error in the chain whose type has an
/// opinion decides: a mid-run failure whose cause would be a usage error at the start (an
/// interface that went down) stays the system's, as its outer type says.
pub fn is_usage(err: &anyhow::Error) -> bool {
    err.chain().find_map(opinion).unwrap_or(false)
}

/// What the cause's own type says, if it is one of ours.
fn opinion(cause: &(dyn std::error::Error + 'static)) -> Option<bool> {
    if cause.is::<UsageError>() || cause.is::<StreamError>() {
        // Every stream error is about what the stream spec asks for.
        return Some(true);
    }
    asks::<TestBedError>(cause, TestBedError::is_usage)
        .or_else(|| asks::<SessionError>(cause, SessionError::is_usage))
        .or_else(|| asks::<FileError>(cause, FileError::is_usage))
        .or_else(|| asks::<ReportError>(cause, ReportError::is_usage))
        .or_else(|| asks::<PortError>(cause, PortError::is_usage))
        .or_else(|| asks::<EngineError>(cause, EngineError::is_usage))
        // A worker that failed mid-run: whatever its cause, the run was asked right.
        .or_else(|| asks::<linerate_engine::Interrupted>(cause, |_| false))
        .or_else(|| asks::<linerate_rx::RxError>(cause, linerate_rx::RxError::is_usage))
        .or_else(|| platform_opinion(cause))
}

fn asks<E: std::error::Error + 'static>(
    cause: &(dyn std::error::Error + 'static),
    is_usage: fn(&E) -> bool,
) -> Option<bool> {
    cause.downcast_ref::<E>().map(is_usage)
}

#[cfg(target_os = "linux")]
fn platform_opinion(cause: &(dyn std::error::Error + 'static)) -> Option<bool> {
    asks::<linerate_lab::LabError>(cause, linerate_lab::LabError::is_usage)
        .or_else(|| asks::<linerate_xdp::XdpError>(cause, linerate_xdp::XdpError::is_usage))
        .or_else(|| asks::<linerate_live::LiveError>(cause, linerate_live::LiveError::is_usage))
        .or_else(|| asks::<linerate_agent::AgentError>(cause, linerate_agent::AgentError::is_usage))
}

#[cfg(target_os = "macos")]
fn platform_opinion(cause: &(dyn std::error::Error + 'static)) -> Option<bool> {
    asks::<linerate_lab::LabError>(cause, linerate_lab::LabError::is_usage)
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn platform_opinion(_cause: &(dyn std::error::Error + 'static)) -> Option<bool> {
    None
}

#[cfg(test)]
mod tests {
    use std::io;

    use super::*;

    fn code(err: anyhow::Error) -> (u8, bool) {
        exit_code(&err)
    }

    #[test]
    fn each_error_type_decides_its_exit_code() {
        let down = || PortError::InterfaceDown { iface: "x0".into() };
        assert_eq!(code(anyhow::Error::from(down()).context("open")), (2, true));
        assert_eq!(code(usage("no")), (2, true));
        let io = || io::Error::other("disk");
        let failed = ReportError::Io {
            path: "a".into(),
            source: io(),
        };
        assert_eq!(code(failed.into()), (1, true));
        assert_eq!(code(anyhow::Error::from(io())), (1, true));
        let engine = EngineError::Port(PortError::io("run", io()));
        assert_eq!(code(engine.into()), (1, true));
        let pipe = io::Error::from(io::ErrorKind::BrokenPipe);
        assert_eq!(
            code(anyhow::Error::from(pipe).context("stdout")),
            (0, false)
        );
        assert_eq!(code(Interrupted("stop".into()).into()), (130, true));
        let refused = SessionError::usage("no").context("open the port");
        assert_eq!(code(refused.into()), (2, true));
        let failed = SessionError::from(PortError::io("run", io()));
        assert_eq!(code(failed.into()), (1, true));
        // The test bed's own, and a session's nested in it, keep their answer.
        let bed = TestBedError::usage("no").context("size 64");
        assert_eq!(code(bed.into()), (2, true));
        let nested = TestBedError::from(SessionError::usage("no"));
        assert_eq!(code(nested.into()), (2, true));
        let lost = TestBedError::Agents("lost agent a:1".into());
        assert_eq!(code(lost.into()), (1, true));
    }
}
