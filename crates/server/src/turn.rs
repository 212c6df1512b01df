//! One running turn: the task that runs the [`crate::agent::Agent`] and the [`TurnDriver`]
//! through which the agent acts. The driver owns every ordering rule of protocol.md section 6
//! for a turn (status before `turn/started`, flags around approvals and questions, items
//! around their server requests, `serverRequest/resolved` after the answer) and every
//! interruption rule (pending requests resolved first, then the `turn/interrupt` reply, then
//! `turn/completed`).
//!
//! Commands run through the [`ProcessManager`] of the processes issue (own process group,
//! kill on interrupt), with its output turned into `item/commandExecution/outputDelta`.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::Value;
use tandem_host::{OutgoingMessageSender, PendingServerRequest, RequestResult};
use tandem_protocol::server_methods::{
    CommandExecutionRequestApproval, ToolCall, ToolRequestUserInput,
};
use tandem_protocol::{
    AgentMessageDeltaNotification, ApprovalPolicy, CommandAction, CommandExecutionApprovalDecision,
    CommandExecutionOutputDeltaNotification, CommandExecutionRequestApprovalParams,
    CommandExecutionRequestApprovalResponse, CommandExecutionStatus,
    DynamicToolCallOutputContentItem, DynamicToolCallStatus, DynamicToolSpec, EmptyResponse,
    ErrorNotification, ItemCompletedNotification, ItemStartedNotification, JSONRPCErrorError,
    ProcessExitedNotification, ProcessOutputDeltaNotification, ProcessSpawnParams, RequestId,
    ServerNotification, ServerRequestResolvedNotification, ThreadActiveFlag, ThreadItem,
    ThreadStatus, ToolCallParams, ToolCallResponse, ToolRequestUserInputParams,
    ToolRequestUserInputResponse, Turn, TurnCompletedNotification, TurnError, TurnItemsView,
    TurnStartedNotification, TurnStatus, UserInput, UserInputQuestion,
};
use tokio::sync::oneshot;

use crate::agent::AgentError;
use crate::process::{ProcessEventSink, ProcessManager};
use crate::store;
use crate::threads::{ActiveTurn, LoadedThread, ThreadService, now_millis, now_secs};

/// Text of the error that resolves a server request cancelled by a turn transition.
const CANCELLED_BY_TURN: &str = "the turn that sent this request has ended";

/// What a dynamic tool call returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutcome {
    /// The client's output (empty when the call failed).
    pub content_items: Vec<DynamicToolCallOutputContentItem>,
    /// Whether the call succeeded; an error reply from the client counts as a failure.
    pub success: bool,
}

/// What became of a command the agent asked to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandOutcome {
    /// The user declined it; it did not run.
    Declined,
    /// It ran (or failed to start, with exit code `None`).
    Ran {
        /// The exit code, if it exited.
        exit_code: Option<i32>,
        /// Its combined stdout and stderr (lossy UTF-8).
        output: String,
    },
}

/// The agent's handle on its turn. Every method that waits returns
/// [`AgentError::Interrupted`] as soon as the turn is interrupted.
pub struct TurnDriver {
    thread: Arc<LoadedThread>,
    active: Arc<ActiveTurn>,
    outgoing: OutgoingMessageSender,
    turn_id: String,
    cwd: String,
    approval_policy: ApprovalPolicy,
    tools: Vec<DynamicToolSpec>,
    processes: ProcessManager,
    /// Items completed so far, in order.
    items: Vec<ThreadItem>,
}

impl std::fmt::Debug for TurnDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnDriver")
            .field("thread", &self.thread.id)
            .field("turn", &self.turn_id)
            .finish_non_exhaustive()
    }
}

impl TurnDriver {
    /// The thread's id.
    pub fn thread_id(&self) -> &str {
        &self.thread.id
    }

    /// The turn's id.
    pub fn turn_id(&self) -> &str {
        &self.turn_id
    }

    /// The thread's working directory.
    pub fn cwd(&self) -> &str {
        &self.cwd
    }

    /// The dynamic tools the client registered at `thread/start`.
    pub fn tools(&self) -> &[DynamicToolSpec] {
        &self.tools
    }

    /// Whether a dynamic tool named `name` was registered.
    pub fn has_tool(&self, name: &str) -> bool {
        self.tools.iter().any(|tool| tool.name == name)
    }

    fn interrupted(&self) -> bool {
        self.active.cancel.is_cancelled()
    }

