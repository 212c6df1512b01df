//! [`TurnRun::run_command`], what the agent's `TurnDriver::run_command` runs: the approval request, the process run through the
//! [`ProcessManager`](crate::process::ProcessManager) (own process group, killed on interrupt) and its output turned into
//! `item/commandExecution/outputDelta`.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tandem_host::{OutgoingMessageSender, RequestResult};
use tandem_protocol::RequestMethod;
use tandem_protocol::server_methods::CommandExecutionRequestApproval;
use tandem_protocol::{
    ApprovalPolicy, CommandAction, CommandExecutionApprovalDecision,
    CommandExecutionOutputDeltaNotification, CommandExecutionRequestApprovalParams,
    CommandExecutionRequestApprovalResponse, CommandExecutionSource, CommandExecutionStatus,
    ProcessExitedNotification, ProcessOutputDeltaNotification, ProcessSpawnParams,
    ServerNotification, SharedText, ThreadActiveFlag, ThreadItem,
};
use tokio::sync::oneshot;

use crate::agent::AgentError;
use crate::process::ProcessEventSink;
use crate::store;
use crate::threads::{LoadedThread, now_millis};

use crate::agent::{CommandOptions, CommandOutcome};

use super::{TurnRun, elapsed_ms};

impl TurnRun {
    /// Runs `command` with `sh -c`, in the thread's cwd unless `options` names another
    /// directory, asking for approval first unless the approval policy is `never`; streams its
    /// output as `item/commandExecution/outputDelta`. A timeout in `options` kills it (exit
    /// code 124).
    pub(super) async fn run_command(
        &mut self,
        command: &str,
        options: CommandOptions,
    ) -> Result<CommandOutcome, AgentError> {
        let id = store::new_id();
        let started_at_ms = now_millis();
        let cwd = match &options.workdir {
            Some(dir) => std::path::Path::new(&self.cwd)
                .join(dir)
                .display()
                .to_string(),
            None => self.cwd.clone(),
        };
        let shape = CommandItem {
            id: id.clone(),
            shown: command.to_owned(),
            command: command.to_owned(),
            cwd: cwd.clone(),
            source: CommandExecutionSource::Agent,
        };
        let item = |status, process_id, exit_code, output, duration_ms| {
            shape.at(status, process_id, exit_code, output, duration_ms)
        };
        self.item_started(&item(
            CommandExecutionStatus::InProgress,
            None,
            None,
            None,
            None,
        ))
        .await;
        let approved_for_session = self.thread.session_approvals().allows_command(command);
        if self.approval_policy != ApprovalPolicy::Never && !approved_for_session {
            let params = self.approval_params(&id, started_at_ms, command, &cwd, None);
            let answer = self.ask_approval(params).await;
            let decision = match &answer {
                Ok(Ok(value)) => {
                    serde_json::from_value::<CommandExecutionRequestApprovalResponse>(value.clone())
                        .map(|response| response.decision)
                        .unwrap_or(CommandExecutionApprovalDecision::Decline)
                }
                // An error reply or an interruption: the command must not run.
                _ => CommandExecutionApprovalDecision::Decline,
            };
            match decision {
                CommandExecutionApprovalDecision::AcceptForSession if answer.is_ok() => {
                    self.thread.session_approvals().approve_command(command);
                }
                CommandExecutionApprovalDecision::Accept if answer.is_ok() => {}
                decision => {
                    // Declined because nobody was left to answer: the item says so, so that
                    // a client resuming later sees why the command never ran.
                    let unanswered = match &answer {
                        Ok(Err(error)) if tandem_host::is_unanswered(error) => {
                            Some(SharedText::from(error.message.as_str()))
                        }
                        _ => None,
                    };
                    self.item_completed(item(
                        CommandExecutionStatus::Declined,
                        None,
                        None,
                        unanswered,
                        None,
                    ))
                    .await;
                    if answer.is_err() {
                        return Err(AgentError::Interrupted);
                    }
                    if decision == CommandExecutionApprovalDecision::Cancel {
                        // `cancel` stops the turn, like an interrupt from the client.
                        self.active.cancel.cancel();
                        return Err(AgentError::Interrupted);
                    }
                    return Ok(CommandOutcome::Declined);
                }
            }
        }
        // A command that cannot run as the policy says is refused, never run with more
        // rights than the thread was given (checked after the approval, so that the user
        // sees every command the agent asked for).
        let sandbox = match self
            .sandboxing
            .resolve(&self.sandbox_policy, std::path::Path::new(&cwd))
        {
            Ok(sandbox) => sandbox,
            Err(error) => {
                let message = SharedText::from(error.to_string());
                tracing::warn!(thread = %self.thread.id, %message, "command refused");
                self.item_completed(item(
                    CommandExecutionStatus::Failed,
                    None,
                    None,
                    Some(message.clone()),
                    None,
                ))
                .await;
                return Ok(CommandOutcome::Ran {
                    exit_code: None,
                    output: message,
                });
            }
        };
        let started = Instant::now();
        let sandboxed = sandbox.is_some();
        let partial = sandbox
            .as_ref()
            .and_then(|sandbox| sandbox.partial_enforcement())
            .map(|why| format!("{SANDBOX_NOTE_PREFIX} partially enforced: {why}\n"));
        let (mut exit_code, mut output, mut process_id) = self
            .execute(
                &id,
                &id,
                agent_argv(command),
                &cwd,
                options.timeout,
                sandbox,
            )
            .await;
        if sandboxed
            && exit_code != Some(0)
            && self.approval_policy == ApprovalPolicy::OnRequest
            && looks_like_denial(&output)
            && self
                .approve_unsandboxed_rerun(&id, started_at_ms, command, &cwd)
                .await?
        {
            // The user allowed this one command outside the sandbox: it runs again with the
            // server's rights, and the item reports that run.
            (exit_code, output, process_id) = self
                .execute(
                    &id,
                    &format!("{id}-unsandboxed"),
                    agent_argv(command),
                    &cwd,
                    options.timeout,
                    None,
                )
                .await;
        } else if let Some(note) = partial {
            output.insert_str(0, &note);
        }
        let status = match exit_code {
            Some(0) => CommandExecutionStatus::Completed,
            _ => CommandExecutionStatus::Failed,
        };
        let output = SharedText::from(output);
        self.item_completed(item(
            status,
            process_id,
            exit_code,
            Some(output.clone()),
            Some(elapsed_ms(started)),
        ))
        .await;
        if self.is_interrupted() {
            return Err(AgentError::Interrupted);
        }
        Ok(CommandOutcome::Ran { exit_code, output })
    }

