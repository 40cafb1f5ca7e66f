/// Why a stateful run could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum StatefulError {
    /// A value the user gave that cannot work; the message says which and what to give.
    #[error("{0}")]
    Usage(String),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

impl StatefulError {
    #[cfg(target_os = "linux")]
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> StatefulError {
        let what = what.into();
        move |source| StatefulError::Io { what, source }
    }
}
