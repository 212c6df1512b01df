//! `command/exec` on the `process/*` machinery (docs/protocol.md section 8a): the reference
//! app-server's params checked with its rules and texts, turned into a [`SpawnPlan`], and its
//! follow-up requests (`write`, `terminate`, `resize`) mapped onto the manager's.
//!
//! A `command/exec` child lives in a [`ProcessManager`] of its own per connection, so that its
//! `processId` never collides with a `process/spawn` handle. Inside it, a client id `x` is the
//! handle `c:x` and a buffered command without one gets `i:<n>`, which no client id can name.
//! The manager gives the same guarantees as for `process/*`: every byte of output delivered
//! (the sink is awaited), caps, timeouts, the process group killed on terminate, timeout,
//! connection close and shutdown, and a watchdog if the server dies.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tandem_protocol::error_codes::{INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST};
use tandem_protocol::{
    CommandExecParams, CommandExecResizeParams, CommandExecTerminateParams, CommandExecWriteParams,
    JSONRPCErrorError, ProcessResizePtyParams, ProcessWriteStdinParams, SandboxPolicy,
};

use super::error::ProcessError;
use super::manager::{ProcessManager, SpawnedProcess, StdinWrite};
use super::plan::{SpawnPlan, check_size};
use super::{DEFAULT_OUTPUT_BYTES_CAP, DEFAULT_PTY_SIZE, DEFAULT_TIMEOUT, ProcessEventSink};

/// Numbers the internal handles of buffered commands without a `processId`.
static NEXT_INTERNAL_ID: AtomicU64 = AtomicU64::new(0);

/// Why a `command/exec*` request failed, with the reference app-server's texts and codes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ExecError {
    #[error("command must not be empty")]
    EmptyCommand,
    #[error("command/exec tty or streaming requires a client-supplied processId")]
    NeedsProcessId,
    #[error("command/exec cannot set both timeoutMs and disableTimeout")]
    TimeoutConflict,
    #[error("command/exec cannot set both outputBytesCap and disableOutputCap")]
    CapConflict,
    #[error("command/exec size requires tty: true")]
    SizeRequiresTty,
    #[error("command/exec size rows and cols must be greater than 0")]
    ZeroSize,
    #[error("command/exec timeoutMs must be non-negative, got {0}")]
    NegativeTimeout(i64),
    #[error("duplicate active command/exec process id: \"{0}\"")]
    DuplicateProcessId(String),
    #[error("failed to spawn command: {0}")]
    SpawnFailed(String),
    #[error("no active command/exec for process id \"{0}\"")]
    NoActiveProcess(String),
    #[error("stdin streaming is not enabled for this command/exec")]
    StdinNotStreamed,
    #[error("stdin is already closed")]
    StdinClosed,
    #[error("command/exec/write requires deltaBase64 or closeStdin")]
    WriteNeedsInput,
    #[error("failed to write stdin: {0}")]
    StdinWriteFailed(String),
    #[error("failed to resize PTY: process is not attached to a PTY")]
    NotAPty,
    #[error("failed to resize PTY: {0}")]
    ResizeFailed(String),
}

impl ExecError {
    fn code(&self) -> i64 {
        use ExecError::*;
        match self {
            TimeoutConflict | CapConflict | SizeRequiresTty | ZeroSize | NegativeTimeout(_)
            | WriteNeedsInput => INVALID_PARAMS,
            SpawnFailed(_) | StdinWriteFailed(_) | ResizeFailed(_) => INTERNAL_ERROR,
            EmptyCommand
            | NeedsProcessId
            | DuplicateProcessId(_)
            | NoActiveProcess(_)
            | StdinNotStreamed
            | StdinClosed
            | NotAPty => INVALID_REQUEST,
        }
    }

