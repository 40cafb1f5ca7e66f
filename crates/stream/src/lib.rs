//! What to send, as a person writes it (a `StreamSpec` from CLI flags or a TOML file), checked
//! once, and compiled into a `Plan`: pre-built frames plus the few patches the hot loop applies.
//! Nothing here does I/O or knows about ports: files are read (and captures mapped) by
//! `linerate-files`, which hands their text and bytes here.
#![forbid(unsafe_code)]

mod arp;
mod capture;
mod encap;
mod error;
mod host;
mod mapped;
mod pacing;
mod plan;
mod rate;
mod size;
mod spec;
mod template;
mod text;
mod vary;

pub use arp::ArpOp;
pub use capture::{
    Capture, CaptureFormat, CaptureIndex, Frames, MAX_CAPTURE_BYTES, MAX_CAPTURE_FRAMES, Replay,
    Speed,
};
pub use encap::{ENCAP_FORM, Encap, OuterHeader, VNI_MASK, VNI_SHIFT};
pub use error::{ReplaySetting, StreamError};
pub use host::{
    HOSTS_PER_PORT, HostBgp, HostIgpRoutes, HostIsis, HostOspf, HostRoutes, HostSpec, MAX_HOSTS,
    check_hosts,
};
pub use mapped::{FileBytes, MAX_STREAMED_FRAMES, MappedFrames, StreamShare};
pub use pacing::{Gaps, MAX_START_DELAY, POISSON_CYCLE, Pacing, SLICE_PS, Spacing, StartDelay};
pub use plan::{
    CACHE_LIMIT, Cycle, Lane, Merged, Plan, Shape, StreamInfo, WorkerPlan, lane_counts,
    lanes_for_worker, merge,
};
pub use rate::{PS_PER_S, Rate, parse_duration};
pub use size::{SizeMode, Sizes};
pub use spec::{
    Bursts, Limits, MAX_FILE_BYTES, MAX_STREAMS, Mode, Next, Proto, SpecFile, StreamSpec,
};
pub use vary::{LIST_LIMIT, Vary, VarySpec};
