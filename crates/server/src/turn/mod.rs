//! One running turn: the task that runs the [`crate::agent::Agent`] and the [`TurnDriver`]
//! through which the agent acts. The driver owns every ordering rule of docs/protocol.md section 6
//! for a turn (status before `turn/started`, flags around approvals and questions, items
//! around their server requests, `serverRequest/resolved` after the answer) and every
//! interruption rule (pending requests resolved first, then the `turn/interrupt` reply, then
//! `turn/completed`).
//!
//! Commands run through the [`ProcessManager`] of the processes issue (own process group,
//! kill on interrupt), with its output turned into `item/commandExecution/outputDelta`.

//!
//! Files: this one holds the driver and its messages, tools and questions; `commands` its
//! commands (approval, process, output); `task` the task that runs a turn from start to
//! `turn/completed`; `compaction` the compaction turn of `thread/compact/start`.

mod commands;
mod compaction;
mod task;

pub use compaction::summarize_transcript;
pub(crate) use task::{StartedTurn, TurnWork, preview_of, spawn};

use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;
use tandem_host::{OutgoingMessageSender, PendingServerRequest, RequestResult};
use tandem_protocol::RequestMethod;
use tandem_protocol::server_methods::{ToolCall, ToolRequestUserInput};
use tandem_protocol::{
    AgentMessageDeltaNotification, ApprovalPolicy, DynamicToolCallOutputContentItem,
    DynamicToolCallStatus, DynamicToolSpec, ErrorNotification, ItemCompletedNotification,
    ItemStartedNotification, JSONRPCErrorError, RequestId, ServerNotification,
    ServerRequestResolvedNotification, SharedText, ThreadActiveFlag, ThreadItem, ThreadStatus,
    ToolCallParams, ToolCallResponse, ToolRequestUserInputParams, ToolRequestUserInputResponse,
    TurnError, UserInput, UserInputQuestion,
};

use crate::agent::AgentError;
use crate::process::ProcessManager;
use crate::store::{self, StoreError, ThreadStore};
use crate::threads::{ActiveTurn, LoadedThread, now_millis};

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

/// How [`TurnDriver::run_command`] runs a command, beyond the command text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandOptions {
    /// The working directory; a relative path is taken relative to the thread's cwd.
    /// `None` runs in the thread's cwd.
    pub workdir: Option<String>,
    /// Kill the command's process group after this long (it then reports exit code 124).
    /// `None` lets it run until it exits or the turn is interrupted.
    pub timeout: Option<Duration>,
}

/// An agent message being streamed: begun by [`TurnDriver::begin_agent_message`], fed by
/// [`TurnDriver::agent_message_delta`] and finished by
/// [`TurnDriver::complete_agent_message`].
#[derive(Debug)]
#[must_use = "an agent message must be completed, or its item never completes"]
pub struct StreamingMessage {
    id: String,
    text: String,
}

impl StreamingMessage {
    /// The id of the message's `agentMessage` item.
    pub fn item_id(&self) -> &str {
        &self.id
    }

    /// The text streamed so far.
    pub fn text(&self) -> &str {
        &self.text
    }
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
        /// Its combined stdout and stderr (lossy UTF-8), shared with the item that reports it.
        output: SharedText,
    },
}

/// The items of a running turn, as [`TurnDriver::items`] returns them: a guard on the turn's
/// snapshot that reads as a slice.
pub struct TurnItems<'a>(std::sync::MutexGuard<'a, tandem_protocol::Turn>);

impl std::ops::Deref for TurnItems<'_> {
    type Target = [ThreadItem];

    fn deref(&self) -> &[ThreadItem] {
        &self.0.items
    }
}

impl std::fmt::Debug for TurnItems<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.items.iter()).finish()
    }
}

