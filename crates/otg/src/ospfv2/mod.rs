//! OSPFv2 in the OTG API: the models of `devices[].ospfv2` and of the requests and answers
//! about it (get_metrics `ospfv2`, get_states `ospfv2_lsas`), and ospfd's and the wire's
//! reports in OTG's words ([`answers`]). The mapping onto `linerate_routing` is
//! `map/ospfv2.rs`.

pub mod answers;
mod model;

pub use model::*;
