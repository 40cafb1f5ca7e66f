//! OSPFv3 in the OTG API: the models of `devices[].ospfv3` and of the requests and answers
//! about it (get_metrics `ospfv3`, get_states `ospfv3_lsas`), and ospf6d's and the wire's
//! reports in OTG's words ([`answers`]). The mapping onto `linerate_routing` is
//! `map/ospfv3.rs`.

pub mod answers;
mod model;

pub use model::*;