    /// The approval request for command `item_id`.
    fn approval_params(
        &self,
        item_id: &str,
        started_at_ms: i64,
        command: &str,
        cwd: &str,
        reason: Option<String>,
    ) -> CommandExecutionRequestApprovalParams {
        CommandExecutionRequestApprovalParams {
            thread_id: self.thread.id.clone(),
            turn_id: self.turn_id.clone(),
            item_id: item_id.to_owned(),
            started_at_ms,
            command: command.to_owned(),
            cwd: cwd.to_owned(),
            reason,
            command_actions: vec![CommandAction::Unknown {
                command: command.to_owned(),
            }],
            // Every approval offers all four decisions, so the list would say nothing a client
            // does not assume; and codexed 1.2.2, which opts in to the experimental API, rejects
            // the protocol's own values in it and never answers (docs/protocol.md, section 12).
            available_decisions: None,
        }
    }

    /// Sends an approval request to every client subscribed to the thread and waits for the
    /// first answer, with the thread's `waitingOnApproval` flag raised meanwhile.
    async fn ask_approval(
        &mut self,
        params: CommandExecutionRequestApprovalParams,
    ) -> Result<RequestResult, AgentError> {
        self.set_flag(ThreadActiveFlag::WaitingOnApproval, true)
            .await;
        let pending = self
            .send_to_thread(|id| CommandExecutionRequestApproval::into_request(id, params))
            .await;
        let answer = self.await_answer(pending).await;
        self.set_flag(ThreadActiveFlag::WaitingOnApproval, false)
            .await;
        answer
    }

    /// Asks the client whether a command that failed in the sandbox, apparently because the
    /// sandbox denied it, may run again without it (the reference's rerun on `on-request`).
    /// Declining (or an error reply) keeps the sandboxed result; `cancel` ends the turn.
    async fn approve_unsandboxed_rerun(
        &mut self,
        item_id: &str,
        started_at_ms: i64,
        command: &str,
        cwd: &str,
    ) -> Result<bool, AgentError> {
        let reason = "command failed in the sandbox, which appears to have denied it; run it \
                      again without the sandbox?";
        let params = self.approval_params(
            item_id,
            started_at_ms,
            command,
            cwd,
            Some(reason.to_owned()),
        );
        let answer = self.ask_approval(params).await;
        let decision = match answer {
            Ok(Ok(value)) => {
                serde_json::from_value::<CommandExecutionRequestApprovalResponse>(value)
                    .map(|response| response.decision)
                    .unwrap_or(CommandExecutionApprovalDecision::Decline)
            }
            Ok(Err(_)) => CommandExecutionApprovalDecision::Decline,
            Err(_) => return Err(AgentError::Interrupted),
        };
        match decision {
            CommandExecutionApprovalDecision::Accept
            | CommandExecutionApprovalDecision::AcceptForSession => Ok(true),
            CommandExecutionApprovalDecision::Cancel => {
                self.active.cancel.cancel();
                Err(AgentError::Interrupted)
            }
            _ => Ok(false),
        }
    }

