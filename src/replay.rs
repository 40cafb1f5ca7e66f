//! `linerate replay`: a capture's frames become a plan's pre-built frames, laid into the port's
//! buffers once, and run on the engine's runner and pacer as any stream: the capture's own
//! timing scaled (`--speed`), a fixed rate (`--rate`) or the port's limit (`--speed max`).

use std::path::Path;

use anyhow::Result;
use linerate_files::{Hold, load_capture};
use linerate_stream::{Capture, Plan, Replay, Speed};
use serde::Serialize;

use linerate_session::{Backend, Outcome, RunFlows, RunOptions, SinkResult};
use linerate_testbed::{BedSpec, TestBed};

use crate::options;
use crate::output::{self, LiveStatus};
use crate::signal::stop_flag;
use crate::usage;
use linerate_cli::{ClockArg, ReplayArgs};

/// What was replayed and how, for the report.
#[derive(Debug, Serialize)]
pub struct CaptureJson {
    pub file: String,
    pub format: String,
    pub frames: u64,
    pub bytes: u64,
    /// From the first frame to the last, as captured.
    pub duration_s: f64,
    /// Where the frames were held: "loaded" (once, into the port's buffers) or "streamed"
    /// (from the mapped file, copied into a buffer as each is sent).
    pub mode: &'static str,
    /// `1x`, `2.5x` or `max`; None when `rate` replaced the capture's timing.
    pub speed: Option<String>,
    pub rate: Option<String>,
    /// Times the capture is sent (None: until stopped).
    pub loops: Option<u64>,
    /// Frames stamped earlier than the one before them (sent with it, in file order).
    pub reordered: u64,
}

#[derive(Debug, Serialize)]
struct ReplayJson<'a> {
    #[serde(flatten)]
    report: &'a linerate_engine::Report,
    capture: &'a CaptureJson,
    #[serde(skip_serializing_if = "Option::is_none")]
    sink: Option<SinkResult>,
    /// What the receive end (`--rx`) counted: the frames carry no signature, so all of them
    /// are "other".
    #[serde(skip_serializing_if = "Option::is_none")]
    rx: Option<&'a RunFlows>,
    #[serde(skip_serializing_if = "Option::is_none")]
    backend_choice: Option<output::ChoiceJson<'a>>,
}

pub fn run(args: &ReplayArgs) -> Result<()> {
    let replay = options(args)?;
    // Checked here too so that a bad --cores/--queues is refused before the capture loads.
    linerate_session::workers(
        &args.send.port.cores,
        args.send.queues.as_deref(),
        args.send.backend.map(crate::options::backend),
    )?;
    let backend = options::send_backend(
        &args.send,
        "nothing to replay to: give -i IFACE, --pcap FILE or --null",
    )?;
    let hold = if args.from_file {
        Hold::Stream
    } else {
        Hold::Auto
    };
    // The capture's frames carry no signature: the clock stamps nothing.
    let mut spec = BedSpec::port(options::send_port(&args.send, backend));
    spec.rx = args.rx.as_deref().map(|t| options::send_rx(t, &args.send));
    // A file port's capture is checked before the file is created, so a refused capture never
    // truncates an earlier output; an interface's MTU is known only once it is open.
    let (mut bed, capture) = match backend {
        Backend::Pcap | Backend::Null => {
            if let Some(out) = &args.send.pcap
                && same_file(&args.file, out)
            {
                return Err(usage(format!(
                    "--pcap {}: that is the capture being replayed; write the replay to another file",
                    out.display()
                )));
            }
            let capture = load_capture(&args.file, args.send.port.mtu, hold)?;
            if backend == Backend::Pcap
                && replay.loops.is_none()
                && args.count.is_none()
                && args.send.duration.is_none()
            {
                return Err(usage(
                    "--loop inf into a pcap file needs an end: give --count or --duration",
                ));
            }
            (TestBed::open(&spec)?, capture)
        }
        _ => {
            let bed = TestBed::open(&spec)?;
            let mtu = bed.port().map_or(args.send.port.mtu, |p| p.info().mtu);
            let capture = load_capture(&args.file, mtu, hold)?;
            (bed, capture)
        }
    };
    let described = describe(&args.file, &capture, args, &replay);
    let plan = capture.plan(&described.file, &replay)?;
    let stop = stop_flag()?;
    let (name, link, choice) = match bed.port() {
        Some(p) => (p.info().name.clone(), p.link_mbps(), p.choice().cloned()),
        None => (String::new(), None, None),
    };
    let live = LiveStatus::new(link, args.send.quiet);
    // A capture's frames carry no flow: the series is the port's, sent and received.
    let stats = args
        .stats
        .as_deref()
        .map(|path| crate::stats::Stats::create(path, &live, bed.counts(), &[], &[], bed.places()))
        .transpose()?;
    let run = RunOptions {
        end: options::send_end(&args.send, args.count),
        stop: &stop,
        observer: stats
            .as_ref()
            .map_or(&live as &dyn linerate_engine::Observer, |s| s),
        drain: args.send.drain,
        start_at: None,
    };
    let ran = bed.run_unsigned(&plan, run);
    // The series' own failure comes after the run's report, never instead of it.
    let series = stats.as_ref().map_or(Ok(()), |s| s.finish(None));
    let Outcome {
        report,
        flows,
        sink,
        ..
    } = match ran {
        Ok(outcome) => outcome,
        Err(e) => {
            if let Some(i) = e.interrupted() {
                print_report(
                    args,
                    &i.report,
                    &plan,
                    &described,
                    None,
                    None,
                    choice.as_ref(),
                )?;
            }
            return Err(anyhow::Error::from(e).context(format!("replay on {name}")));
        }
    };
    output::finish_send(args.send.pcap.as_deref(), &report, sink, |sink| {
        print_report(
            args,
            &report,
            &plan,
            &described,
            sink,
            flows.as_ref(),
            choice.as_ref(),
        )
    })
    .and(series)
}

