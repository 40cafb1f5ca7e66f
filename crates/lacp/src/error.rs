/// What starting a LAG's protocol can fail on, naming the LAG and the port.
#[derive(Debug, thiserror::Error)]
pub enum LacpError {
    #[error("LAG {lag}: {what}: {source}")]
    Io {
        lag: String,
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("LAG {lag}: its ports are in different network namespaces ({a} and {b})")]
    Namespaces { lag: String, a: String, b: String },
}
