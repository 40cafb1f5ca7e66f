use thiserror::Error;

/// What stops the probe.
#[derive(Debug, Error)]
pub enum ProbeError {
    #[error("the stamp program: {0}")]
    Load(String),
    #[error("attaching the stamp program to {iface}: {why}")]
    Attach { iface: String, why: String },
    #[error("reading the stamps: {0}")]
    Read(String),
    #[error("a probe holds 1 to {max} stamps, asked {asked}")]
    Capacity { asked: u32, max: u32 },
}
