//! Files that appear whole or not at all.
//!
//! On Linux the data goes into an anonymous file (`O_TMPFILE`) in the destination's folder, which has no
//! name until it is complete: a crash, a full disk or a SIGKILL leaves nothing behind, not even a temporary
//! file. It is then linked under its name (`linkat`), or, to replace an existing file, linked under a
//! unique name and renamed over it. Elsewhere, a named temporary file beside the destination is renamed.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// A file being written, not yet visible under its final name.
pub struct PendingFile {
    inner: Inner,
}

enum Inner {
    /// An `O_TMPFILE` file: no name at all.
    #[cfg(target_os = "linux")]
    Anonymous { file: File, dir: PathBuf },
    /// A named temporary file, removed if dropped unpublished.
    Named(tempfile::NamedTempFile),
}

fn folder_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

impl PendingFile {
    /// Starts a file that will become `path`.
    pub fn beside(path: &Path) -> io::Result<PendingFile> {
        let dir = folder_of(path);
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::fs::OpenOptionsExt;
            let anonymous = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .mode(0o644)
                .custom_flags(libc::O_TMPFILE)
                .open(&dir);
            match anonymous {
                Ok(file) => {
                    return Ok(PendingFile {
                        inner: Inner::Anonymous { file, dir },
                    })
                }
                // File systems without O_TMPFILE support fall back to a named temporary file.
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EOPNOTSUPP) | Some(libc::EISDIR) | Some(libc::EINVAL)
                    ) => {}
                Err(e) => return Err(e),
            }
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "output".into());
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".tmp")
            .tempfile_in(&dir)?;
        Ok(PendingFile {
            inner: Inner::Named(tmp),
        })
    }

    /// The file to write into.
    pub fn file(&mut self) -> &mut File {
        match &mut self.inner {
            #[cfg(target_os = "linux")]
            Inner::Anonymous { file, .. } => file,
            Inner::Named(tmp) => tmp.as_file_mut(),
        }
    }

    /// Syncs the data and gives it its name. Without `force`, an existing `path` is left alone and the call
    /// fails with `AlreadyExists`.
    pub fn publish(mut self, path: &Path, force: bool) -> io::Result<()> {
        self.file().sync_all()?;
        match self.inner {
            #[cfg(target_os = "linux")]
            Inner::Anonymous { file, dir } => {
                use std::os::unix::io::AsRawFd;
                let fd_path = format!("/proc/self/fd/{}", file.as_raw_fd());
                if !force {
                    return link(&fd_path, path);
                }
                // Replace: link under a unique name, then rename over the destination (atomic).
                for attempt in 0..100u32 {
                    let staging = dir.join(format!(
                        ".mfu-{}-{}-{attempt}.tmp",
                        std::process::id(),
                        std::time::SystemTime::now()
                            .duration_since(std::time::UNIX_EPOCH)
                            .map_or(0, |d| d.subsec_nanos())
                    ));
                    match link(&fd_path, &staging) {
                        Ok(()) => {
                            return std::fs::rename(&staging, path).inspect_err(|_| {
                                let _ = std::fs::remove_file(&staging);
                            })
                        }
                        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                        Err(e) => return Err(e),
                    }
                }
                Err(io::Error::other("could not find a free temporary name"))
            }
            Inner::Named(tmp) => {
                #[cfg(unix)]
                {
                    use std::os::unix::fs::PermissionsExt;
                    tmp.as_file()
                        .set_permissions(std::fs::Permissions::from_mode(0o644))?;
                }
                let result = if force {
                    tmp.persist(path)
                } else {
                    tmp.persist_noclobber(path)
                };
                result.map(|_| ()).map_err(|e| e.error)
            }
        }
    }
}

#[cfg(target_os = "linux")]
fn link(fd_path: &str, to: &Path) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let from = CString::new(fd_path).map_err(io::Error::other)?;
    let to = CString::new(to.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // SAFETY: both arguments are valid NUL-terminated paths that outlive the call.
    let rc = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Writes `bytes` to `path` atomically.
pub fn write_bytes(path: &Path, bytes: &[u8], force: bool) -> io::Result<()> {
    use std::io::Write;
    let mut pending = PendingFile::beside(path)?;
    pending.file().write_all(bytes)?;
    pending.publish(path, force)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn nothing_is_visible_until_published() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.csv");
        let mut pending = PendingFile::beside(&path).unwrap();
        pending.file().write_all(b"half a fi").unwrap();
        // A file abandoned before publishing (as by a crash) leaves the folder empty.
        assert!(names(dir.path()).is_empty() || cfg!(not(target_os = "linux")));
        drop(pending);
        assert!(names(dir.path()).is_empty());
    }

    #[test]
    fn publish_refuses_or_replaces_and_sets_ordinary_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.csv");
        write_bytes(&path, b"one", false).unwrap();
        let err = write_bytes(&path, b"two", false).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&path).unwrap(), b"one");
        write_bytes(&path, b"three", true).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"three");
        assert_eq!(names(dir.path()), ["out.csv"]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o644);
        }
    }
}
