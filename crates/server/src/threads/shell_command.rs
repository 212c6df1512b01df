//! `thread/shellCommand` (docs/protocol.md section 4, "A user's shell command"): the user's own
//! command line run in a thread, as the reference's TUI `!` does. Checked here, then run as a
//! turn of its own (the reference's "standalone turn") whose one item is the command, so that
//! it is stored, ordered and interrupted exactly like any turn; the turn module runs it.

use std::sync::Arc;
use std::time::Duration;

use tandem_host::ConnectionRequestId;
use tandem_protocol::{JSONRPCErrorError, ThreadShellCommandParams, error_codes};

use super::ThreadService;
use super::maintenance::InputlessTurn;
use super::turn_work::TurnWork;

/// How long a user's command may run when the request names no `timeoutMs`: one hour, the
/// reference's default.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60 * 60);

/// Why a `thread/shellCommand` was refused before anything ran.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ShellCommandError {
    /// The server runs with `shell_command_api = false`.
    #[error(
        "thread/shellCommand is disabled on this server (shell_command_api = false in its \
         config.toml)"
    )]
    Disabled,
    /// An empty (or blank) command line.
    #[error("command must not be empty")]
    EmptyCommand,
    /// A negative `timeoutMs`.
    #[error("thread/shellCommand timeoutMs must be non-negative, got {0}")]
    NegativeTimeout(i64),
}

impl From<ShellCommandError> for JSONRPCErrorError {
    fn from(error: ShellCommandError) -> Self {
        let code = match error {
            ShellCommandError::Disabled => error_codes::METHOD_NOT_FOUND,
            ShellCommandError::EmptyCommand => error_codes::INVALID_REQUEST,
            ShellCommandError::NegativeTimeout(_) => error_codes::INVALID_PARAMS,
        };
        JSONRPCErrorError::new(code, error.to_string())
    }
}

/// The command line and timeout of `params`, or why they are refused.
fn check(params: &ThreadShellCommandParams) -> Result<Duration, ShellCommandError> {
    if params.command.trim().is_empty() {
        return Err(ShellCommandError::EmptyCommand);
    }
    match params.timeout_ms {
        None => Ok(DEFAULT_TIMEOUT),
        Some(ms) if ms < 0 => Err(ShellCommandError::NegativeTimeout(ms)),
        Some(ms) => Ok(Duration::from_millis(ms.unsigned_abs())),
    }
}

impl ThreadService {
    /// Starts the command's turn: `{}` first, then `turn/started`, the `commandExecution`
    /// item (`source: "userShell"`) with its output deltas, and `turn/completed`. Refused
    /// while another turn of the thread runs (section 12 says how the reference differs).
    pub(super) async fn shell_command(
        self: &Arc<Self>,
        params: ThreadShellCommandParams,
        id: ConnectionRequestId,
    ) {
        let checked = if self.config().shell_command_api {
            check(&params)
        } else {
            Err(ShellCommandError::Disabled)
        };
        let timeout = match checked {
            Ok(timeout) => timeout,
            Err(error) => return self.outgoing.send_error(id, error.into()).await,
        };
        let work = InputlessTurn {
            work: TurnWork::UserShell {
                command: params.command,
                timeout,
            },
            doing: "running a shell command",
            needs_history: false,
        };
        self.start_inputless_turn(&params.thread_id, work, id).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(command: &str, timeout_ms: Option<i64>) -> ThreadShellCommandParams {
        ThreadShellCommandParams {
            thread_id: "t".to_owned(),
            command: command.to_owned(),
            timeout_ms,
        }
    }

    #[test]
    fn the_timeout_defaults_to_an_hour_and_bad_input_is_refused_with_the_references_codes() {
        assert_eq!(check(&params("ls", None)).ok(), Some(DEFAULT_TIMEOUT));
        assert_eq!(check(&params("ls", Some(0))).ok(), Some(Duration::ZERO));
        let error: JSONRPCErrorError = check(&params(" ", None)).unwrap_err().into();
        assert_eq!(error.code, error_codes::INVALID_REQUEST);
        assert_eq!(error.message, "command must not be empty");
        let error: JSONRPCErrorError = check(&params("ls", Some(-1))).unwrap_err().into();
        assert_eq!(error.code, error_codes::INVALID_PARAMS);
        assert_eq!(
            error.message,
            "thread/shellCommand timeoutMs must be non-negative, got -1"
        );
    }
}
