//! The turn's side of an agent: the [`TurnDriver`] an [`Agent`](crate::Agent) acts through,
//! over the narrow [`TurnRuntime`] interface that whoever runs turns implements (tandem-server's
//! turn task).
//!
//! The split keeps the agent crate free of the store and of the turn's runtime: the driver
//! holds what is the same for every runtime (an agent message streamed as one item, the
//! interruption checks, sleeping), and the runtime does what needs a server (report and store
//! items, run commands, send server requests, record steered input) and owns every ordering
//! rule of docs/protocol.md section 6.

use std::any::Any;
use std::sync::MutexGuard;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use tandem_protocol::{
    DynamicToolCallOutputContentItem, DynamicToolSpec, SharedText, ThreadItem, TokenUsageBreakdown,
    Turn, TurnPlanStep, UserInput,
};
use tokio_util::sync::CancellationToken;

use crate::AgentError;
use crate::reasoning::{ReasoningDelta, ReasoningSettings};

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

/// What became of a patch the agent asked to apply ([`TurnDriver::apply_patch`]). Each carries
/// the text the model is told: every file and what happened to it, or what to correct.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchOutcome {
    /// Every change was written.
    Applied {
        /// What was done, file by file.
        report: String,
    },
    /// The user declined it, or the approval policy refused it; nothing was written.
    Declined {
        /// Why, naming the files that needed approval.
        report: String,
    },
    /// It did not parse, did not apply, or could not be written; nothing was written.
    Failed {
        /// What went wrong and where (the line, or the file and hunk).
        report: String,
    },
}

impl PatchOutcome {
    /// The text the model is told.
    pub fn report(&self) -> &str {
        match self {
            Self::Applied { report } | Self::Declined { report } | Self::Failed { report } => {
                report
            }
        }
    }
}

/// The items of a running turn, as [`TurnDriver::items`] returns them: a guard on the turn's
/// snapshot that reads as a slice.
pub struct TurnItems<'a>(MutexGuard<'a, Turn>);

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

/// What a turn's runtime does for its agent: the narrow interface between an agent and the
/// server that runs its turn. Implemented by tandem-server's turn task; an embedder never
/// implements it to write an agent (that is [`Agent`](crate::Agent)), only to run agents
/// outside tandem-server.
///
/// Every method that reports something to the clients keeps the protocol's order itself (an
/// item is stored before its `item/completed`, flags go around questions, a server request is
/// resolved before the call returns); the methods that wait return
/// [`AgentError::Interrupted`] once [`TurnRuntime::interruption`] is cancelled.
#[async_trait]
pub trait TurnRuntime: Any + Send + Sync {
    /// The thread's id.
    fn thread_id(&self) -> &str;
    /// The turn's id.
    fn turn_id(&self) -> &str;
    /// The thread's working directory.
    fn cwd(&self) -> &str;
    /// The dynamic tools the client registered at `thread/start`.
    fn tools(&self) -> &[DynamicToolSpec];
    /// The model this turn uses, if any names one.
    fn model(&self) -> Option<&str>;
    /// The running turn's snapshot (the items reported so far). Held briefly, never across
    /// an `await`.
    fn snapshot(&self) -> MutexGuard<'_, Turn>;
    /// Cancelled when the turn is interrupted (or can no longer be stored).
    fn interruption(&self) -> &CancellationToken;
    /// A fresh item id.
    fn new_item_id(&self) -> String;
    /// Reports `item` started (`item/started`); a call is also stored as started.
    async fn item_started(&mut self, item: &ThreadItem);
    /// Stores `item` and reports it completed (`item/completed`); not reported if it cannot
    /// be stored (the turn then fails).
    async fn item_completed(&mut self, item: ThreadItem);
    /// Sends `delta` of agent message `item_id` (`item/agentMessage/delta`).
    async fn agent_message_delta(&self, item_id: &str, delta: SharedText);
    /// Announces a failure that will be retried (`error` with `willRetry: true`).
    async fn report_retry(&self, message: &str, additional_details: Option<String>);
    /// Adds one request's token usage to the thread's total (`thread/tokenUsage/updated`).
    async fn report_token_usage(&self, last: TokenUsageBreakdown);
    /// Input steered into the turn since the last call, each recorded as a `userMessage`
    /// item.
    async fn take_steered_input(&mut self) -> Vec<UserInput>;
    /// Runs `command` (approval, sandbox, output deltas, a `commandExecution` item).
    async fn run_command(
        &mut self,
        command: &str,
        options: CommandOptions,
    ) -> Result<CommandOutcome, AgentError>;
    /// Calls the client's dynamic tool (`item/tool/call`, a `dynamicToolCall` item).
    async fn call_tool(
        &mut self,
        namespace: Option<String>,
        tool: &str,
        arguments: Value,
    ) -> Result<ToolOutcome, AgentError>;
    /// Asks the user (`item/tool/requestUserInput`) and returns their answers.
    async fn ask_user(&mut self, question: &str) -> Result<Vec<String>, AgentError>;

