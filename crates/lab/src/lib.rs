//! The veth lab: network namespace, veth pair and XDP sink