    /// The `command/exec` wording of a manager error about the child `process_id`.
    fn from_process(error: ProcessError, process_id: &str) -> Self {
        let id = || process_id.to_owned();
        match error {
            ProcessError::EmptyCommand => Self::EmptyCommand,
            ProcessError::SizeRequiresTty => Self::SizeRequiresTty,
            ProcessError::ZeroSize => Self::ZeroSize,
            ProcessError::NegativeTimeout(ms) => Self::NegativeTimeout(ms),
            ProcessError::DuplicateHandle(_) => Self::DuplicateProcessId(id()),
            ProcessError::SpawnFailed(why) => Self::SpawnFailed(why),
            // The reference forgets a child once it exited; a client cannot tell the two apart.
            ProcessError::NoActiveProcess(_) | ProcessError::NoLongerRunning(_) => {
                Self::NoActiveProcess(id())
            }
            ProcessError::StdinNotStreamed => Self::StdinNotStreamed,
            ProcessError::StdinClosed => Self::StdinClosed,
            ProcessError::WriteStdinNeedsInput => Self::WriteNeedsInput,
            ProcessError::StdinWriteFailed(why) => Self::StdinWriteFailed(why),
            // command/exec has no screen request; only process/screen asks for one.
            ProcessError::NotAPty | ProcessError::NoScreen => Self::NotAPty,
            ProcessError::ResizeFailed(why) => Self::ResizeFailed(why),
            // Never produced for a plan built here (it always has a handle and a cwd).
            ProcessError::EmptyHandle | ProcessError::MissingCwd | ProcessError::RelativeCwd(_) => {
                Self::SpawnFailed(error.to_string())
            }
        }
    }
}

/// A manager error about the `command/exec` child `process_id`, as that request answers it.
pub(crate) fn exec_error(error: ProcessError, process_id: &str) -> JSONRPCErrorError {
    ExecError::from_process(error, process_id).into()
}

impl From<ExecError> for JSONRPCErrorError {
    fn from(error: ExecError) -> Self {
        JSONRPCErrorError::new(error.code(), error.to_string())
    }
}

/// The manager handle of the client id `process_id`.
fn exec_handle(process_id: &str) -> String {
    format!("c:{process_id}")
}

/// A `command/exec` whose params passed the checks, not started yet.
#[derive(Debug)]
pub struct ExecRequest {
    plan: SpawnPlan,
    process_id: Option<String>,
    /// The client's `sandboxPolicy`; `None` runs under the server's configured policy.
    sandbox_policy: Option<SandboxPolicy>,
}

impl ExecRequest {
    /// Checks `params` in the reference's order; a relative or missing `cwd` is taken
    /// relative to `server_cwd`.
    pub fn new(params: CommandExecParams, server_cwd: &Path) -> Result<Self, JSONRPCErrorError> {
        Ok(Self::check(params, server_cwd)?)
    }

    fn check(params: CommandExecParams, server_cwd: &Path) -> Result<Self, ExecError> {
        let CommandExecParams {
            command,
            process_id,
            tty,
            stream_stdin,
            stream_stdout_stderr,
            output_bytes_cap,
            disable_output_cap,
            timeout_ms,
            disable_timeout,
            cwd,
            env,
            size,
            sandbox_policy,
        } = params;
        let mut command = command.into_iter();
        let Some(program) = command.next() else {
            return Err(ExecError::EmptyCommand);
        };
        if timeout_ms.is_some() && disable_timeout {
            return Err(ExecError::TimeoutConflict);
        }
        if output_bytes_cap.is_some() && disable_output_cap {
            return Err(ExecError::CapConflict);
        }
        if (tty || stream_stdin || stream_stdout_stderr) && process_id.is_none() {
            return Err(ExecError::NeedsProcessId);
        }
        if size.is_some() && !tty {
            return Err(ExecError::SizeRequiresTty);
        }
        if let Some(size) = size {
            check_size(size).map_err(|_| ExecError::ZeroSize)?;
        }
        let timeout = match timeout_ms {
            Some(ms) if ms < 0 => return Err(ExecError::NegativeTimeout(ms)),
            Some(ms) => Some(std::time::Duration::from_millis(ms.unsigned_abs())),
            None if disable_timeout => None,
            None => Some(DEFAULT_TIMEOUT),
        };
        let output_bytes_cap = match output_bytes_cap {
            Some(cap) => Some(cap),
            None if disable_output_cap => None,
            None => Some(DEFAULT_OUTPUT_BYTES_CAP),
        };
        let cwd = match cwd.filter(|cwd| !cwd.is_empty()) {
            None => server_cwd.to_path_buf(),
            Some(cwd) => server_cwd.join(PathBuf::from(cwd)),
        };
        let handle = match &process_id {
            Some(id) => exec_handle(id),
            None => format!("i:{}", NEXT_INTERNAL_ID.fetch_add(1, Ordering::Relaxed)),
        };
        let plan = SpawnPlan {
            handle,
            program,
            args: command.collect(),
            cwd,
            // A terminal is interactive and has one output channel: `tty` implies both.
            stream_stdin: tty || stream_stdin,
            stream_output: tty || stream_stdout_stderr,
            tty,
            output_bytes_cap,
            timeout,
            env: env.unwrap_or_else(BTreeMap::new),
            size: size.unwrap_or(DEFAULT_PTY_SIZE),
            // Resolved against this machine's support by the caller (see `sandbox_policy`).
            sandbox: None,
        };
        Ok(Self {
            plan,
            process_id,
            sandbox_policy,
        })
    }

