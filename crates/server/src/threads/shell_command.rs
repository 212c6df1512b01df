//! `thread/shellCommand` (docs/protocol.md section 4, "A user's shell command"): the user's own
//! command line run in a thread, as the reference's TUI `!` does. Checked here, then run as a
//! turn of its own (the reference's "standalone turn") whose one item is the command, so that
//! it is stored, ordered and interrupted exactly like any turn; the turn module runs it.

use std::sync::Arc;
use std::time::Duration;

use std::sync::PoisonError;

use tandem_host::ConnectionRequestId;
use tandem_protocol::{EmptyResponse, JSONRPCErrorError, ThreadShellCommandParams, error_codes};

use super::maintenance::InputlessTurn;
use super::turn_work::TurnWork;
use super::{ActiveTurn, LoadedThread, SideCommand, ThreadService};

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
    /// item (`source: "userShell"`) with its output deltas, and `turn/completed`. While an
    /// agent's turn runs, the command runs beside it instead, as an item of that turn.
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
        let running = self.loaded(&params.thread_id).and_then(|thread| {
            let active = thread.state().active.clone()?;
            Some((thread, active))
        });
        if let Some((thread, active)) = running {
            return self
                .beside_running_turn(&thread, &active, params.command, timeout, id)
                .await;
        }
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

impl ThreadService {
    /// Runs the command as an item of the running turn `active`, as the reference does: `{}`
    /// first, then the item's notifications on that turn, and its output handed to the
    /// agent's next request. A turn that takes no more input (a compaction, another shell
    /// command's turn, an agent that is done) refuses it, as `thread/compact/start` is refused.
    async fn beside_running_turn(
        self: &Arc<Self>,
        thread: &Arc<LoadedThread>,
        active: &Arc<ActiveTurn>,
        command: String,
        timeout: Duration,
        id: ConnectionRequestId,
    ) {
        let store = match self.store_for(thread.ephemeral).await {
            Ok(store) => store,
            Err(error) => return self.outgoing.send_error(id, error).await,
        };
        let (go, go_signal) = tokio::sync::oneshot::channel();
        let side = SideCommand {
            store,
            command,
            timeout,
            go: go_signal,
        };
        let task = (self.run_turn.side_command)(self, thread, active, side);
        // Taken under the steer lock: the turn closes it before it waits for its commands,
        // so a command is either waited for or never runs.
        let admitted = {
            let queue = active
                .steered
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if !queue.closed {
                active
                    .side_commands
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(task);
            }
            !queue.closed
        };
        if !admitted {
            let _ = go.send(false);
            let error = self
                .ensure_no_running_turn(&thread.id, "running a shell command")
                .err()
                .unwrap_or_else(|| {
                    JSONRPCErrorError::invalid_request(format!(
                        "the turn of thread {} was ending; send the command again",
                        thread.id
                    ))
                });
            return self.outgoing.send_error(id, error).await;
        }
        self.outgoing
            .send_response_and_wait(id, EmptyResponse {})
            .await;
        let _ = go.send(true);
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
