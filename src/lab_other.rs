//! The lab and the sink are made of Linux parts (network namespaces, veth, XDP).

use anyhow::Result;

use crate::cli::{LabAction, SinkArgs};
use crate::usage;

pub fn run(_action: &LabAction) -> Result<()> {
    Err(usage(
        "linerate lab needs Linux (network namespaces, veth and XDP)",
    ))
}

pub fn sink(_args: &SinkArgs) -> Result<()> {
    Err(usage("linerate sink needs Linux (XDP)"))
}
