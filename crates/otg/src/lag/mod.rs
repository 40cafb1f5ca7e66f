//! LAGs in the OTG API: the models of the config's `lags[]` and of get_metrics `lag` and
//! `lacp`, and the LAGs' state in OTG's words ([`answers`]). The mapping is `map/lag.rs`.

pub mod answers;
mod model;

pub use model::*;
