//! The SQLite phase's home on a small tmpfs that the disk-full fault fills with a ballast file
//! until writes fail, then frees. Mounting needs root (or `CAP_SYS_ADMIN`); where it is
//! refused, the phase runs on an ordinary directory and says that the fault is skipped.

use std::fs::File;
use std::io::{ErrorKind, Write as _};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The tmpfs's size: the store of a 60-minute run stays well under it.
pub(crate) const SIZE_MIB: u64 = 512;

/// A mounted tmpfs; unmounted when dropped.
#[derive(Debug)]
pub(crate) struct Tmpfs {
    dir: PathBuf,
    ballast: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs of [`SIZE_MIB`] on `dir` (created first); the error says why not.
    pub(crate) fn mount(dir: &Path) -> Result<Self, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let output = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={SIZE_MIB}m,mode=0755"),
                "tmpfs",
            ])
            .arg(dir)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "mount -t tmpfs failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(Self {
            dir: dir.to_owned(),
            ballast: dir.join("soak-ballast"),
        })
    }

    /// Writes the ballast file until the filesystem is full; returns its size. Blocking.
    pub(crate) fn fill(&self) -> std::io::Result<u64> {
        let mut file = File::create(&self.ballast)?;
        let chunk = vec![0x5a_u8; 64 * 1024];
        let mut written = 0;
        // Large writes first, then single pages, so that not even a page is left.
        for size in [chunk.len(), 4096, 512] {
            loop {
                match file.write(&chunk[..size]) {
                    Ok(0) => break,
                    Ok(n) => written += n as u64,
                    Err(error) if error.kind() == ErrorKind::StorageFull => break,
                    Err(error) if error.raw_os_error() == Some(28) => break,
                    Err(error) => return Err(error),
                }
            }
        }
        // Pages of the file that are only in the page cache count on a tmpfs already.
        let _ = file.sync_all();
        Ok(written)
    }

    /// Removes the ballast.
    pub(crate) fn free(&self) -> std::io::Result<()> {
        match std::fs::remove_file(&self.ballast) {
            Err(error) if error.kind() != ErrorKind::NotFound => Err(error),
            _ => Ok(()),
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = self.free();
        let unmounted = Command::new("umount")
            .arg(&self.dir)
            .status()
            .is_ok_and(|status| status.success());
        if !unmounted {
            // Something still holds a file there: detach now, freed when it lets go.
            let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
        }
    }
}
