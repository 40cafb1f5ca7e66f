//! The Open Traffic Generator API (models v1.60.0, what snappi 1.60.0 speaks) as far as linerate
//! serves it: hand-written serde models of that subset (each names its OpenAPI schema), the
//! mapping of a `Config` onto linerate `StreamSpec`s and port bindings with a refusal naming the
//! JSON path of every field it cannot honour, and the metrics/error bodies. No I/O: the HTTP
//! server and the ports are the binary's (`src/serve/`).
#![forbid(unsafe_code)]

pub mod bgp;
mod count;
mod error;
pub mod exposition;
pub mod isis;
pub mod lag;
pub mod lldp;
mod map;
pub mod metrics;
mod model;
pub mod ospfv2;
pub mod ospfv3;
pub mod requests;
mod response;
pub mod states;

pub use count::{check_flow_count, count_flows};
pub use error::{ErrorBody, Refusal, Refusals};
pub use map::{
    CaptureFormat, FlowPlan, HostPlan, LagFlow, Location, Mapped, PortPlan, RangeEnd, map_config,
    map_config_over_lags, parse_config, parse_json, with_rates,
};
pub use model::*;
pub use response::*;

/// The OTG models release this server implements (snappi's version tracks it).
pub const API_SPEC_VERSION: &str = "1.60.0";
