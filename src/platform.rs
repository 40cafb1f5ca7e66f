//! Opening an interface with the platform's own backend.

use anyhow::Result;
use linerate_port::Port;

use crate::cli::{Backend, TxArgs};
use crate::usage;

pub fn open(backend: Backend, iface: &str, _args: &TxArgs) -> Result<Box<dyn Port>> {
    Err(usage(format!(
        "{backend:?} port for {iface} not built yet: use --pcap FILE or --null"
    )))
}