/// The replay the flags ask for, checked before any port opens.
fn options(args: &ReplayArgs) -> Result<Replay> {
    let mac = |flag: &str, text: &Option<String>| -> Result<Option<[u8; 6]>> {
        text.as_deref()
            .map(|t| linerate_wire::parse_mac(t).map_err(|e| usage(format!("--{flag} {t}: {e}"))))
            .transpose()
    };
    // The shared receiver flags include --clock, but no replayed frame carries a stamp to read
    // it by: a clock other than the default would be silently ignored.
    if args.send.receiver.clock != ClockArg::Monotonic {
        return Err(usage(
            "--clock does not apply to replay: a capture's frames carry no signature to stamp",
        ));
    }
    let loops = match args.loops.as_deref().map(str::trim) {
        // `-n 1000000` asks for that many frames: the capture loops until they are sent.
        None if args.count.is_some() => None,
        None => Some(1),
        Some(l) if l.eq_ignore_ascii_case("inf") => None,
        Some(l) => match linerate_wire::quantity::parse_count(l) {
            Ok(n) => Some(n),
            _ => {
                return Err(usage(format!(
                    "--loop {l}: give the times to send the capture (1 or more: 10, 1e3, 1k) or inf"
                )));
            }
        },
    };
    Ok(Replay {
        speed: Speed::parse(&args.speed)?,
        rate: args.rate.clone(),
        loops,
        src_mac: mac("src-mac", &args.src_mac)?,
        dst_mac: mac("dst-mac", &args.dst_mac)?,
        link_mbps: args.send.port.link_speed,
    })
}

/// Whether two paths name one file (a hard or symbolic link included). The pcap port
/// truncates its output as it opens, under the capture it would read: a streamed capture's map
/// would then fault.
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

fn describe(path: &Path, capture: &Capture, args: &ReplayArgs, replay: &Replay) -> CaptureJson {
    CaptureJson {
        file: path.display().to_string(),
        format: capture.format.to_string(),
        frames: capture.frame_count(),
        bytes: capture.bytes(),
        duration_s: capture.duration_ns() as f64 / 1e9,
        mode: if capture.streamed() {
            "streamed"
        } else {
            "loaded"
        },
        speed: match (&replay.rate, replay.speed) {
            (Some(_), _) => None,
            (None, Speed::Max) => Some("max".into()),
            (None, Speed::Times(_)) => Some(args.speed.trim().to_owned()),
        },
        rate: replay.rate.clone(),
        loops: replay.loops,
        reordered: capture.reordered,
    }
}

fn print_report(
    args: &ReplayArgs,
    report: &linerate_engine::Report,
    plan: &Plan,
    capture: &CaptureJson,
    sink: Option<SinkResult>,
    flows: Option<&RunFlows>,
    choice: Option<&linerate_port::ladder::Choice>,
) -> Result<()> {
    if args.send.json {
        return output::print_json(&ReplayJson {
            report,
            capture,
            sink,
            rx: flows,
            backend_choice: output::ChoiceJson::of(choice),
        });
    }
    let pace = match (&capture.rate, &capture.speed) {
        (Some(rate), _) => format!("at {rate}"),
        (None, Some(speed)) if speed == "max" => "as fast as the port goes".into(),
        (None, Some(speed)) => format!("at {speed} its own timing"),
        (None, None) => String::new(),
    };
    let loops = capture
        .loops
        .map_or("until stopped".into(), |l| format!("{l} time(s)"));
    let mut text = format!(
        "capture   {}: {}, {} frame(s), {} bytes over {:.6} s, {}; sent {loops} {pace}\n",
        capture.file,
        capture.format,
        capture.frames,
        capture.bytes,
        capture.duration_s,
        match capture.mode {
            "streamed" => "streamed from the mapped file",
            _ => "loaded into the port's buffers",
        }
    );
    if capture.reordered > 0 {
        text.push_str(&format!(
            "          {} frame(s) stamped before their predecessor: sent in file order, with it\n",
            capture.reordered
        ));
    }
    // The choice leads the report, as it does tx's.
    if let Some(c) = choice {
        text.insert_str(0, &format!("{c}\n"));
    }
    output::print(&text)?;
    output::print_tx(
        report,
        plan,
        sink.as_ref(),
        output::Detail {
            choice: None,
            verbose: args.send.verbose,
        },
    )?;
    match flows {
        Some(f) => {
            let (frames, bytes) = f.all_frames();
            output::println(&format!(
                "received  at {}: {frames} frame(s), {bytes} bytes (a capture carries no signature: port totals)",
                f.at
            ))
        }
        None => Ok(()),
    }
}
