use linerate_wire::WireError;

/// A stream that cannot be sent as written. Every variant is the user's to fix, so the CLI exits
/// with status 2 for all of them; the message names the offending input and the accepted form.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    #[error("{0}")]
    Wire(#[from] WireError),
    #[error(
        "bad --vary '{input}': {why} (form: FIELD:inc|dec|random:START-END[:STEP], e.g. src-port:inc:1000-1999)"
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
    #[error("frame size {size} is over {max} (MTU {mtu} + Ethernet header and FCS){hint}")]
    SizeOverMtu {
        size: usize,
        max: usize,
        mtu: u32,
        hint: &'static str,
    },
    #[error(
        "bad rate '{input}': {why} (forms: max, 1.5M or 200k frames/s, 500Mbps, 1Gbps-l1, 50%)"
    )]
    Rate { input: String, why: String },
    #[error("bad --encap '{input}': {why} (form: {})", crate::encap::ENCAP_FORM)]
    Encap { input: String, why: String },
    #[error("stream '{stream}': {why}")]
    Invalid { stream: String, why: String },
    #[error("host '{host}': {why}")]
    Host { host: String, why: String },
    #[error("cannot read stream file {path}: {why}")]
    File { path: String, why: String },
    #[error("capture {path}: {why}")]
    Capture { path: String, why: String },
    #[error("stream file {path}: {why}")]
    Toml { path: String, why: String },
}