    /// The policy the command asked for (`None`: the server's configured one).
    pub fn sandbox_policy(&self) -> Option<&SandboxPolicy> {
        self.sandbox_policy.as_ref()
    }

    /// The directory the command runs in (a workspace-write policy's implicit writable root).
    pub fn cwd(&self) -> &Path {
        &self.plan.cwd
    }

    /// Runs the command under `sandbox` (from [`crate::sandbox::Sandboxing::resolve`]); `None` runs it
    /// with the server's rights.
    pub fn set_sandbox(&mut self, sandbox: Option<crate::sandbox::ResolvedSandbox>) {
        self.plan.sandbox = sandbox;
    }

    /// The client's `processId`, if it gave one.
    pub fn process_id(&self) -> Option<&str> {
        self.process_id.as_deref()
    }

    /// Whether output is streamed as `command/exec/outputDelta` rather than returned.
    pub fn streams_output(&self) -> bool {
        self.plan.stream_output
    }

    /// Starts the child in `manager`; its output and exit go to `sink` (the exit must become
    /// the `command/exec` result). Nothing reaches the sink before the returned value is
    /// dropped or started.
    pub fn start(
        self,
        manager: &ProcessManager,
        sink: Arc<dyn ProcessEventSink>,
    ) -> Result<SpawnedProcess, JSONRPCErrorError> {
        let id = self.process_id.unwrap_or_default();
        manager
            .spawn_planned(self.plan, sink)
            .map_err(|error| exec_error(error, &id))
    }
}

impl ProcessManager {
    /// `command/exec/write`: like `process/writeStdin`, in `command/exec` words.
    pub async fn exec_write(
        &self,
        params: CommandExecWriteParams,
    ) -> Result<(), JSONRPCErrorError> {
        self.exec_stdin_write(params)?.write().await
    }

    /// The first half of [`Self::exec_write`], as [`ProcessManager::stdin_write`] is of
    /// `process/writeStdin`: checks the request and finds its child at once.
    pub fn exec_stdin_write(
        &self,
        params: CommandExecWriteParams,
    ) -> Result<StdinWrite, JSONRPCErrorError> {
        if params.delta.is_none() && !params.close_stdin {
            return Err(ExecError::WriteNeedsInput.into());
        }
        let process_id = params.process_id;
        let write = ProcessWriteStdinParams {
            process_handle: exec_handle(&process_id),
            delta: params.delta,
            close_stdin: Some(params.close_stdin),
        };
        self.stdin_write_for(write, Some(process_id.clone()))
            .map_err(|error| exec_error(error, &process_id))
    }

    /// `command/exec/terminate`: kills the child's process group (its session under a PTY);
    /// the `command/exec` result then reports exit code 137.
    pub fn exec_terminate(
        &self,
        params: CommandExecTerminateParams,
    ) -> Result<(), JSONRPCErrorError> {
        self.kill_inner(&exec_handle(&params.process_id))
            .map_err(|error| exec_error(error, &params.process_id))
    }

    /// `command/exec/resize`: applies a new terminal size to a PTY child.
    pub fn exec_resize(&self, params: CommandExecResizeParams) -> Result<(), JSONRPCErrorError> {
        let resize = ProcessResizePtyParams {
            process_handle: exec_handle(&params.process_id),
            size: params.size,
        };
        self.resize_inner(resize)
            .map_err(|error| exec_error(error, &params.process_id))
    }
}