/// The agent's handle on its turn. Every method that waits returns
/// [`AgentError::Interrupted`] as soon as the turn is interrupted.
pub struct TurnDriver {
    thread: Arc<LoadedThread>,
    active: Arc<ActiveTurn>,
    outgoing: OutgoingMessageSender,
    turn_id: String,
    cwd: String,
    model: Option<String>,
    approval_policy: ApprovalPolicy,
    /// The thread's sandbox policy at the start of the turn, and what enforces it.
    sandbox_policy: tandem_protocol::SandboxPolicy,
    sandboxing: crate::sandbox::Sandboxing,
    tools: Vec<DynamicToolSpec>,
    processes: ProcessManager,
    /// Where the turn is written as it happens: each item before its `item/completed`.
    store: Arc<dyn ThreadStore>,
    /// The stored index the next new item takes (the user's input is item 0).
    next_index: usize,
    /// Started items already stored (commands and tool calls), with their index, so that
    /// their completion replaces them in place.
    stored_started: Vec<(String, usize)>,
    /// The first store failure: the turn then stops and ends `failed` with this message, and
    /// no later item is reported as completed.
    store_failure: Option<String>,
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

    /// The model this turn uses: `turn/start`'s, else the thread's, else the server's
    /// `model`; `None` when none of them names one.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// The items of this turn completed so far, oldest first: the user's input (and input
    /// steered in since), messages, commands and tool calls.
    ///
    /// The items live once, in the running turn's snapshot that `thread/read` shows, so the
    /// returned guard holds its lock: use it and drop it, never across an `await`.
    pub fn items(&self) -> TurnItems<'_> {
        TurnItems(
            self.active
                .snapshot
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// Whether the turn was interrupted. Agents that wait on something the driver does not
    /// know (a model's stream) check it between steps, or wait through
    /// [`TurnDriver::or_interrupted`].
    pub fn is_interrupted(&self) -> bool {
        self.active.cancel.is_cancelled()
    }

    /// Awaits `work` unless the turn is interrupted first, in which case `work` is dropped at
    /// once (an HTTP request in it is abandoned and its connection closed) and
    /// [`AgentError::Interrupted`] is returned.
    pub async fn or_interrupted<F: std::future::Future>(
        &self,
        work: F,
    ) -> Result<F::Output, AgentError> {
        tokio::select! {
            biased;
            () = self.active.cancel.cancelled() => Err(AgentError::Interrupted),
            output = work => Ok(output),
        }
    }

    /// Tells the turn's subscribers that something failed and will be retried: an `error`
    /// notification with `willRetry: true` (for example `Reconnecting... 2/5`). A failure that
    /// ends the turn is reported by returning [`AgentError::Failed`] instead.
    pub async fn report_retry(&self, message: &str, additional_details: Option<String>) {
        self.notify(ServerNotification::Error(ErrorNotification {
            thread_id: self.thread.id.clone(),
            turn_id: self.turn_id.clone(),
            error: TurnError {
                message: message.to_owned(),
                additional_details,
            },
            will_retry: true,
        }))
        .await;
    }

    /// Adds `last` (one model request's usage, as its stream reported it) to the thread's
    /// total and tells the subscribers: `thread/tokenUsage/updated`.
    pub async fn report_token_usage(&self, last: tandem_protocol::TokenUsageBreakdown) {
        let total = {
            let mut total = self
                .thread
                .token_usage
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            total.add(&last);
            *total
        };
        self.notify(ServerNotification::ThreadTokenUsageUpdated(
            tandem_protocol::ThreadTokenUsageUpdatedNotification {
                thread_id: self.thread.id.clone(),
                turn_id: self.turn_id.clone(),
                token_usage: tandem_protocol::ThreadTokenUsage {
                    total,
                    last,
                    model_context_window: None,
                },
            },
        ))
        .await;
    }

    async fn notify(&self, note: ServerNotification) {
        self.thread.notify(&self.outgoing, note, None).await;
    }

    /// Stores `item` as item `index` of the turn. On failure the turn stops (it ends `failed`
    /// with the error) and `false` is returned: the caller must not report the item.
    async fn persist(&mut self, index: usize, item: &ThreadItem) -> bool {
        if self.store_failure.is_some() {
            return false;
        }
        let stored = self
            .store
            .put_item(&self.thread.id, &self.turn_id, index, item)
            .await;
        match stored {
            Ok(()) => true,
            Err(error) => {
                self.fail_on_store(&error);
                false
            }
        }
    }

    /// Records the store failure that ends this turn and stops the agent.
    fn fail_on_store(&mut self, error: &StoreError) {
        tracing::error!(thread = %self.thread.id, turn = %self.turn_id, %error, "turn cannot be stored");
        if self.store_failure.is_none() {
            self.store_failure = Some(error.to_string());
        }
        self.active.cancel.cancel();
    }

    /// The store failure that ended the turn, if any.
    pub(crate) fn take_store_failure(&mut self) -> Option<String> {
        self.store_failure.take()
    }

    async fn item_started(&mut self, item: &ThreadItem) {
        // A call is stored as soon as it starts, so that a crash while it runs leaves a
        // started item for recovery to close (and the model an explicit "interrupted" result)
        // rather than no trace of an action that may have taken effect.
        if matches!(
            item,
            ThreadItem::CommandExecution { .. } | ThreadItem::DynamicToolCall { .. }
        ) {
            let index = self.next_index;
            if !self.persist(index, item).await {
                return;
            }
            self.next_index += 1;
            self.stored_started.push((item.id().to_owned(), index));
        }
        self.set_snapshot_item(item.clone());
        self.notify(ServerNotification::ItemStarted(ItemStartedNotification {
            thread_id: self.thread.id.clone(),
            turn_id: self.turn_id.clone(),
            item: item.clone(),
            started_at_ms: now_millis(),
        }))
        .await;
    }

    /// Stores `item` (written before it is reported: "completed" means durable), then sends
    /// `item/completed`. Not reported at all if it cannot be stored.
    async fn item_completed(&mut self, item: ThreadItem) {
        let index = match self
            .stored_started
            .iter()
            .position(|(id, _)| id == item.id())
        {
            Some(position) => self.stored_started.swap_remove(position).1,
            None => self.next_index,
        };
        if !self.persist(index, &item).await {
            return;
        }
        if index == self.next_index {
            self.next_index += 1;
        }
        self.notify(ServerNotification::ItemCompleted(
            ItemCompletedNotification {
                thread_id: self.thread.id.clone(),
                turn_id: self.turn_id.clone(),
                item: item.clone(),
                completed_at_ms: now_millis(),
            },
        ))
        .await;
        self.set_snapshot_item(item);
    }

    /// Reports the user's input, which `turn/start` stored as item 0 before it answered.
    async fn stored_user_message(&mut self, item: ThreadItem) {
        self.next_index = self.next_index.max(1);
        self.notify(ServerNotification::ItemStarted(ItemStartedNotification {
            thread_id: self.thread.id.clone(),
            turn_id: self.turn_id.clone(),
            item: item.clone(),
            started_at_ms: now_millis(),
        }))
        .await;
        self.notify(ServerNotification::ItemCompleted(
            ItemCompletedNotification {
                thread_id: self.thread.id.clone(),
                turn_id: self.turn_id.clone(),
                item: item.clone(),
                completed_at_ms: now_millis(),
            },
        ))
        .await;
        self.set_snapshot_item(item);
    }

    /// Puts `item` into the snapshot that `thread/read` shows (and [`TurnDriver::items`]
    /// reads), replacing an earlier version.
    fn set_snapshot_item(&self, item: ThreadItem) {
        let mut snapshot = self
            .active
            .snapshot
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match snapshot.items.iter_mut().find(|old| old.id() == item.id()) {
            Some(old) => *old = item,
            None => snapshot.items.push(item),
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
    /// The text is allocated once: each delta is a slice of it, and the completed item holds
    /// it whole (pass a `String` to hand its buffer over).
    pub async fn agent_message(&mut self, text: impl Into<SharedText>) -> Result<(), AgentError> {
        let text = text.into();
        let message = self.begin_agent_message().await?;
        let mut start = 0;
        for chunk in text.split_inclusive(' ') {
            let end = start + chunk.len();
            let delta = text
                .slice(start..end)
                .expect("a chunk ends on a char boundary");
            start = end;
            self.send_delta(&message.id, delta).await;
        }
        self.item_completed(ThreadItem::AgentMessage {
            id: message.id,
            text,
        })
        .await;
        Ok(())
    }

    /// Starts an agent message whose text arrives piece by piece (`item/started` with empty
    /// text); feed it with [`TurnDriver::agent_message_delta`] and finish it with
    /// [`TurnDriver::complete_agent_message`].
    pub async fn begin_agent_message(&mut self) -> Result<StreamingMessage, AgentError> {
        if self.is_interrupted() {
            return Err(AgentError::Interrupted);
        }
        let message = StreamingMessage {
            id: store::new_id(),
            text: String::new(),
        };
        self.item_started(&ThreadItem::AgentMessage {
            id: message.id.clone(),
            text: SharedText::default(),
        })
        .await;
        Ok(message)
    }

    /// Sends `delta` of `message` to the subscribers at once (`item/agentMessage/delta`).
    /// Fails with [`AgentError::Interrupted`], sending nothing, once the turn is interrupted;
    /// the message should still be completed with what it has.
    pub async fn agent_message_delta(
        &mut self,
        message: &mut StreamingMessage,
        delta: &str,
    ) -> Result<(), AgentError> {
        if self.is_interrupted() {
            return Err(AgentError::Interrupted);
        }
        if !delta.is_empty() {
            self.push_delta(message, delta).await;
        }
        Ok(())
    }

    async fn push_delta(&self, message: &mut StreamingMessage, delta: &str) {
        message.text.push_str(delta);
        self.send_delta(&message.id, SharedText::from(delta)).await;
    }

    async fn send_delta(&self, item_id: &str, delta: SharedText) {
        self.notify(ServerNotification::AgentMessageDelta(
            AgentMessageDeltaNotification {
                thread_id: self.thread.id.clone(),
                turn_id: self.turn_id.clone(),
                item_id: item_id.to_owned(),
                delta,
            },
        ))
        .await;
    }

    /// Completes `message` with the text streamed into it (`item/completed`). Works after an
    /// interruption too, so a message cut short still completes with what the client saw.
    pub async fn complete_agent_message(&mut self, message: StreamingMessage) {
        self.item_completed(ThreadItem::AgentMessage {
            id: message.id,
            text: message.text.into(),
        })
        .await;
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
        if self.is_interrupted() {
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

    /// Sends a server request to every connection subscribed to the thread (docs/protocol.md,
    /// "Shared server requests"): the first answer wins, a connection that subscribes later
    /// is sent it too, and with nobody subscribed it waits for someone to come back, at most
    /// the host's unanswered timeout (the turn keeps running meanwhile).
    async fn send_to_thread(
        &self,
        build: impl FnOnce(RequestId) -> tandem_protocol::ServerRequest,
    ) -> PendingServerRequest {
        let audience = self.thread.subscribers();
        self.outgoing
            .send_shared_request(&self.thread.id, audience, build)
            .await
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
        if let Some(Err(error)) = &answer
            && tandem_host::is_unanswered(error)
        {
            tracing::warn!(thread = %self.thread.id, turn = %self.turn_id, %request_id,
                "server request declined: no subscribed client answered it in time");
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
        if self.is_interrupted() {
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
            .send_to_thread(|id| ToolCall::into_request(id, params))
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
        if self.is_interrupted() {
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
            .send_to_thread(|id| ToolRequestUserInput::into_request(id, params))
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
}

fn failed_tool(message: String) -> ToolOutcome {
    ToolOutcome {
        content_items: vec![DynamicToolCallOutputContentItem::InputText {
            text: message.into(),
        }],
        success: false,
    }
}

fn elapsed_ms(started: Instant) -> i64 {
    i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX)
}