    /// Runs `argv` through the process manager, under `sandbox` if given, as process
    /// `handle`, its output streamed as deltas of item `item_id`; returns exit code, output
    /// and pid. The exit code is `None` when the turn was interrupted.
    pub(super) async fn execute(
        &self,
        item_id: &str,
        handle: &str,
        argv: Vec<String>,
        cwd: &str,
        timeout: Option<Duration>,
        sandbox: Option<crate::sandbox::ResolvedSandbox>,
    ) -> (Option<i32>, String, Option<String>) {
        let (exited_tx, exited_rx) = oneshot::channel();
        let sink = Arc::new(CommandSink {
            thread: Arc::clone(&self.thread),
            outgoing: self.outgoing.clone(),
            turn_id: self.turn_id.clone(),
            item_id: item_id.to_owned(),
            output: Mutex::new(Vec::new()),
            exited: Mutex::new(Some(exited_tx)),
        });
        let params = ProcessSpawnParams {
            process_handle: handle.to_owned(),
            command: argv,
            cwd: Some(cwd.to_owned()),
            tty: None,
            stream_stdin: None,
            stream_stdout_stderr: Some(true),
            output_bytes_cap: None,
            // Without a timeout the turn bounds the command: interrupting the turn kills it.
            timeout_ms: Some(
                timeout.map(|timeout| i64::try_from(timeout.as_millis()).unwrap_or(i64::MAX)),
            ),
            env: None,
            size: None,
        };
        let spawned = match self
            .processes
            .spawn_sandboxed(params, sandbox, Arc::clone(&sink) as _)
            .await
        {
            Ok(spawned) => spawned,
            Err(error) => return (None, error.message, None),
        };
        let pid = spawned.pid().to_string();
        spawned.start_streaming();
        let exit_code = tokio::select! {
            exited = exited_rx => exited.ok(),
            () = self.active.cancel.cancelled() => {
                self.processes.kill_all().await;
                None
            }
        };
        let output =
            String::from_utf8_lossy(&sink.output.lock().unwrap_or_else(PoisonError::into_inner))
                .into_owned();
        (exit_code, output, Some(pid))
    }
}

/// How the agent's shell tool runs a command line.
fn agent_argv(command: &str) -> Vec<String> {
    vec!["sh".to_owned(), "-c".to_owned(), command.to_owned()]
}

/// The prefix of the line that says, at the top of a command's output, that its sandbox is
/// only partially enforced on this machine.
const SANDBOX_NOTE_PREFIX: &str = crate::helper::sandbox::REPORT_PREFIX;

/// Whether a failed command's output reads like the sandbox's doing: the messages of `EACCES`
/// and `EPERM` (Landlock and seccomp), and of a read-only file system.
fn looks_like_denial(output: &str) -> bool {
    [
        "Permission denied",
        "Operation not permitted",
        "Read-only file system",
    ]
    .iter()
    .any(|sign| output.contains(sign))
}

/// Turns one command's process events into `item/commandExecution/outputDelta`.
struct CommandSink {
    thread: Arc<LoadedThread>,
    outgoing: OutgoingMessageSender,
    turn_id: String,
    item_id: String,
    output: Mutex<Vec<u8>>,
    exited: Mutex<Option<oneshot::Sender<i32>>>,
}

#[async_trait]
impl ProcessEventSink for CommandSink {
    async fn output_delta(&self, delta: ProcessOutputDeltaNotification) {
        let bytes = delta.delta;
        self.output
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(&bytes);
        let note = ServerNotification::CommandExecutionOutputDelta(
            CommandExecutionOutputDeltaNotification {
                thread_id: self.thread.id.clone(),
                turn_id: self.turn_id.clone(),
                item_id: self.item_id.clone(),
                delta: String::from_utf8_lossy(&bytes).into_owned().into(),
            },
        );
        self.thread.notify(&self.outgoing, note, None).await;
    }

    async fn exited(&self, exited: ProcessExitedNotification) {
        if let Some(sender) = self
            .exited
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            let _ = sender.send(exited.exit_code);
        }
    }
}

/// What stays the same in every report of one command item (the agent's or the user's own):
/// [`CommandItem::at`] gives the item in one state.
pub(super) struct CommandItem {
    pub(super) id: String,
    /// The command as the item shows it.
    pub(super) shown: String,
    /// The command as its one `unknown` action holds it.
    pub(super) command: String,
    pub(super) cwd: String,
    pub(super) source: CommandExecutionSource,
}

impl CommandItem {
    /// The item with `status` and what is known of its run so far.
    pub(super) fn at(
        &self,
        status: CommandExecutionStatus,
        process_id: Option<String>,
        exit_code: Option<i32>,
        aggregated_output: Option<SharedText>,
        duration_ms: Option<i64>,
    ) -> ThreadItem {
        ThreadItem::CommandExecution {
            id: self.id.clone(),
            command: self.shown.clone(),
            cwd: self.cwd.clone(),
            status,
            command_actions: vec![CommandAction::Unknown {
                command: self.command.clone(),
            }],
            process_id,
            exit_code,
            aggregated_output,
            duration_ms,
            source: self.source,
        }
    }
}