    async fn notify(&self, note: ServerNotification) {
        self.thread.notify(&self.outgoing, note, None).await;
    }

    async fn item_started(&self, item: &ThreadItem) {
        self.set_snapshot_item(item);
        self.notify(ServerNotification::ItemStarted(ItemStartedNotification {
            thread_id: self.thread.id.clone(),
            turn_id: self.turn_id.clone(),
            item: item.clone(),
            started_at_ms: now_millis(),
        }))
        .await;
    }

    async fn item_completed(&mut self, item: ThreadItem) {
        self.set_snapshot_item(&item);
        self.notify(ServerNotification::ItemCompleted(
            ItemCompletedNotification {
                thread_id: self.thread.id.clone(),
                turn_id: self.turn_id.clone(),
                item: item.clone(),
                completed_at_ms: now_millis(),
            },
        ))
        .await;
        self.items.push(item);
    }

    /// Puts `item` into the snapshot that `thread/read` shows, replacing an earlier version.
    fn set_snapshot_item(&self, item: &ThreadItem) {
        let mut snapshot = self
            .active
            .snapshot
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match snapshot.items.iter_mut().find(|old| old.id() == item.id()) {
            Some(old) => *old = item.clone(),
            None => snapshot.items.push(item.clone()),
        }
    }

    async fn user_message(&mut self, content: Vec<UserInput>, client_id: Option<String>) {
        let item = ThreadItem::UserMessage {
            id: store::new_id(),
            content,
            client_id,
        };
        self.item_started(&item).await;
        self.item_completed(item).await;
    }

    /// Streams an agent message, in several `item/agentMessage/delta` chunks (one per word).
    pub async fn agent_message(&mut self, text: &str) -> Result<(), AgentError> {
        if self.interrupted() {
            return Err(AgentError::Interrupted);
        }
        let id = store::new_id();
        self.item_started(&ThreadItem::AgentMessage {
            id: id.clone(),
            text: String::new(),
        })
        .await;
        for chunk in text.split_inclusive(' ') {
            self.notify(ServerNotification::AgentMessageDelta(
                AgentMessageDeltaNotification {
                    thread_id: self.thread.id.clone(),
                    turn_id: self.turn_id.clone(),
                    item_id: id.clone(),
                    delta: chunk.to_owned(),
                },
            ))
            .await;
        }
        self.item_completed(ThreadItem::AgentMessage {
            id,
            text: text.to_owned(),
        })
        .await;
        Ok(())
    }

    /// Waits for `duration`, or until the turn is interrupted.
    pub async fn sleep(&mut self, duration: Duration) -> Result<(), AgentError> {
        tokio::select! {
            () = self.active.cancel.cancelled() => Err(AgentError::Interrupted),
            () = tokio::time::sleep(duration) => Ok(()),
        }
    }

    /// Input steered into the turn since the last call (each recorded as a `userMessage`
    /// item); empty when there is none.
    pub async fn take_steered_input(&mut self) -> Result<Vec<UserInput>, AgentError> {
        if self.interrupted() {
            return Err(AgentError::Interrupted);
        }
        let steered: Vec<_> = std::mem::take(
            &mut self
                .active
                .steered
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .inputs,
        );
        let mut input = Vec::new();
        for (content, client_id) in steered {
            self.user_message(content.clone(), client_id).await;
            input.extend(content);
        }
        Ok(input)
    }

    /// Waits for the answer to `pending`; on interruption cancels it. Either way sends
    /// `serverRequest/resolved` before returning.
    async fn await_answer(
        &self,
        pending: PendingServerRequest,
    ) -> Result<RequestResult, AgentError> {
        let request_id = pending.id().clone();
        let answer = tokio::select! {
            answer = pending => Some(answer),
            () = self.active.cancel.cancelled() => None,
        };
        if answer.is_none() {
            self.outgoing
                .cancel_request(&request_id, JSONRPCErrorError::internal(CANCELLED_BY_TURN));
        }
        self.resolved(request_id).await;
        answer.ok_or(AgentError::Interrupted)
    }

    async fn resolved(&self, request_id: RequestId) {
        self.notify(ServerNotification::ServerRequestResolved(
            ServerRequestResolvedNotification {
                thread_id: self.thread.id.clone(),
                turn_id: self.turn_id.clone(),
                request_id,
            },
        ))
        .await;
    }

