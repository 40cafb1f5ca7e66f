//! The files a run is given, read from the file system: stream files (TOML, within
//! `MAX_FILE_BYTES`) and captures (mapped read-only, guarded on Linux against a truncation under
//! the map; a pipe read whole). What they hold is parsed by `linerate-stream`; nothing here
//! parses or plans.

mod capture;
mod error;
#[cfg(target_os = "linux")]
mod truncation;

pub use capture::{Hold, MappedFile, load_capture};
pub use error::FileError;

use std::io::Read;
use std::path::Path;

use linerate_stream::{MAX_FILE_BYTES, SpecFile};

/// Reads and parses the stream file at `path`.
pub fn load_stream_file(path: &Path) -> Result<SpecFile, FileError> {
    let fail = |why: String| FileError::StreamFile {
        path: path.display().to_string(),
        why,
    };
    let file = std::fs::File::open(path).map_err(|e| fail(e.to_string()))?;
    // One byte past the limit is enough to refuse, whatever the file (a pipe has no length).
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| fail(e.to_string()))?;
    Ok(SpecFile::parse(&text, &path.display().to_string())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_stream_file_is_refused_after_one_byte_too_many() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.toml");
        let padding = "#".repeat(MAX_FILE_BYTES as usize);
        std::fs::write(&path, format!("[[stream]]\n{padding}\n")).unwrap();
        let err = load_stream_file(&path).unwrap_err().to_string();
        assert!(
            err.contains(&format!("larger than {MAX_FILE_BYTES} bytes")),
            "{err}"
        );
    }

    #[test]
    fn a_stream_file_is_read_or_says_why_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        std::fs::write(&path, "[[stream]]\nname = \"a\"\n").unwrap();
        let file = load_stream_file(&path).unwrap();
        assert_eq!(file.streams[0].name, "a");
        let missing = dir.path().join("none.toml");
        let err = load_stream_file(&missing).unwrap_err();
        assert!(
            err.to_string()
                .starts_with(&format!("cannot read stream file {}: ", missing.display())),
            "{err}"
        );
        assert!(err.is_usage());
    }
}
