//! The one error type of this crate: each variant says what went wrong and what to do.

use linerate_engine::EngineError;
use linerate_port::Usage;

/// Errors while opening a port for live transmit or running a plan on it.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("no interface named {iface:?}: check `ip link`")]
    UnknownInterface { iface: String },

    #[error(
        "live worker {worker} runs on CPU {cpu}, not on its core {core} (was its affinity changed?): the live program finds a worker by its core; keep the process's affinity, or give two workers one core (e.g. cores 0,0) so that they are found by id"
    )]
    OffCore {
        worker: usize,
        core: usize,
        cpu: usize,
    },

    #[error(
        "{what}: permission denied: run as root (needs CAP_BPF, CAP_NET_ADMIN and CAP_SYS_ADMIN)"
    )]
    NotRoot { what: String },

    #[error(
        "this kernel ({kernel}) refused to run the live program (BPF_PROG_RUN with live frames: operation not permitted) though this process holds CAP_BPF, CAP_NET_ADMIN and CAP_SYS_ADMIN: a policy of this kernel forbids live frames; use the afxdp backend"
    )]
    LiveFramesRefused { kernel: String },

    #[error(
        "this kernel ({kernel}) cannot transmit live XDP frames (BPF_F_TEST_XDP_LIVE_FRAMES needs Linux 5.18 or later): use the afxdp backend"
    )]
    NoLiveFrames { kernel: String },

    #[error("{iface} does not support XDP transmit (ndo_xdp_xmit){hint}: use the afxdp backend")]
    NoXdpTransmit { iface: String, hint: &'static str },

    #[error("loading the live transmit program failed: {message}")]
    Load { message: String },

    #[error("the live backend cannot send this plan: {why}")]
    Unsupported { why: String },

    /// The runner refused the workers, or a worker failed mid-run (with the report so far).
    #[error(transparent)]
    Engine(linerate_engine::EngineError),

    #[error("running the live transmit program on {iface} failed: {source}")]
    Run {
        iface: String,
        source: std::io::Error,
    },

    #[error(
        "{iface} refused every frame ({errors} redirect errors, nothing sent): is the interface up, and does its driver take XDP frames (veth: its peer needs an XDP program)?"
    )]
    Refused { iface: String, errors: u64 },

    #[error(
        "{iface} is {state}: bring it up (ip link set {iface} up; a veth needs its peer up too): the kernel drops redirected frames on a link without carrier, and the program would count them as sent"
    )]
    Down { iface: String, state: String },

    #[error(
        "{iface} went {state} during the run: frames redirected after that were dropped by the kernel, so the counts so far may include frames that never left"
    )]
    WentDown { iface: String, state: String },

    #[error(
        "{iface}'s driver dropped {dropped} of the {sent} frames redirected to it: its XDP transmit ring was full, and ndo_xdp_xmit drops without holding the sender back; pace the run (--rate) or use the afxdp backend, whose ring waits"
    )]
    DriverDropped {
        iface: String,
        dropped: u64,
        sent: u64,
    },

    #[error("the live backend runs on Linux only: use the pcap or bpf backend here")]
    NotLinux,

    /// A streamed capture cut short under the sender: the run ends with the report so far.
    #[error(
        "the capture was cut short (truncated) while it was streamed: the report is up to then; do not rewrite a capture while it is replayed"
    )]
    CaptureCut,
}

impl Usage for LiveError {
    fn is_usage(&self) -> bool {
        match self {
            Self::Engine(e) => e.is_usage(),
            _ => matches!(
                self,
                Self::UnknownInterface { .. }
                    | Self::NotRoot { .. }
                    | Self::NoXdpTransmit { .. }
                    | Self::NoLiveFrames { .. }
                    | Self::LiveFramesRefused { .. }
                    | Self::Unsupported { .. }
                    | Self::Down { .. }
                    | Self::NotLinux
            ),
        }
    }
}

/// The engine holds the live backend's own errors whole (`EngineError::Transmitter`) and
/// returns its own as they are.
impl From<LiveError> for EngineError {
    fn from(e: LiveError) -> Self {
        match e {
            LiveError::Engine(e) => e,
            e => EngineError::Transmitter(Box::new(e)),
        }
    }
}

/// The live error an engine run ended with: the backend's own taken back out of the engine's.
impl From<EngineError> for LiveError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::Transmitter(t)
                if (&*t as &(dyn std::error::Error + 'static)).is::<LiveError>() =>
            {
                let t: Box<dyn std::error::Error + Send + Sync> = t;
                *t.downcast::<LiveError>()
                    .expect("the guard checked the type")
            }
            e => LiveError::Engine(e),
        }
    }
}
