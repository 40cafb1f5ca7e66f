//! IS-IS in the OTG API: the models of `devices[].isis` and of the requests and answers about
//! it, and the daemons' reports in OTG's words ([`answers`]). The mapping onto
//! `linerate_routing` is `map/isis.rs`.

pub mod answers;
mod model;

pub use model::*;
