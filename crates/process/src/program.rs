//! [`HelperProgram`]: the binary the server re-executes for helper jobs (see
//! [`crate::helper`]). Its own module, below the sandbox, the watchdog's guard and the helper
//! jobs, which all name it, so none of them has to reach into another for it.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The first argument that makes a binary a helper rather than its usual self. Chosen so
/// that no user would type it as a subcommand.
pub const HELPER_ARG: &str = "__tandem-helper";

/// The program the server re-executes for helper jobs, e.g. `std::env::current_exe()` of a
/// binary whose `main` starts with [`run_if_helper`](crate::helper::run_if_helper).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelperProgram {
    path: PathBuf,
}

impl HelperProgram {
    /// The helper at `path`. The binary must call [`run_if_helper`](crate::helper::run_if_helper) before anything else.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// The program of the running process, re-executed through `/proc/self/exe` where it
    /// exists: that keeps working after the binary on disk was replaced or deleted (an
    /// upgrade while the server runs), where its path would start the new version or nothing.
    pub fn current_exe() -> std::io::Result<Self> {
        let proc_self = Path::new("/proc/self/exe");
        if proc_self.exists() {
            return Ok(Self::new(proc_self));
        }
        std::env::current_exe().map(Self::new)
    }

    /// The program's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A command that runs `subcommand` of the helper with `args`; the caller sets up stdio.
    pub fn command<I, S>(&self, subcommand: &str, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut command = Command::new(&self.path);
        command.arg(HELPER_ARG).arg(subcommand).args(args);
        command
    }
}
