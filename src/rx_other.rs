//! The receiver is an XDP program: Linux only for now (a /dev/bpf reader is planned for macOS).

use anyhow::Result;

use crate::cli::RxArgs;
use crate::usage;

pub fn run(_args: &RxArgs) -> Result<()> {
    Err(usage(
        "linerate rx needs Linux (XDP) on this version; on macOS count at a Linux receiver",
    ))
}
