//! One running turn: the task that runs the [`crate::agent::Agent`], and [`TurnRun`], the
//! turn's [`TurnRuntime`] behind the [`TurnDriver`] through which the agent acts. The runtime
//! owns every ordering rule of docs/protocol.md section 6
//! for a turn (status before `turn/started`, flags around approvals and questions, items
//! around their server requests, `serverRequest/resolved` after the answer) and every
//! interruption rule (pending requests resolved first, then the `turn/interrupt` reply, then
//! `turn/completed`).
//!
//! Commands run through the [`ProcessManager`] of the processes issue (own process group,
//! kill on interrupt), with its output turned into `item/commandExecution/outputDelta`.
//!
//! Files: this one holds the runtime and its items, tools and questions; `commands` its
//! commands (approval, process, output); `file_change` its patches (`fileChange` items and the
//! turn's diff); `task` the task that runs a turn from start to `turn/completed`;
//! `compaction` the compaction turn of `thread/compact/start`; `reasoning` the plan and the
//! reasoning deltas; `mcp_tools` the MCP tools (the required servers' wait, `mcpToolCall`
//! items); `user_shell` the user's own command of `thread/shellCommand`.

mod commands;
mod compaction;
mod file_change;
// mcp30: MCP tools.
mod mcp_tools;
mod reasoning;
mod task;
// search29: `thread/shellCommand`.
mod user_shell;

pub(crate) use file_change::restore_files;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

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
use tokio_util::sync::CancellationToken;

use crate::agent::{
    AgentError, CommandOptions, CommandOutcome, PatchOutcome, ToolOutcome, TurnDriver, TurnRuntime,
};
use crate::process::ProcessManager;
use crate::store::{self, ItemTimes, StoreError, ThreadStore};
use crate::threads::{ActiveTurn, LoadedThread, now_millis};

/// An item started and not completed yet.
struct StartedItem {
    /// Its `item/started`'s `startedAtMs`, stored with it when it completes.
    at_ms: i64,
    /// Its index when it was stored as it started (commands and tool calls), so that its
    /// completion replaces it in place.
    stored_at: Option<usize>,
}

/// How threads run turns (and users' shell commands beside them): this module's functions.
pub(crate) const RUNNER: crate::threads::TurnRunner = crate::threads::TurnRunner {
    start: task::spawn,
    side_command: task::spawn_side_command,
};

/// Text of the error that resolves a server request cancelled by a turn transition.
const CANCELLED_BY_TURN: &str = "the turn that sent this request has ended";

/// The server's side of a running turn: what the agent's [`TurnDriver`] does through
/// [`TurnRuntime`]. Every method that waits returns [`AgentError::Interrupted`] as soon as the
/// turn is interrupted.
pub(crate) struct TurnRun {
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
    /// The items started and not completed yet, by id.
    started: HashMap<String, StartedItem>,
    /// The first store failure: the turn then stops and ends `failed` with this message, and
    /// no later item is reported as completed. (Locks here and below: a held item is written
    /// from `&self` paths too, see [`TurnRun::flush_held`].)
    store_failure: Mutex<Option<String>>,
    /// The ids of the items the store took: `turn/completed` carries these only (an item
    /// whose write was refused was shown started, never completed, and is not in the store).
    stored_items: Mutex<HashSet<String>>,
    /// Whether a completed item may wait in `held` (the agent waits only through its driver:
    /// [`crate::agent::Agent::waits_only_through_driver`]).
    hold_completed: bool,
    /// The last completed item, neither written nor reported yet: written and reported
    /// before anything else the turn sends or writes, or with the turn's end in one commit.
    held: Mutex<Option<(ThreadItem, ItemTimes)>>,
    /// The reasoning settings of the configuration when the turn started.
    reasoning: crate::agent::ReasoningSettings,
    /// The files this turn changed through patches, for `turn/diff/updated`.
    turn_diff: file_change::TurnDiff,
    /// undo29: what those files held before the turn, stored for `restoreFiles`.
    checkpoint: file_change::TurnCheckpoint,
    /// mcp30: the server's MCP servers, and the tools offered this turn (taken once the
    /// required servers are ready, before the agent runs).
    mcp: tandem_mcp::McpManager,
    mcp_tools: Vec<crate::agent::McpToolSpec>,
}

