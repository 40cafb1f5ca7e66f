use std::path::PathBuf;

/// Everything that can go wrong while reading, checking, rendering or comparing sweep results.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A result file named on the command line that cannot be read: missing, a directory, no
    /// permission — the user's to fix, unlike a failed write.
    #[error("{}: {source}", path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: cannot write here: {why}", path.display())]
    Output { path: PathBuf, why: String },
    #[error("{}: cannot be written: {source}", path.display())]
    Unwritable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: the file is empty; it must hold a sweep result (linerate-sweep JSON)", path.display())]
    Empty { path: PathBuf },
    #[error(
        "{}: not valid JSON ({source}); it must hold a sweep result (linerate-sweep JSON)",
        path.display()
    )]
    Corrupt {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error(
        "{}: valid JSON but not a sweep result ({detail}); it must hold a sweep result (linerate-sweep JSON)",
        path.display()
    )]
    Shape { path: PathBuf, detail: String },
    #[error("{origin}: {detail}")]
    Invalid { origin: String, detail: String },
    #[error("{}: the plot format comes from the extension, which must be .svg or .png", path.display())]
    PlotFormat { path: PathBuf },
    #[error("{}: drawing the plot failed: {message}", path.display())]
    Plot { path: PathBuf, message: String },
    #[error("compare needs at least two sweep results, got {count}")]
    TooFewResults { count: usize },
    #[error("compare got {results} results but {names} names")]
    NameCount { results: usize, names: usize },
    #[error("the sweeps share no frame size, so there is nothing to compare: {detail}")]
    NoCommonSizes { detail: String },
}

impl ReportError {
    /// True when the user can fix it by changing what they asked for (exit code 2): a result
    /// file that is empty, corrupt or of the wrong shape, an option that cannot be met. Failing
    /// to write or draw is the system's.
    pub fn is_usage(&self) -> bool {
        !matches!(self, Self::Io { .. } | Self::Plot { .. })
    }
}
