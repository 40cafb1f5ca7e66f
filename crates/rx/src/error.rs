/// What can go wrong on the receive side.
#[derive(Debug, thiserror::Error)]
pub enum RxError {
    /// Loading or attaching the receive program.
    #[cfg(target_os = "linux")]
    #[error(transparent)]
    Xdp(#[from] linerate_xdp::XdpError),
    #[error("reading the receiver's map {map}: {message}")]
    Read { map: &'static str, message: String },
    #[error("clearing the receiver's map {map}: {message}")]
    Write { map: &'static str, message: String },
    #[error(
        "a flow table of {asked} flows is out of range: give 1 to {max} (flow ids are 16 bits)"
    )]
    FlowTable { asked: u32, max: u32 },
    #[error(
        "latency histograms for {asked} flows are out of range: give 0 to {max} (each costs {bytes} bytes per CPU)"
    )]
    HistFlows { asked: u32, max: u32, bytes: usize },
}

impl RxError {
    /// Whether the user can fix it by changing the command.
    pub fn is_usage(&self) -> bool {
        match self {
            #[cfg(target_os = "linux")]
            RxError::Xdp(e) => e.is_usage(),
            RxError::Read { .. } | RxError::Write { .. } => false,
            RxError::FlowTable { .. } | RxError::HistFlows { .. } => true,
        }
    }
}
