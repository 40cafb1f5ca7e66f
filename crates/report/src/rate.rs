//! Wire-rate arithmetic, re-exported from `linerate_wire::units` so the sweep's files and the run
//! count a frame the same way.

pub use linerate_wire::units::{LinkSpeed, WIRE_OVERHEAD, line_rate_pps, wire_mbps};