    // reason29: plans and reasoning (the driver's side is in `reasoning.rs`).
    /// The turn's reasoning settings; the default asks for nothing.
    fn reasoning_settings(&self) -> ReasoningSettings {
        ReasoningSettings::default()
    }
    /// Sends the turn's plan (`turn/plan/updated`).
    async fn plan_updated(&self, explanation: Option<String>, plan: Vec<TurnPlanStep>);
    /// Sends `delta` of reasoning item `item_id` (`item/reasoning/*`).
    async fn reasoning_delta(&self, item_id: &str, delta: ReasoningDelta);
    /// Shows a patch the model is still writing (`item/fileChange/patchUpdated` of the
    /// `fileChange` item `item_id` to come): the changes `partial_patch` names so far. Returns
    /// whether it named any (and so was sent).
    async fn patch_progress(&self, item_id: &str, partial_patch: &str) -> bool;
    /// Applies `patch` (the `apply_patch` format) to the files (approval, a `fileChange`
    /// item, `turn/diff/updated`); the item's id is `item_id` when its progress was shown.
    async fn apply_patch(
        &mut self,
        item_id: Option<String>,
        patch: &str,
    ) -> Result<PatchOutcome, AgentError>;
    // mcp30: MCP tools (the driver's side is in `mcp.rs`).
    /// The MCP tools offered this turn; the default offers none.
    fn mcp_tools(&self) -> &[crate::McpToolSpec] {
        &[]
    }
    /// Calls `tool` of MCP server `server` (approval, an `mcpToolCall` item, its progress,
    /// the tool timeout); the default has no MCP server to call.
    async fn call_mcp_tool(
        &mut self,
        server: &str,
        tool: &str,
        arguments: Value,
    ) -> Result<crate::McpToolOutcome, AgentError> {
        let _ = arguments;
        Ok(crate::McpToolOutcome::failed(format!(
            "no MCP server runs here to call {server}/{tool}"
        )))
    }
    /// Writes and reports whatever the runtime holds back before the agent waits (see
    /// [`crate::Agent::waits_only_through_driver`]): a completed item whose write waits for
    /// the next call or the turn's end. The driver calls it before every wait of its own;
    /// the default holds nothing back.
    async fn settle(&self) {}
}

/// The agent's handle on its turn. Every method that waits returns
/// [`AgentError::Interrupted`] as soon as the turn is interrupted.
pub struct TurnDriver {
    runtime: Box<dyn TurnRuntime>,
}

impl std::fmt::Debug for TurnDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnDriver")
            .field("thread", &self.runtime.thread_id())
            .field("turn", &self.runtime.turn_id())
            .finish_non_exhaustive()
    }
}

impl TurnDriver {
    /// A driver over `runtime`, for the code that runs turns.
    pub fn new(runtime: impl TurnRuntime) -> Self {
        Self {
            runtime: Box::new(runtime),
        }
    }

