//! LLDP in the OTG API: the models of the config's `lldp[]` (the agents, each on a port) and of
//! the requests and answers about it (get_metrics `lldp`, get_states `lldp_neighbors`), and
//! lldpd's reports in OTG's words ([`answers`]). The mapping is `map/lldp.rs`.

pub mod answers;
mod model;

pub use model::*;
