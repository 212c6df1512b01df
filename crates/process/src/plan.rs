//! Turns `process/spawn` params into a checked [`SpawnPlan`], applying the section-8 defaults.
//!
//! Validation runs before anything is started so that a bad request never leaves a child or a
//! reserved handle behind, and the checks run in the order docs/protocol.md lists them.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use tandem_protocol::{ProcessSpawnParams, PtySize};

use super::error::ProcessError;
use super::{DEFAULT_OUTPUT_BYTES_CAP, DEFAULT_PTY_SIZE, DEFAULT_TIMEOUT};
use crate::sandbox::ResolvedSandbox;

/// A validated spawn request with every default resolved.
#[derive(Debug, Clone)]
pub(crate) struct SpawnPlan {
    pub(crate) handle: String,
    pub(crate) program: String,
    pub(crate) args: Vec<String>,
    pub(crate) cwd: PathBuf,
    pub(crate) tty: bool,
    pub(crate) stream_stdin: bool,
    pub(crate) stream_output: bool,
    /// Per-stream cap; `None` means unlimited.
    pub(crate) output_bytes_cap: Option<u64>,
    /// `None` means no timeout.
    pub(crate) timeout: Option<Duration>,
    /// `None` values remove the variable from the inherited environment.
    pub(crate) env: BTreeMap<String, Option<String>>,
    /// Only meaningful with `tty`.
    pub(crate) size: PtySize,
    /// The OS sandbox the child runs under; `None` runs it with the server's rights.
    /// `process/spawn` never sets it (the reference has no sandbox there); `command/exec` sets
    /// it from its `sandboxPolicy` (or the configured policy).
    pub(crate) sandbox: Option<ResolvedSandbox>,
}

/// Checks that a PTY size is usable (shared by spawn and resize).
pub(crate) fn check_size(size: PtySize) -> Result<(), ProcessError> {
    if size.rows == 0 || size.cols == 0 {
        return Err(ProcessError::ZeroSize);
    }
    Ok(())
}

impl SpawnPlan {
    /// Validates `params`; the duplicate-handle check is left to the manager, which owns the
    /// handle table.
    pub(crate) fn from_params(params: ProcessSpawnParams) -> Result<Self, ProcessError> {
        let ProcessSpawnParams {
            process_handle,
            command,
            cwd,
            tty,
            stream_stdin,
            stream_stdout_stderr,
            output_bytes_cap,
            timeout_ms,
            env,
            size,
        } = params;

        let mut command = command.into_iter();
        let Some(program) = command.next() else {
            return Err(ProcessError::EmptyCommand);
        };
        if process_handle.is_empty() {
            return Err(ProcessError::EmptyHandle);
        }
        let cwd = match cwd {
            None => return Err(ProcessError::MissingCwd),
            Some(cwd) if cwd.is_empty() => return Err(ProcessError::MissingCwd),
            Some(cwd) => {
                let path = PathBuf::from(&cwd);
                if !path.is_absolute() {
                    return Err(ProcessError::RelativeCwd(cwd));
                }
                path
            }
        };
        let tty = tty.unwrap_or(false);
        if size.is_some() && !tty {
            return Err(ProcessError::SizeRequiresTty);
        }
        if let Some(size) = size {
            check_size(size)?;
        }
        let timeout = match timeout_ms {
            None => Some(DEFAULT_TIMEOUT),
            Some(None) => None,
            Some(Some(ms)) if ms < 0 => return Err(ProcessError::NegativeTimeout(ms)),
            Some(Some(ms)) => Some(Duration::from_millis(ms.unsigned_abs())),
        };
        let output_bytes_cap = match output_bytes_cap {
            None => Some(DEFAULT_OUTPUT_BYTES_CAP),
            Some(cap) => cap,
        };

        Ok(Self {
            handle: process_handle,
            program,
            args: command.collect(),
            cwd,
            // A terminal is inherently interactive and has a single output channel, so `tty`
            // turns both streaming switches on whatever the client sent.
            stream_stdin: tty || stream_stdin.unwrap_or(false),
            stream_output: tty || stream_stdout_stderr.unwrap_or(false),
            tty,
            output_bytes_cap,
            timeout,
            env: env.unwrap_or_default(),
            size: size.unwrap_or(DEFAULT_PTY_SIZE),
            sandbox: None,
        })
    }
}