    async fn set_flag(&self, flag: ThreadActiveFlag, on: bool) {
        let status = {
            let state = self.thread.state();
            let mut flags = match &state.status {
                ThreadStatus::Active { active_flags } => active_flags.clone(),
                _ => Vec::new(),
            };
            flags.retain(|existing| *existing != flag);
            if on {
                flags.push(flag);
                flags.sort();
            }
            ThreadStatus::Active {
                active_flags: flags,
            }
        };
        self.thread.set_status(&self.outgoing, status).await;
    }

    /// Calls the client's dynamic tool `tool` (`item/tool/call`) and returns its output.
    pub async fn call_tool(
        &mut self,
        namespace: Option<String>,
        tool: &str,
        arguments: Value,
    ) -> Result<ToolOutcome, AgentError> {
        if self.interrupted() {
            return Err(AgentError::Interrupted);
        }
        let id = store::new_id();
        let started = Instant::now();
        let item = |status, content_items, success, duration_ms| ThreadItem::DynamicToolCall {
            id: id.clone(),
            tool: tool.to_owned(),
            namespace: namespace.clone(),
            arguments: arguments.clone(),
            status,
            content_items,
            success,
            duration_ms,
        };
        self.item_started(&item(DynamicToolCallStatus::InProgress, None, None, None))
            .await;
        let params = ToolCallParams {
            thread_id: self.thread.id.clone(),
            turn_id: self.turn_id.clone(),
            call_id: id.clone(),
            namespace: namespace.clone(),
            tool: tool.to_owned(),
            arguments: arguments.clone(),
        };
        let pending = self
            .outgoing
            .send_request::<ToolCall>(self.active.connection, params)
            .await;
        let answer = self.await_answer(pending).await;
        let duration = Some(elapsed_ms(started));
        let outcome = match &answer {
            Ok(Ok(value)) => match serde_json::from_value::<ToolCallResponse>(value.clone()) {
                Ok(response) => ToolOutcome {
                    content_items: response.content_items,
                    success: response.success,
                },
                Err(error) => {
                    tracing::debug!(%error, "undecodable item/tool/call answer");
                    failed_tool(format!("invalid tool answer: {error}"))
                }
            },
            Ok(Err(error)) => failed_tool(error.message.clone()),
            Err(_) => failed_tool(CANCELLED_BY_TURN.to_owned()),
        };
        let status = if outcome.success {
            DynamicToolCallStatus::Completed
        } else {
            DynamicToolCallStatus::Failed
        };
        self.item_completed(item(
            status,
            Some(outcome.content_items.clone()),
            Some(outcome.success),
            duration,
        ))
        .await;
        answer.map(|_| outcome)
    }

    /// Asks the user `question` (`item/tool/requestUserInput`) and returns their answers.
    pub async fn ask_user(&mut self, question: &str) -> Result<Vec<String>, AgentError> {
        if self.interrupted() {
            return Err(AgentError::Interrupted);
        }
        let params = ToolRequestUserInputParams {
            thread_id: self.thread.id.clone(),
            turn_id: self.turn_id.clone(),
            item_id: store::new_id(),
            is_blocking: true,
            questions: vec![UserInputQuestion {
                id: "q".to_owned(),
                header: "Question".to_owned(),
                question: question.to_owned(),
                is_other: false,
                is_secret: false,
                options: None,
            }],
        };
        self.set_flag(ThreadActiveFlag::WaitingOnUserInput, true)
            .await;
        let pending = self
            .outgoing
            .send_request::<ToolRequestUserInput>(self.active.connection, params)
            .await;
        let answer = self.await_answer(pending).await;
        self.set_flag(ThreadActiveFlag::WaitingOnUserInput, false)
            .await;
        match answer? {
            Ok(value) => match serde_json::from_value::<ToolRequestUserInputResponse>(value) {
                Ok(response) => Ok(response
                    .answers
                    .into_values()
                    .flat_map(|answer| answer.answers)
                    .collect()),
                Err(error) => Err(AgentError::Failed(format!(
                    "the client's answer to item/tool/requestUserInput does not decode: {error}"
                ))),
            },
            Err(error) => Err(AgentError::Failed(format!(
                "the client refused item/tool/requestUserInput: {}",
                error.message
            ))),
        }
    }

