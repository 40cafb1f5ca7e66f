//! Output files that are checked before the work and never written through a link.
//!
//! `OutputFile::reserve` runs before a sweep measures anything: it proves the directory is
//! writable with an unnamed file (O_TMPFILE: nothing is left behind however the run ends — a
//! named one made there would stay, hidden, after a SIGKILL during the measurement). `write`
//! makes a new temporary file beside the target (O_EXCL, so nothing planted there is
//! followed), fills it and renames it over the target, so a failed or interrupted run leaves an
//! earlier result whole, and a symbolic link at the target is refused rather than
//! followed (one planted in /tmp by another user would redirect root's write). A target that
//! exists and is no regular file (`/dev/stdout`, a FIFO) is opened as it is, with O_NOFOLLOW.

use std::fs::{self, File};
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use crate::ReportError;

/// A file a command will write, reserved before the work starts.
#[derive(Debug)]
pub struct OutputFile {
    path: PathBuf,
    target: Target,
}

#[derive(Debug)]
enum Target {
    /// A new file beside the target, made in `dir` when it is written or drawn, renamed over
    /// the target.
    Replace {
        dir: PathBuf,
        prefix: String,
        suffix: String,
        temp: Option<tempfile::NamedTempFile>,
    },
    /// A device or FIFO, written in place.
    Special(File),
}

impl OutputFile {
    /// Checks that `path` can be written and reserves it; nothing at `path` changes yet.
    pub fn reserve(path: &Path) -> Result<Self, ReportError> {
        let refuse = |why: &str| ReportError::Output {
            path: path.to_path_buf(),
            why: why.to_owned(),
        };
        let unwritable = |source| ReportError::Unwritable {
            path: path.to_path_buf(),
            source,
        };
        let target = match fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(refuse(
                    "it is a symbolic link, and linerate does not write through one: name the file itself",
                ));
            }
            Ok(m) if m.is_dir() => return Err(refuse("it is a directory")),
            Ok(m) if !m.is_file() => Target::Special(
                fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NOFOLLOW)
                    .open(path)
                    .map_err(unwritable)?,
            ),
            _ => {
                let dir = match path.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d,
                    _ => Path::new("."),
                };
                let name = path
                    .file_name()
                    .ok_or_else(|| refuse("it names no file"))?
                    .to_string_lossy();
                // The extension stays last: the plot format is read from it.
                let ext = path
                    .extension()
                    .map(|e| format!(".{}", e.to_string_lossy()))
                    .unwrap_or_default();
                // Unnamed where the kernel has O_TMPFILE (Linux): nothing to clean up.
                tempfile::tempfile_in(dir).map_err(unwritable)?;
                Target::Replace {
                    dir: dir.to_path_buf(),
                    prefix: format!(".{name}."),
                    suffix: format!(".tmp{ext}"),
                    temp: None,
                }
            }
        };
        Ok(Self {
            path: path.to_path_buf(),
            target,
        })
    }

    /// The file the user named.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `bytes` and puts them in place.
    pub fn write(mut self, bytes: &[u8]) -> Result<(), ReportError> {
        let path = self.path.clone();
        let io = |source| ReportError::Io {
            path: path.clone(),
            source,
        };
        match &mut self.target {
            Target::Special(file) => file
                .write_all(bytes)
                .and_then(|()| file.flush())
                .map_err(io),
            Target::Replace { .. } => {
                let temp = self.temp()?;
                temp.write_all(bytes)
                    .and_then(|()| temp.flush())
                    .map_err(io)?;
                self.commit()
            }
        }
    }

    /// A regular file, drawn beside and renamed into place (not a device or FIFO).
    pub fn is_regular(&self) -> bool {
        matches!(self.target, Target::Replace { .. })
    }

    /// Where a writer that wants a path (the plotters backends) draws, made now; None for a
    /// device or FIFO, which such a writer cannot be trusted with.
    pub fn draw_path(&mut self) -> Result<Option<&Path>, ReportError> {
        if !self.is_regular() {
            return Ok(None);
        }
        Ok(Some(self.temp()?.path()))
    }

    /// The temporary file beside the target, made the first time it is asked for.
    fn temp(&mut self) -> Result<&mut tempfile::NamedTempFile, ReportError> {
        let Target::Replace {
            dir,
            prefix,
            suffix,
            temp,
        } = &mut self.target
        else {
            unreachable!("asked of a regular file only");
        };
        if temp.is_none() {
            let made = tempfile::Builder::new()
                .prefix(prefix.as_str())
                .suffix(suffix.as_str())
                .tempfile_in(&*dir)
                .map_err(|source| ReportError::Unwritable {
                    path: self.path.clone(),
                    source,
                })?;
            *temp = Some(made);
        }
        Ok(temp.as_mut().expect("made above"))
    }

    /// Puts what was written or drawn in place.
    pub fn commit(self) -> Result<(), ReportError> {
        match self.target {
            Target::Replace {
                temp: Some(temp), ..
            } => Self::commit_temp(temp, &self.path),
            Target::Replace { temp: None, .. } | Target::Special(_) => Ok(()),
        }
    }

    fn commit_temp(temp: tempfile::NamedTempFile, path: &Path) -> Result<(), ReportError> {
        let io = |source| ReportError::Io {
            path: path.to_path_buf(),
            source,
        };
        // A temporary file is private (0600); a result is read by others, as a file written
        // under the usual umask (022) would be.
        fs::set_permissions(temp.path(), fs::Permissions::from_mode(0o644)).map_err(io)?;
        temp.persist(path).map_err(|e| io(e.error))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_replaces_the_file_only_when_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        fs::write(&path, "old").unwrap();
        let out = OutputFile::reserve(&path).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "old");
        drop(out);
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            "old",
            "dropped: untouched"
        );
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1, "no leftover");
        OutputFile::reserve(&path).unwrap().write(b"new").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn links_directories_and_missing_directories_are_refused_up_front() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, "keep").unwrap();
        let link = dir.path().join("out.json");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let err = OutputFile::reserve(&link).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert!(err.is_usage());
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
        let err = OutputFile::reserve(dir.path()).unwrap_err();
        assert!(err.to_string().contains("directory"), "{err}");
        let err = OutputFile::reserve(&dir.path().join("nodir/a.json")).unwrap_err();
        assert!(matches!(err, ReportError::Unwritable { .. }), "{err}");
        assert!(err.is_usage());
    }

    #[test]
    fn a_device_is_written_in_place() {
        OutputFile::reserve(Path::new("/dev/null"))
            .unwrap()
            .write(b"x")
            .unwrap();
        let err = OutputFile::reserve(Path::new("/dev/full"))
            .unwrap()
            .write(b"x")
            .unwrap_err();
        assert!(!err.is_usage(), "{err}");
    }
}