impl std::fmt::Debug for TurnRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnRun")
            .field("thread", &self.thread.id)
            .field("turn", &self.turn_id)
            .finish_non_exhaustive()
    }
}

impl TurnRun {
    /// The server's driver of `run`, taken back between agent calls.
    pub(crate) fn of(driver: &mut TurnDriver) -> &mut Self {
        driver
            .runtime_mut::<Self>()
            .expect("the server builds every driver over a TurnRun")
    }

    fn is_interrupted(&self) -> bool {
        self.active.cancel.is_cancelled()
    }

    async fn report_retry(&self, message: &str, additional_details: Option<String>) {
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

    async fn report_token_usage(&self, last: tandem_protocol::TokenUsageBreakdown) {
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

    /// Sends `note` to the thread's subscribers, after the held item, if any.
    async fn notify(&self, note: ServerNotification) {
        self.flush_held().await;
        self.thread.notify(&self.outgoing, note, None).await;
    }

    /// Stores `item` with `times` as item `index` of the turn. On failure the turn stops (it
    /// ends `failed` with the error) and `false` is returned: the caller must not report the
    /// item.
    async fn persist(&self, index: usize, item: &ThreadItem, times: ItemTimes) -> bool {
        if self.has_failed() {
            return false;
        }
        let stored = self
            .store
            .put_item(&self.thread.id, &self.turn_id, index, item, times)
            .await;
        match stored {
            Ok(()) => {
                lock(&self.stored_items).insert(item.id().to_owned());
                true
            }
            Err(error) => {
                self.fail_on_store(&error);
                false
            }
        }
    }

    /// Whether a write of this turn has failed (the turn is ending `failed`).
    fn has_failed(&self) -> bool {
        lock(&self.store_failure).is_some()
    }

    /// Records the store failure that ends this turn and stops the agent.
    fn fail_on_store(&self, error: &StoreError) {
        tracing::error!(thread = %self.thread.id, turn = %self.turn_id, %error, "turn cannot be stored");
        lock(&self.store_failure).get_or_insert_with(|| error.to_string());
        self.active.cancel.cancel();
    }

    /// The ids of the items the store took, for the turn's end.
    pub(crate) fn take_stored_items(&mut self) -> HashSet<String> {
        std::mem::take(&mut *lock(&self.stored_items))
    }

    /// The store failure that ended the turn, if any.
    pub(crate) fn take_store_failure(&mut self) -> Option<String> {
        lock(&self.store_failure).take()
    }

    /// The completed item still held, with its times (written with the turn's end, then
    /// reported with its completion time).
    pub(crate) fn take_held(&mut self) -> Option<(ThreadItem, ItemTimes)> {
        lock(&self.held).take()
    }

    /// Writes the held item, if any, then reports it (`item/completed`): called before
    /// anything else the turn sends or writes, and before the agent waits, so the client
    /// hears of everything in order and nothing completed waits on the agent.
    async fn flush_held(&self) {
        let Some((item, times)) = lock(&self.held).take() else {
            return;
        };
        let active = Arc::clone(&self.active);
        let mut next = active.next_item.lock().await;
        if !self.persist(*next, &item, times).await {
            return;
        }
        *next += 1;
        drop(next);
        self.report_completed(item, times).await;
    }

    /// Sends `item/completed` for the stored `item` (with the completion time stored with
    /// it) and puts it in the snapshot.
    async fn report_completed(&self, item: ThreadItem, times: ItemTimes) {
        // Straight to the thread: `notify` would flush the held item first, and this is it.
        self.thread
            .notify(
                &self.outgoing,
                ServerNotification::ItemCompleted(ItemCompletedNotification {
                    thread_id: self.thread.id.clone(),
                    turn_id: self.turn_id.clone(),
                    item: item.clone(),
                    completed_at_ms: times.completed_at_ms.unwrap_or_else(now_millis),
                }),
                None,
            )
            .await;
        self.set_snapshot_item(item);
    }

    async fn item_started(&mut self, item: &ThreadItem) {
        // An item held before this one is written first: the items keep their order.
        self.flush_held().await;
        let started_at_ms = now_millis();
        let mut stored_at = None;
        // A call is stored as soon as it starts, so that a crash while it runs leaves a
        // started item for recovery to close (and the model an explicit "interrupted" result)
        // rather than no trace of an action that may have taken effect.
        if matches!(
            item,
            ThreadItem::CommandExecution { .. }
                | ThreadItem::DynamicToolCall { .. }
                | ThreadItem::FileChange { .. }
                | ThreadItem::McpToolCall { .. }
        ) {
            // The index is taken and written under the turn's lock: a user's shell command
            // may store items beside the agent.
            let active = Arc::clone(&self.active);
            let mut next = active.next_item.lock().await;
            let index = *next;
            let times = ItemTimes {
                started_at_ms: Some(started_at_ms),
                completed_at_ms: None,
            };
            if !self.persist(index, item, times).await {
                return;
            }
            *next += 1;
            drop(next);
            stored_at = Some(index);
        }
        let started = StartedItem {
            at_ms: started_at_ms,
            stored_at,
        };
        self.started.insert(item.id().to_owned(), started);
        self.set_snapshot_item(item.clone());
        self.notify(ServerNotification::ItemStarted(ItemStartedNotification {
            thread_id: self.thread.id.clone(),
            turn_id: self.turn_id.clone(),
            item: item.clone(),
            started_at_ms,
        }))
        .await;
    }

    /// Stores `item` (written before it is reported: "completed" means durable), then sends
    /// `item/completed`. Not reported at all if it cannot be stored. With `hold_completed`
    /// an item not stored when it started is held instead (see [`TurnRun::flush_held`]):
    /// if it is the turn's last, it is written in the commit of the turn's end.
    async fn item_completed(&mut self, item: ThreadItem) {
        self.flush_held().await;
        let started = self.started.remove(item.id());
        let times = ItemTimes {
            started_at_ms: started.as_ref().map(|started| started.at_ms),
            completed_at_ms: Some(now_millis()),
        };
        let stored_at = started.and_then(|started| started.stored_at);
        if stored_at.is_none() && self.hold_completed && !self.has_failed() {
            *lock(&self.held) = Some((item, times));
            return;
        }
        let stored = match stored_at {
            Some(index) => self.persist(index, &item, times).await,
            None => {
                let active = Arc::clone(&self.active);
                let mut next = active.next_item.lock().await;
                let stored = self.persist(*next, &item, times).await;
                if stored {
                    *next += 1;
                }
                stored
            }
        };
        if !stored {
            return;
        }
        self.report_completed(item, times).await;
    }

    /// Reports the user's input, which `turn/start` stored as item 0 before it answered, at
    /// `input_at_ms` (the time stored with it).
    pub(crate) async fn stored_user_message(&mut self, item: ThreadItem, input_at_ms: i64) {
        {
            let mut next = self.active.next_item.lock().await;
            *next = (*next).max(1);
        }
        lock(&self.stored_items).insert(item.id().to_owned());
        self.notify(ServerNotification::ItemStarted(ItemStartedNotification {
            thread_id: self.thread.id.clone(),
            turn_id: self.turn_id.clone(),
            item: item.clone(),
            started_at_ms: input_at_ms,
        }))
        .await;
        self.notify(ServerNotification::ItemCompleted(
            ItemCompletedNotification {
                thread_id: self.thread.id.clone(),
                turn_id: self.turn_id.clone(),
                item: item.clone(),
                completed_at_ms: input_at_ms,
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

    pub(crate) async fn user_message(
        &mut self,
        content: Vec<UserInput>,
        client_id: Option<String>,
    ) {
        let item = ThreadItem::UserMessage {
            id: store::new_id(),
            content,
            client_id,
        };
        self.item_started(&item).await;
        self.item_completed(item).await;
    }

    async fn take_steered_input(&mut self) -> Vec<UserInput> {
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
        // search29: what users' shell commands beside the turn printed; their items are the
        // record, so no user message is made of it.
        input.extend(std::mem::take(
            &mut *self
                .active
                .injected
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        ));
        input
    }

    /// Sends a server request to every connection subscribed to the thread (docs/protocol.md,
    /// "Shared server requests"): the first answer wins, a connection that subscribes later
    /// is sent it too, and with nobody subscribed it waits for someone to come back, at most
    /// the host's unanswered timeout (the turn keeps running meanwhile).
    async fn send_to_thread(
        &self,
        build: impl FnOnce(RequestId) -> tandem_protocol::ServerRequest,
    ) -> PendingServerRequest {
        self.flush_held().await;
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
        self.flush_held().await;
        self.thread.set_status(&self.outgoing, status).await;
    }

    async fn call_tool(
        &mut self,
        namespace: Option<String>,
        tool: &str,
        arguments: Value,
    ) -> Result<ToolOutcome, AgentError> {
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

    async fn ask_user(&mut self, question: &str) -> Result<Vec<String>, AgentError> {
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

#[async_trait::async_trait]
impl TurnRuntime for TurnRun {
    fn thread_id(&self) -> &str {
        &self.thread.id
    }

    fn turn_id(&self) -> &str {
        &self.turn_id
    }

    fn cwd(&self) -> &str {
        &self.cwd
    }

    fn tools(&self) -> &[DynamicToolSpec] {
        &self.tools
    }

    fn mcp_tools(&self) -> &[crate::agent::McpToolSpec] {
        &self.mcp_tools
    }

    async fn call_mcp_tool(
        &mut self,
        server: &str,
        tool: &str,
        arguments: Value,
    ) -> Result<crate::agent::McpToolOutcome, AgentError> {
        self.call_mcp(server, tool, arguments).await
    }

    fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    fn snapshot(&self) -> MutexGuard<'_, tandem_protocol::Turn> {
        self.active
            .snapshot
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn interruption(&self) -> &CancellationToken {
        &self.active.cancel
    }

    fn new_item_id(&self) -> String {
        store::new_id()
    }

    async fn item_started(&mut self, item: &ThreadItem) {
        TurnRun::item_started(self, item).await;
    }

    async fn item_completed(&mut self, item: ThreadItem) {
        TurnRun::item_completed(self, item).await;
    }

    async fn agent_message_delta(&self, item_id: &str, delta: SharedText) {
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

    async fn report_retry(&self, message: &str, additional_details: Option<String>) {
        TurnRun::report_retry(self, message, additional_details).await;
    }

    async fn report_token_usage(&self, last: tandem_protocol::TokenUsageBreakdown) {
        TurnRun::report_token_usage(self, last).await;
    }

    async fn take_steered_input(&mut self) -> Vec<UserInput> {
        TurnRun::take_steered_input(self).await
    }

    async fn run_command(
        &mut self,
        command: &str,
        options: CommandOptions,
    ) -> Result<CommandOutcome, AgentError> {
        TurnRun::run_command(self, command, options).await
    }

    async fn call_tool(
        &mut self,
        namespace: Option<String>,
        tool: &str,
        arguments: Value,
    ) -> Result<ToolOutcome, AgentError> {
        TurnRun::call_tool(self, namespace, tool, arguments).await
    }

    async fn ask_user(&mut self, question: &str) -> Result<Vec<String>, AgentError> {
        TurnRun::ask_user(self, question).await
    }

    // reason29: plans and reasoning.
    fn reasoning_settings(&self) -> crate::agent::ReasoningSettings {
        self.reasoning.clone()
    }

    async fn plan_updated(
        &self,
        explanation: Option<String>,
        plan: Vec<tandem_protocol::TurnPlanStep>,
    ) {
        TurnRun::plan_updated(self, explanation, plan).await;
    }

    async fn reasoning_delta(&self, item_id: &str, delta: crate::agent::ReasoningDelta) {
        TurnRun::reasoning_delta(self, item_id, delta).await;
    }

    async fn patch_progress(&self, item_id: &str, partial_patch: &str) -> bool {
        TurnRun::patch_progress(self, item_id, partial_patch).await
    }

    async fn apply_patch(
        &mut self,
        item_id: Option<String>,
        patch: &str,
    ) -> Result<PatchOutcome, AgentError> {
        TurnRun::apply_patch(self, item_id, patch).await
    }

    async fn settle(&self) {
        self.flush_held().await;
    }
}

/// Locks `mutex`, whatever a panicking holder left in it (plain values, always consistent).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
