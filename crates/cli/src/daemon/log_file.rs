//! The daemon's log: `tandem app-server --log-file PATH` sends its stderr (and with it every
//! log line and panic message) to PATH, and rotates it when it outgrows [`MAX_LOG_BYTES`]:
//! PATH becomes PATH.1, PATH.1 becomes PATH.2, and so on up to [`KEPT_LOGS`], so a daemon that
//! runs for months holds at most (KEPT_LOGS + 1) x MAX_LOG_BYTES of logs.
//!
//! The file is made the process's stderr (descriptor 2) rather than handed to the logger, so
//! that what bypasses the logger (a panic, an `eprintln!`) lands in it too; rotating swaps
//! descriptor 2 for the new file.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A log file past this size is rotated: 10 MiB.
pub(crate) const MAX_LOG_BYTES: u64 = 10 * 1024 * 1024;
/// Rotated logs kept beside the current one.
pub(crate) const KEPT_LOGS: usize = 3;
/// How often the size is checked.
const CHECK_EVERY: Duration = Duration::from_secs(5);

/// Makes `path` this process's stderr (appending; created with mode 0600, since logs may name
/// the user's files), rotated first if it is already over the bound.
pub(crate) fn redirect_stderr(path: &Path) -> io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    rotate_if_full(path, MAX_LOG_BYTES)?;
    attach(path)
}

/// Checks the size every few seconds and rotates past [`MAX_LOG_BYTES`], for as long as the
/// runtime runs.
pub(crate) fn spawn_rotation(path: PathBuf) {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(CHECK_EVERY).await;
            match rotate_if_full(&path, MAX_LOG_BYTES) {
                Ok(true) => {
                    if let Err(error) = attach(&path) {
                        tracing::error!(%error, path = %path.display(), "cannot reopen the log after rotating it");
                    }
                }
                Ok(false) => {}
                Err(error) => {
                    tracing::warn!(%error, path = %path.display(), "cannot rotate the log");
                }
            }
        }
    });
}

fn attach(path: &Path) -> io::Result<()> {
    let file = open(path)?;
    nix::unistd::dup2_stderr(&file).map_err(io::Error::from)
}

fn open(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
}

/// Shifts PATH.N to PATH.N+1 (the oldest dropped) and PATH to PATH.1 when PATH is over
/// `max_bytes`; whether it did.
fn rotate_if_full(path: &Path, max_bytes: u64) -> io::Result<bool> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.len() > max_bytes => {}
        Ok(_) => return Ok(false),
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(error) => return Err(error),
    }
    for n in (1..KEPT_LOGS).rev() {
        let from = numbered(path, n);
        if from.exists() {
            std::fs::rename(&from, numbered(path, n + 1))?;
        }
    }
    std::fs::rename(path, numbered(path, 1))?;
    Ok(true)
}

fn numbered(path: &Path, n: usize) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{n}"));
    PathBuf::from(name)
}

/// The last `lines` lines of the log, for an error message.
pub(crate) fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_log_is_rotated_and_the_oldest_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("daemon.log");
        for generation in 0..=KEPT_LOGS + 1 {
            std::fs::write(&log, format!("generation {generation}\n")).unwrap();
            assert!(rotate_if_full(&log, 4).unwrap());
        }
        assert!(!log.exists());
        // The newest rotated file is .1; only KEPT_LOGS are kept.
        let newest = KEPT_LOGS + 1;
        for n in 1..=KEPT_LOGS {
            let text = std::fs::read_to_string(numbered(&log, n)).unwrap();
            assert_eq!(text, format!("generation {}\n", newest + 1 - n));
        }
        assert!(!numbered(&log, KEPT_LOGS + 1).exists());
    }

    #[test]
    fn a_small_log_stays() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("daemon.log");
        std::fs::write(&log, "short\n").unwrap();
        assert!(!rotate_if_full(&log, 1024).unwrap());
        assert_eq!(tail(&log, 5), "short");
    }
}
