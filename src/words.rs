//! The command line's words for the library's errors. A library error says what is missing or
//! wrong in its own terms (a port's setting, an impairment, a replay's speed), as every caller
//! reads it; here it is said as the command line asks for it: the flag that gives it, or the
//! command that fixes it. The one place a library error learns a flag.

use std::error::Error;

use linerate_report::ReportError;
use linerate_session::{SessionError, Setting};
use linerate_stream::{ReplaySetting, StreamError};
use linerate_testbed::TestBedError;

/// The error and its causes on one line, outermost first, each in the command line's words,
/// without repeating a cause that the outer message already quotes.
pub fn one_line(err: &(dyn Error + 'static)) -> String {
    let mut line = String::new();
    let mut next = Some(err);
    while let Some(cause) = next {
        next = cause.source();
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&words(cause).unwrap_or(text));
    }
    line
}

/// How the command line says `cause`, where it says it otherwise than the library: the flag
/// first (`--cores: no core to run on`), or the library's sentence with the command that
/// fixes it.
fn words(cause: &(dyn Error + 'static)) -> Option<String> {
    let known = Known::of(cause)?;
    if let Some(flag) = known.flag() {
        return Some(format!("{flag}: {cause}"));
    }
    known.sentence()
}

/// A library error the command line has words for, seen through the transparent wrappers
/// (a test bed's session error, a session's stream or lab error) that carry it as it is.
enum Known<'a> {
    /// The test bed's own refusals of what the command asked (an RFC 2544 load).
    Bed(&'a TestBedError),
    Session(&'a SessionError),
    Stream(&'a StreamError),
    Report(&'a ReportError),
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    Lab(&'a linerate_lab::LabError),
    #[cfg(target_os = "linux")]
    Live(&'a linerate_live::LiveError),
    #[cfg(target_os = "linux")]
    Agent(&'a linerate_agent::AgentError),
}

impl<'a> Known<'a> {
    fn of(cause: &'a (dyn Error + 'static)) -> Option<Self> {
        // The cause of a context of the test bed's or the session's own is boxed.
        let bed = (cause.downcast_ref::<TestBedError>())
            .or_else(|| cause.downcast_ref::<Box<TestBedError>>().map(|b| &**b));
        let session = (cause.downcast_ref::<SessionError>())
            .or_else(|| cause.downcast_ref::<Box<SessionError>>().map(|b| &**b));
        if let Some(e) = bed {
            return match e {
                TestBedError::Session(e) => Some(Self::session(e)),
                e @ (TestBedError::Load { .. } | TestBedError::MinAboveMax { .. }) => {
                    Some(Self::Bed(e))
                }
                #[cfg(target_os = "linux")]
                TestBedError::Agent(e) => Some(Self::Agent(e)),
                _ => None,
            };
        }
        if let Some(e) = session {
            return Some(Self::session(e));
        }
        if let Some(e) = cause.downcast_ref::<StreamError>() {
            return Some(Self::Stream(e));
        }
        if let Some(e) = cause.downcast_ref::<ReportError>() {
            return Some(Self::Report(e));
        }
        #[cfg(any(target_os = "linux", target_os = "macos"))]
        if let Some(e) = cause.downcast_ref::<linerate_lab::LabError>() {
            return Some(Self::Lab(e));
        }
        #[cfg(target_os = "linux")]
        if let Some(e) = cause.downcast_ref::<linerate_live::LiveError>() {
            return Some(Self::Live(e));
        }
        #[cfg(target_os = "linux")]
        if let Some(e) = cause.downcast_ref::<linerate_agent::AgentError>() {
            return Some(Self::Agent(e));
        }
        None
    }

    /// The session's own error, or the one it carries as it is.
    fn session(e: &'a SessionError) -> Self {
        match e {
            SessionError::Stream(e) => Self::Stream(e),
            #[cfg(any(target_os = "linux", target_os = "macos"))]
            SessionError::Lab(e) => Self::Lab(e),
            #[cfg(target_os = "linux")]
            SessionError::Live(e) => Self::Live(e),
            e => Self::Session(e),
        }
    }

    /// The flag that gives what the error is about.
    fn flag(&self) -> Option<&'static str> {
        match self {
            Self::Session(e) => e.refused_setting().and_then(setting_flag),
            Self::Stream(StreamError::Replay { setting, .. }) => Some(match setting {
                ReplaySetting::Speed => "--speed",
                ReplaySetting::Loops => "--loop",
            }),
            Self::Stream(StreamError::SizeOverMtu { settable: true, .. }) => Some("--mtu"),
            #[cfg(target_os = "linux")]
            Self::Live(e) => {
                use linerate_live::LiveError;
                match e {
                    LiveError::NoLiveFrames { .. }
                    | LiveError::LiveFramesRefused { .. }
                    | LiveError::NoXdpTransmit { .. }
                    | LiveError::NotLinux => Some("--backend"),
                    LiveError::OffCore { .. } => Some("--cores"),
                    _ => None,
                }
            }
            #[cfg(target_os = "linux")]
            Self::Agent(linerate_agent::AgentError::NoCaCertificate) => Some("--agent-ca"),
            _ => None,
        }
    }

    /// The library's sentence with what the command line does about it.
    fn sentence(&self) -> Option<String> {
        match self {
            Self::Bed(TestBedError::Load { bound, rate, why }) => Some(format!(
                "{} {rate}: {why} (--link-speed)",
                load_flag(*bound)
            )),
            Self::Bed(TestBedError::MinAboveMax { size, min, max }) => Some(format!(
                "--min-rate is above the max load at {size} B ({min:.0} > {max:.0} frames/s): \
                 lower --min-rate or raise --max-rate"
            )),
            Self::Stream(StreamError::UnknownHost { stream, key, name }) => Some(format!(
                "stream '{stream}': {key}: no host named {name:?} (declare it with --host or in a [[host]] table)"
            )),
            Self::Report(
                e @ (ReportError::Empty { .. }
                | ReportError::Corrupt { .. }
                | ReportError::Shape { .. }),
            ) => Some(format!("{e} (as `linerate sweep --json FILE` writes)")),
            #[cfg(any(target_os = "linux", target_os = "macos"))]
            Self::Lab(e) => lab_sentence(e),
            _ => None,
        }
    }
}

fn load_flag(bound: linerate_testbed::LoadBound) -> &'static str {
    match bound {
        linerate_testbed::LoadBound::Max => "--max-rate",
        linerate_testbed::LoadBound::Min => "--min-rate",
    }
}

/// The flag of a port's setting; a host's port is a key of its `--host`, which names itself.
fn setting_flag(setting: Setting) -> Option<&'static str> {
    Some(match setting {
        Setting::Backend => "--backend",
        Setting::Interface => "-i",
        Setting::PcapFile => "--pcap",
        Setting::Cores => "--cores",
        Setting::Queues => "--queues",
        Setting::Receiver => "--rx",
        Setting::Clock => "--clock",
        Setting::SinkInterface => "--sink-iface",
        Setting::SinkNetns => "--sink-netns",
        Setting::Lab => "--lab",
        Setting::HostPort => return None,
    })
}

/// A lab's refusal with the `linerate lab` command or flag that fixes it.
#[cfg(any(target_os = "linux", target_os = "macos"))]
fn lab_sentence(e: &linerate_lab::LabError) -> Option<String> {
    use linerate_lab::{Impairment, LabError};
    Some(match e {
        LabError::Exists { name } => format!(
            "a lab named {name} exists already: remove it with `linerate lab down --name {name}`"
        ),
        LabError::Incomplete { name, missing } => format!(
            "lab {name} is incomplete ({missing} is missing): remove it with `linerate lab down --name {name}`"
        ),
        LabError::NotFound { name } => {
            format!("no lab named {name}: create it with `linerate lab up --name {name}`")
        }
        LabError::NotOurs { name, parts } => format!(
            "{parts} exist(s) but linerate did not make them (no lab marker): left alone; pick another --name than {name}"
        ),
        LabError::Busy { name } => format!(
            "lab {name} is being built, used or removed by another linerate process: wait for it or pick another --name"
        ),
        LabError::InvalidImpairment {
            impairment,
            value,
            reason,
        } => {
            let flag = match impairment {
                Impairment::Loss => "--loss",
                Impairment::Duplicate => "--duplicate",
                Impairment::Delay => "--delay",
                Impairment::Jitter => "--jitter",
                Impairment::Reorder => "--reorder",
                Impairment::Rate => "--rate",
                Impairment::Limit => "--limit",
                Impairment::ReverseRate => "--reverse-rate",
            };
            format!("bad {flag} {value:?}: {reason}")
        }
        LabError::NoDut { name } => format!(
            "lab {name} has no device under test to impair: make one with `linerate lab up --name {name} --dut router`"
        ),
        LabError::XdpDutImpair { name } => format!(
            "lab {name}'s xdp DUT redirects frames past the egress path (tc, qdiscs), where impairments sit: use --dut router or bridge"
        ),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(e: impl Into<anyhow::Error>) -> String {
        one_line(e.into().as_ref())
    }

    #[test]
    fn a_refused_setting_reads_as_its_flag() {
        let cores = || SessionError::setting(Setting::Cores, "no core to run on");
        assert_eq!(line(cores()), "--cores: no core to run on");
        // Through the test bed, and under a context of the session's own.
        assert_eq!(
            line(TestBedError::from(cores())),
            "--cores: no core to run on"
        );
        assert_eq!(
            line(cores().context("open the port")),
            "open the port: --cores: no core to run on"
        );
        let bed = TestBedError::from(cores()).context("open the test bed");
        assert_eq!(line(bed), "open the test bed: --cores: no core to run on");
        let e = anyhow::Error::from(cores()).context("tx");
        assert_eq!(one_line(e.as_ref()), "tx: --cores: no core to run on");
        // What the command line has no flag for reads as the library says it.
        let plain = SessionError::usage("no");
        assert_eq!(line(plain), "no");
        let port = SessionError::setting(Setting::HostPort, "port a@: write IFACE or IFACE@NETNS");
        assert_eq!(line(port), "port a@: write IFACE or IFACE@NETNS");
    }

    #[test]
    fn stream_and_replay_settings_read_as_their_flags() {
        let speed = StreamError::Replay {
            setting: ReplaySetting::Speed,
            why: "'fast' is not a speed".into(),
        };
        assert_eq!(line(speed), "--speed: 'fast' is not a speed");
        let mtu = StreamError::SizeOverMtu {
            size: 9000,
            max: 1518,
            mtu: 1500,
            settable: true,
        };
        assert!(line(SessionError::from(mtu)).starts_with("--mtu: frame size 9000"));
        let host = StreamError::UnknownHost {
            stream: "s".into(),
            key: "from",
            name: "a".into(),
        };
        assert!(line(host).contains("--host"));
    }

    #[cfg(any(target_os = "linux", target_os = "macos"))]
    #[test]
    fn a_lab_refusal_names_the_command_that_fixes_it() {
        use linerate_lab::{Impairment, LabError};
        let exists = LabError::Exists { name: "lr".into() };
        assert_eq!(
            line(SessionError::from(exists)),
            "a lab named lr exists already: remove it with `linerate lab down --name lr`"
        );
        let bad = LabError::InvalidImpairment {
            impairment: Impairment::ReverseRate,
            value: "1k".into(),
            reason: "a rate is 8 kbit/s to 100 Gbit/s".into(),
        };
        assert_eq!(
            line(bad),
            "bad --reverse-rate \"1k\": a rate is 8 kbit/s to 100 Gbit/s"
        );
    }
}
