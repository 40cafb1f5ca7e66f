//! The one error type of this crate: each variant says what went wrong and what to do.

/// Errors while opening a port for live transmit or running a plan on it.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("no interface named {iface:?}: check `ip link`")]
    UnknownInterface { iface: String },

    #[error(
        "{what}: permission denied: run as root (needs CAP_BPF, CAP_NET_ADMIN and CAP_SYS_ADMIN)"
    )]
    NotRoot { what: String },

    #[error(
        "this kernel ({kernel}) cannot transmit live XDP frames (BPF_F_TEST_XDP_LIVE_FRAMES needs Linux 5.18 or later): use --backend afxdp"
    )]
    NoLiveFrames { kernel: String },

    #[error("{iface} does not support XDP transmit (ndo_xdp_xmit){hint}: use --backend afxdp")]
    NoXdpTransmit { iface: String, hint: &'static str },

    #[error("loading the live transmit program failed: {message}")]
    Load { message: String },

    #[error("the live backend cannot send this plan: {why}")]
    Unsupported { why: String },

    /// The runner refused the workers, or a worker failed mid-run (with the report so far).
    #[error(transparent)]
    Engine(#[from] linerate_engine::EngineError),

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

    #[error("the live backend runs on Linux only: use --backend pcap or bpf here")]
    NotLinux,
}

impl LiveError {
    /// True when the user can fix it by changing what they asked for (exit code 2).
    pub fn is_usage(&self) -> bool {
        match self {
            Self::Engine(e) => e.is_usage(),
            _ => matches!(
                self,
                Self::UnknownInterface { .. }
                    | Self::NotRoot { .. }
                    | Self::NoXdpTransmit { .. }
                    | Self::NoLiveFrames { .. }
                    | Self::Unsupported { .. }
                    | Self::Down { .. }
                    | Self::NotLinux
            ),
        }
    }
}
