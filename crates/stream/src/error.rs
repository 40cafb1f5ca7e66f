use linerate_wire::WireError;

/// A stream that cannot be sent as written. Every variant is the user's to fix, so the CLI exits
/// with status 2 for all of them; the message names the offending input and the accepted form.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    #[error("{0}")]
    Wire(#[from] WireError),
    #[error(
        "bad vary '{input}': {why} (forms: FIELD:inc|dec|random:START-END[:STEP], FIELD:list:A,B,…, e.g. src-port:inc:1000-1999, dst-port:list:5000,5013)"
    )]
    Vary { input: String, why: String },
    #[error(
        "bad size mode '{input}': {why} (forms: fixed, inc:MIN-MAX[:STEP], random:MIN-MAX, imix, imix:64x7,594x4,1518x1)"
    )]
    SizeMode { input: String, why: String },
    #[error(
        "frame size {size} is below {min}, the smallest frame that holds these headers and Ethernet's 64-byte minimum"
    )]
    SizeTooSmall { size: usize, min: usize },
    /// `settable`: the port's MTU is its own setting (a file, nowhere), not an interface's.
    #[error(
        "frame size {size} is over {max} (MTU {mtu} + Ethernet header and FCS){}",
        if *settable { ": raise the port's MTU for jumbo frames" } else { "" }
    )]
    SizeOverMtu {
        size: usize,
        max: usize,
        mtu: u32,
        settable: bool,
    },
    #[error(
        "bad rate '{input}': {why} (forms: max, 1.5M or 200k frames/s, 500Mbps, 1Gbps-l1, 50%)"
    )]
    Rate { input: String, why: String },
    #[error("bad encap '{input}': {why} (form: {})", crate::encap::ENCAP_FORM)]
    Encap { input: String, why: String },
    #[error("stream '{stream}': {why}")]
    Invalid { stream: String, why: String },
    /// A stream's `from` or `to` (`key`) names a host that is not declared.
    #[error("stream '{stream}': {key}: no host named {name:?} (declare it as a host)")]
    UnknownHost {
        stream: String,
        key: &'static str,
        name: String,
    },
    #[error("host '{host}': {why}")]
    Host { host: String, why: String },
    #[error("capture {path}: {why}")]
    Capture { path: String, why: String },
    /// A replay's own setting (its speed, its loops) that cannot be used as given: which, for
    /// the caller to name in its own terms, and why.
    #[error("{why}")]
    Replay { setting: ReplaySetting, why: String },
    #[error("stream file {path}: {why}")]
    Toml { path: String, why: String },
}

/// A setting of a replay that an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplaySetting {
    /// How fast the capture replays.
    Speed,
    /// How many times it is sent.
    Loops,
}
