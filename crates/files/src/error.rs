use linerate_stream::StreamError;

/// A file that cannot be read, or whose contents `linerate-stream` refused. Every variant is
/// the user's to fix (a path, a file's contents), as the stream errors it wraps are.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("cannot read stream file {path}: {why}")]
    StreamFile { path: String, why: String },
    #[error("capture {path}: {why}")]
    Capture { path: String, why: String },
    #[error(transparent)]
    Stream(#[from] StreamError),
}

impl FileError {
    /// Whether the user can fix it: always, as for every stream error.
    pub fn is_usage(&self) -> bool {
        true
    }
}