    /// Runs `command` with `sh -c` in the thread's cwd, asking for approval first unless the
    /// approval policy is `never`; streams its output as `item/commandExecution/outputDelta`.
    pub async fn run_command(&mut self, command: &str) -> Result<CommandOutcome, AgentError> {
        if self.interrupted() {
            return Err(AgentError::Interrupted);
        }
        let id = store::new_id();
        let started_at_ms = now_millis();
        let cwd = self.cwd.clone();
        let item =
            |status, process_id, exit_code, output, duration_ms| ThreadItem::CommandExecution {
                id: id.clone(),
                command: command.to_owned(),
                cwd: cwd.clone(),
                status,
                command_actions: vec![CommandAction::Unknown {
                    command: command.to_owned(),
                }],
                process_id,
                exit_code,
                aggregated_output: output,
                duration_ms,
            };
        self.item_started(&item(
            CommandExecutionStatus::InProgress,
            None,
            None,
            None,
            None,
        ))
        .await;
        if self.approval_policy != ApprovalPolicy::Never {
            let params = CommandExecutionRequestApprovalParams {
                thread_id: self.thread.id.clone(),
                turn_id: self.turn_id.clone(),
                item_id: id.clone(),
                started_at_ms,
                command: command.to_owned(),
                cwd: cwd.clone(),
                reason: None,
                command_actions: vec![CommandAction::Unknown {
                    command: command.to_owned(),
                }],
                available_decisions: CommandExecutionApprovalDecision::ALL.to_vec(),
            };
            self.set_flag(ThreadActiveFlag::WaitingOnApproval, true)
                .await;
            let pending = self
                .outgoing
                .send_request::<CommandExecutionRequestApproval>(self.active.connection, params)
                .await;
            let answer = self.await_answer(pending).await;
            self.set_flag(ThreadActiveFlag::WaitingOnApproval, false)
                .await;
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
                CommandExecutionApprovalDecision::Accept
                | CommandExecutionApprovalDecision::AcceptForSession
                    if answer.is_ok() => {}
                decision => {
                    self.item_completed(item(
                        CommandExecutionStatus::Declined,
                        None,
                        None,
                        None,
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
        let started = Instant::now();
        let (exit_code, output, process_id) = self.execute(&id, command).await;
        let status = match exit_code {
            Some(0) => CommandExecutionStatus::Completed,
            _ => CommandExecutionStatus::Failed,
        };
        self.item_completed(item(
            status,
            process_id,
            exit_code,
            Some(output.clone()),
            Some(elapsed_ms(started)),
        ))
        .await;
        if self.interrupted() {
            return Err(AgentError::Interrupted);
        }
        Ok(CommandOutcome::Ran { exit_code, output })
    }

    /// Runs the command through the process manager; returns exit code, output and pid.
    async fn execute(&self, item_id: &str, command: &str) -> (Option<i32>, String, Option<String>) {
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
            process_handle: item_id.to_owned(),
            command: vec!["sh".to_owned(), "-c".to_owned(), command.to_owned()],
            cwd: Some(self.cwd.clone()),
            tty: None,
            stream_stdin: None,
            stream_stdout_stderr: Some(true),
            output_bytes_cap: None,
            // The turn bounds the command: interrupting the turn kills it.
            timeout_ms: Some(None),
            env: None,
            size: None,
        };
        let spawned = match self.processes.spawn(params, Arc::clone(&sink) as _).await {
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

fn failed_tool(message: String) -> ToolOutcome {
    ToolOutcome {
        content_items: vec![DynamicToolCallOutputContentItem::InputText { text: message }],
        success: false,
    }
}

fn elapsed_ms(started: Instant) -> i64 {
    i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX)
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
                delta: String::from_utf8_lossy(&bytes).into_owned(),
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

/// Starts the task that runs `turn` on `thread`.
pub(crate) fn spawn(
    service: Arc<ThreadService>,
    thread: Arc<LoadedThread>,
    active: Arc<ActiveTurn>,
    turn: Turn,
    input: Vec<UserInput>,
    client_id: Option<String>,
) {
    tokio::spawn(run(service, thread, active, turn, input, client_id));
}

async fn run(
    service: Arc<ThreadService>,
    thread: Arc<LoadedThread>,
    active: Arc<ActiveTurn>,
    turn: Turn,
    input: Vec<UserInput>,
    client_id: Option<String>,
) {
    let outgoing = service.outgoing.clone();
    let (history, cwd, approval_policy, tools, first_turn) = {
        let state = thread.state();
        (
            state.history.clone(),
            state.record.cwd.clone(),
            state.record.approval_policy,
            state.record.dynamic_tools.clone(),
            state.record.preview.is_empty(),
        )
    };
    let started = Instant::now();
    thread
        .set_status(
            &outgoing,
            ThreadStatus::Active {
                active_flags: Vec::new(),
            },
        )
        .await;
    thread
        .notify(
            &outgoing,
            ServerNotification::TurnStarted(TurnStartedNotification {
                thread_id: thread.id.clone(),
                turn: turn.clone(),
            }),
            None,
        )
        .await;
    let mut driver = TurnDriver {
        thread: Arc::clone(&thread),
        active: Arc::clone(&active),
        outgoing: outgoing.clone(),
        turn_id: turn.id.clone(),
        cwd,
        approval_policy,
        tools,
        processes: active.processes.clone(),
        items: Vec::new(),
    };
    let preview = first_turn.then(|| preview_of(&input));
    driver.user_message(input.clone(), client_id).await;
    let agent = Arc::clone(&service.agent);
    let mut result = agent.run_turn(&history, input, &mut driver).await;
    // Input steered after the agent last looked still belongs to this turn: hand it to the
    // agent again until none is left, then refuse more, atomically with that last look.
    while result.is_ok() && !active.cancel.is_cancelled() {
        let leftover = {
            let mut queue = active
                .steered
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if queue.inputs.is_empty() {
                queue.closed = true;
                break;
            }
            std::mem::take(&mut queue.inputs)
        };
        let mut input = Vec::new();
        for (content, client_id) in leftover {
            driver.user_message(content.clone(), client_id).await;
            input.extend(content);
        }
        result = agent.run_turn(&history, input, &mut driver).await;
    }
    active
        .steered
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .closed = true;
    if active.cancel.is_cancelled() {
        result = Err(AgentError::Interrupted);
    }
    driver.processes.kill_all().await;

    let (status, error, thread_status) = match &result {
        Ok(()) => (TurnStatus::Completed, None, ThreadStatus::Idle),
        Err(AgentError::Interrupted) => (TurnStatus::Interrupted, None, ThreadStatus::Idle),
        Err(AgentError::Failed(message)) => (
            TurnStatus::Failed,
            Some(TurnError {
                message: message.clone(),
                additional_details: None,
            }),
            ThreadStatus::SystemError,
        ),
    };
    let finished = Turn {
        id: turn.id.clone(),
        items: std::mem::take(&mut driver.items),
        items_view: TurnItemsView::Full,
        status,
        error: error.clone(),
        started_at: turn.started_at,
        completed_at: Some(now_secs()),
        duration_ms: Some(elapsed_ms(started)),
    };
    drop(driver);

    // The end of the turn queues behind earlier requests for the thread, so a `turn/start`
    // that arrives after it sees the thread idle, and an unload cannot slip in between.
    let thread_id = thread.id.clone();
    let finisher = Arc::clone(&service);
    service.sequenced(&thread_id, async move {
        let service = finisher;
        service
            .commit_turn(&thread, &finished, thread_status.clone(), preview)
            .await;
        if let Some(error) = error {
            thread
                .notify(
                    &outgoing,
                    ServerNotification::Error(ErrorNotification {
                        thread_id: thread.id.clone(),
                        turn_id: finished.id.clone(),
                        error,
                        will_retry: false,
                    }),
                    None,
                )
                .await;
        }
        // Pending requests were resolved by the driver; now the interrupt replies, then the
        // status, then `turn/completed` (protocol.md sections 4 and 6).
        let replies: Vec<_> = std::mem::take(
            &mut *active
                .interrupt_replies
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        for reply in replies {
            outgoing
                .send_response_and_wait(reply, EmptyResponse {})
                .await;
        }
        thread.set_status(&outgoing, thread_status).await;
        thread
            .notify(
                &outgoing,
                ServerNotification::TurnCompleted(TurnCompletedNotification {
                    thread_id: thread.id.clone(),
                    turn: finished,
                }),
                None,
            )
            .await;
        service.finish_turn(&thread);
    });
}

/// The thread's preview: its first user text.
fn preview_of(input: &[UserInput]) -> String {
    input
        .iter()
        .find_map(|input| match input {
            UserInput::Text { text } => Some(text.clone()),
            UserInput::Unsupported { .. } => None,
        })
        .unwrap_or_default()
}
