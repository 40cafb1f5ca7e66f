/// What can stop the benchmark.
#[derive(Debug, thiserror::Error)]
pub enum ConvergenceError {
    /// What the user asked for cannot be run (exit 2).
    #[error("{0}")]
    Usage(String),
    /// The DUT or the traffic did not reach the state the benchmark waits for.
    #[error("{0}")]
    Timeout(String),
    /// Ctrl-C or SIGTERM before the benchmark ended.
    #[error("interrupted")]
    Interrupted,
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[cfg(target_os = "linux")]
    #[error(transparent)]
    Lab(#[from] linerate_lab::LabError),
    #[cfg(target_os = "linux")]
    #[error("the devices' BGP speakers: {0}")]
    Routing(#[from] linerate_routing::RoutingError),
    #[cfg(target_os = "linux")]
    #[error("the test bed: {0}")]
    TestBed(#[from] linerate_testbed::TestBedError),
    #[cfg(target_os = "linux")]
    #[error("the devices' config: {0}")]
    Otg(String),
}

impl ConvergenceError {
    /// Whether the user asked for something impossible (exit 2), not a failure of the run.
    pub fn is_usage(&self) -> bool {
        matches!(self, ConvergenceError::Usage(_))
    }
}
