//! Every error a `process/*` request can answer with, its exact text and its JSON-RPC code.
//!
//! docs/protocol.md section 8 fixes each message word for word, so they live in one enum instead of
//! being formatted at each call site; [`ProcessError::code`] pairs each with its section-2 code.

use tandem_protocol::JSONRPCErrorError;
use tandem_protocol::error_codes::{INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST};

/// Why a process request failed. Converted to a [`JSONRPCErrorError`] at the API boundary.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ProcessError {
    #[error("command must not be empty")]
    EmptyCommand,
    #[error("processHandle must not be empty")]
    EmptyHandle,
    #[error("process/spawn requires an absolute cwd")]
    MissingCwd,
    #[error("process/spawn cwd must be an absolute path, got \"{0}\"")]
    RelativeCwd(String),
    #[error("process/spawn size requires tty: true")]
    SizeRequiresTty,
    #[error("process size rows and cols must be greater than 0")]
    ZeroSize,
    #[error("process/spawn timeoutMs must be non-negative, got {0}")]
    NegativeTimeout(i64),
    #[error("duplicate active process handle: \"{0}\"")]
    DuplicateHandle(String),
    #[error("failed to spawn process: {0}")]
    SpawnFailed(String),
    #[error("no active process for process handle \"{0}\"")]
    NoActiveProcess(String),
    #[error("process \"{0}\" is no longer running")]
    NoLongerRunning(String),
    #[error("stdin streaming is not enabled for this process")]
    StdinNotStreamed,
    #[error("stdin is already closed")]
    StdinClosed,
    #[error("process/writeStdin requires deltaBase64 or closeStdin")]
    WriteStdinNeedsInput,
    #[error("failed to write stdin: {0}")]
    StdinWriteFailed(String),
    #[error("failed to resize PTY: process is not attached to a PTY")]
    NotAPty,
    #[error("failed to resize PTY: {0}")]
    ResizeFailed(String),
    #[error("process/screen: process is not attached to a PTY (spawn it with tty: true)")]
    NoScreen,
}

impl ProcessError {
    /// The docs/protocol.md section 2 code for this error.
    pub(crate) fn code(&self) -> i64 {
        use ProcessError::*;
        match self {
            SizeRequiresTty | ZeroSize | NegativeTimeout(_) | WriteStdinNeedsInput => {
                INVALID_PARAMS
            }
            SpawnFailed(_) | StdinWriteFailed(_) | ResizeFailed(_) => INTERNAL_ERROR,
            EmptyCommand | EmptyHandle | MissingCwd | RelativeCwd(_) | DuplicateHandle(_)
            | NoActiveProcess(_) | NoLongerRunning(_) | StdinNotStreamed | StdinClosed
            | NotAPty | NoScreen => INVALID_REQUEST,
        }
    }
}

impl From<ProcessError> for JSONRPCErrorError {
    fn from(error: ProcessError) -> Self {
        JSONRPCErrorError::new(error.code(), error.to_string())
    }
}