    /// The runtime this driver was built over, when it is an `R`: how the code that runs
    /// turns reaches its own state between agent calls.
    pub fn runtime_mut<R: TurnRuntime>(&mut self) -> Option<&mut R> {
        let runtime: &mut dyn Any = self.runtime.as_mut();
        runtime.downcast_mut::<R>()
    }

    // reason29: how `reasoning.rs` reaches the runtime.
    pub(crate) fn runtime(&self) -> &dyn TurnRuntime {
        self.runtime.as_ref()
    }

    pub(crate) fn runtime_dyn_mut(&mut self) -> &mut dyn TurnRuntime {
        self.runtime.as_mut()
    }

    /// The thread's id.
    pub fn thread_id(&self) -> &str {
        self.runtime.thread_id()
    }

    /// The turn's id.
    pub fn turn_id(&self) -> &str {
        self.runtime.turn_id()
    }

    /// The thread's working directory.
    pub fn cwd(&self) -> &str {
        self.runtime.cwd()
    }

    /// The dynamic tools the client registered at `thread/start`.
    pub fn tools(&self) -> &[DynamicToolSpec] {
        self.runtime.tools()
    }

    /// Whether a dynamic tool named `name` was registered.
    pub fn has_tool(&self, name: &str) -> bool {
        self.tools().iter().any(|tool| tool.name == name)
    }

    /// The model this turn uses: `turn/start`'s, else the thread's, else the server's
    /// `model`; `None` when none of them names one.
    pub fn model(&self) -> Option<&str> {
        self.runtime.model()
    }

    /// The items of this turn completed so far, oldest first: the user's input (and input
    /// steered in since), messages, commands and tool calls.
    ///
    /// The items live once, in the running turn's snapshot that `thread/read` shows, so the
    /// returned guard holds its lock: use it and drop it, never across an `await`.
    pub fn items(&self) -> TurnItems<'_> {
        TurnItems(self.runtime.snapshot())
    }

    /// Whether the turn was interrupted. Agents that wait on something the driver does not
    /// know (a model's stream) check it between steps, or wait through
    /// [`TurnDriver::or_interrupted`].
    pub fn is_interrupted(&self) -> bool {
        self.runtime.interruption().is_cancelled()
    }

    /// Awaits `work` unless the turn is interrupted first, in which case `work` is dropped at
    /// once (an HTTP request in it is abandoned and its connection closed) and
    /// [`AgentError::Interrupted`] is returned.
    pub async fn or_interrupted<F: std::future::Future>(
        &self,
        work: F,
    ) -> Result<F::Output, AgentError> {
        // Nothing completed stays unreported while the agent waits.
        self.runtime.settle().await;
        tokio::select! {
            biased;
            () = self.runtime.interruption().cancelled() => Err(AgentError::Interrupted),
            output = work => Ok(output),
        }
    }

    /// Tells the turn's subscribers that something failed and will be retried: an `error`
    /// notification with `willRetry: true` (for example `Reconnecting... 2/5`). A failure that
    /// ends the turn is reported by returning [`AgentError::Failed`] instead.
    pub async fn report_retry(&self, message: &str, additional_details: Option<String>) {
        self.runtime.report_retry(message, additional_details).await;
    }

    /// Adds `last` (one model request's usage, as its stream reported it) to the thread's
    /// total and tells the subscribers: `thread/tokenUsage/updated`.
    pub async fn report_token_usage(&self, last: TokenUsageBreakdown) {
        self.runtime.report_token_usage(last).await;
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
            self.runtime.agent_message_delta(&message.id, delta).await;
        }
        self.runtime
            .item_completed(ThreadItem::AgentMessage {
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
            id: self.runtime.new_item_id(),
            text: String::new(),
        };
        self.runtime
            .item_started(&ThreadItem::AgentMessage {
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
        self.runtime
            .agent_message_delta(&message.id, SharedText::from(delta))
            .await;
    }

    /// Completes `message` with the text streamed into it (`item/completed`). Works after an
    /// interruption too, so a message cut short still completes with what the client saw.
    pub async fn complete_agent_message(&mut self, message: StreamingMessage) {
        self.runtime
            .item_completed(ThreadItem::AgentMessage {
                id: message.id,
                text: message.text.into(),
            })
            .await;
    }

    /// Waits for `duration`, or until the turn is interrupted.
    pub async fn sleep(&mut self, duration: Duration) -> Result<(), AgentError> {
        self.runtime.settle().await;
        tokio::select! {
            () = self.runtime.interruption().cancelled() => Err(AgentError::Interrupted),
            () = tokio::time::sleep(duration) => Ok(()),
        }
    }

    /// Input steered into the turn since the last call (each recorded as a `userMessage`
    /// item); empty when there is none.
    pub async fn take_steered_input(&mut self) -> Result<Vec<UserInput>, AgentError> {
        if self.is_interrupted() {
            return Err(AgentError::Interrupted);
        }
        Ok(self.runtime.take_steered_input().await)
    }

    /// Runs `command` with `sh -c`, in the thread's cwd unless `options` names another
    /// directory, asking for approval first unless the approval policy is `never`; streams its
    /// output as `item/commandExecution/outputDelta`. A timeout in `options` kills it (exit
    /// code 124). [`CommandOutcome::Declined`] when the user said no.
    pub async fn run_command(
        &mut self,
        command: &str,
        options: CommandOptions,
    ) -> Result<CommandOutcome, AgentError> {
        if self.is_interrupted() {
            return Err(AgentError::Interrupted);
        }
        self.runtime.run_command(command, options).await
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
        self.runtime.call_tool(namespace, tool, arguments).await
    }

    /// Asks the user `question` (`item/tool/requestUserInput`) and returns their answers.
    pub async fn ask_user(&mut self, question: &str) -> Result<Vec<String>, AgentError> {
        if self.is_interrupted() {
            return Err(AgentError::Interrupted);
        }
        self.runtime.ask_user(question).await
    }

    /// Applies `patch`, in the reference's `apply_patch` format (`*** Begin Patch` ...
    /// `*** End Patch`, paths relative to the thread's cwd), as one `fileChange` item: all of
    /// it or nothing, asking for approval first when it writes outside the sandbox's writable
    /// roots (refused under the `never` policy), then `turn/diff/updated`. A patch that does
    /// not parse or apply is a [`PatchOutcome::Failed`] whose report says what to correct.
    pub async fn apply_patch(&mut self, patch: &str) -> Result<PatchOutcome, AgentError> {
        if self.is_interrupted() {
            return Err(AgentError::Interrupted);
        }
        self.runtime.apply_patch(None, patch).await
    }

    /// A new item id, for an item the agent announces before it exists (a streamed patch's).
    pub(crate) fn new_item_id(&self) -> String {
        self.runtime.new_item_id()
    }

    /// Shows the client a patch the model is still writing, as the changes it names so far
    /// (`item/fileChange/patchUpdated` of item `item_id`, which
    /// [`TurnDriver::apply_streamed_patch`] then applies). Returns whether it named any change
    /// (and so was shown). Sends nothing once the turn is interrupted.
    pub async fn patch_progress(&self, item_id: &str, partial_patch: &str) -> bool {
        if self.is_interrupted() {
            return false;
        }
        self.runtime.patch_progress(item_id, partial_patch).await
    }

    /// [`TurnDriver::apply_patch`] for a patch whose progress was shown under `item_id`: the
    /// `fileChange` item keeps that id.
    pub async fn apply_streamed_patch(
        &mut self,
        item_id: String,
        patch: &str,
    ) -> Result<PatchOutcome, AgentError> {
        if self.is_interrupted() {
            return Err(AgentError::Interrupted);
        }
        self.runtime.apply_patch(Some(item_id), patch).await
    }
}
