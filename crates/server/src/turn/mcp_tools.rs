//! mcp30: a turn's MCP tools, over the server's one [`McpManager`]: before the agent runs,
//! the wait for the `required` servers (each bounded by its `startup_timeout_sec`; one that
//! failed fails the turn) and the tools of every server ready then, under the model's names;
//! during the turn, each call as an `mcpToolCall` item: `item/started`, the approval its
//! `approval_mode` asks for (the reference's `mcpServer/elicitation/request` with
//! `_meta.codex_approval_kind = "mcp_tool_call"`, as the reference 0.169.0 sends it),
//! `item/mcpToolCall/progress` for each progress notification of the server, then
//! `item/completed` with the result or the error. `turn/interrupt` cancels the call (the
//! server is sent `notifications/cancelled`); `tool_timeout_sec` bounds it. An elicitation
//! request the server makes during the call (tandem-mcp attributes it to the one call in
//! flight on its connection) reaches the thread's clients as `mcpServer/elicitation/request`
//! with the call's thread and turn ([`TurnElicitor`]), and their answer goes back.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};
use tandem_host::OutgoingMessageSender;
use tandem_mcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use tandem_mcp::{
    McpElicitor, McpError, McpManager, McpProgress, PROGRESS_QUEUE, ToolApprovalMode,
};
use tandem_protocol::server_methods::McpServerElicitationRequest;
use tandem_protocol::{
    ApprovalPolicy, McpElicitationRequest, McpServerElicitationAction,
    McpServerElicitationRequestParams, McpServerElicitationRequestResponse, McpToolCallError,
    McpToolCallProgressNotification, McpToolCallResult, McpToolCallStatus, RequestMethod,
    ServerNotification, ServerRequestResolvedNotification, ThreadActiveFlag, ThreadItem,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{TurnRun, elapsed_ms};
use crate::agent::{AgentError, McpToolOutcome, McpToolSpec, mcp_result_text};
use crate::store;
use crate::threads::LoadedThread;

/// What an item and the model are told of a declined approval, as the reference says it.
const REJECTED: &str = "user rejected MCP tool call";
/// What they are told of a cancelled approval, as the reference says it.
const CANCELLED: &str = "user cancelled MCP tool call";
/// What they are told when the approval policy refuses to ask, as the reference says it.
const POLICY_NEVER: &str = "MCP tool call requires approval, but approval policy is never";
/// The error of a call that `turn/interrupt` cancelled.
const INTERRUPTED: &str = "the turn was interrupted; the call was cancelled";

/// The model's view of the tools `manager` offers now.
pub(crate) fn offered_tools(manager: &McpManager) -> Vec<McpToolSpec> {
    manager
        .ready_tools()
        .into_iter()
        .map(|tool| McpToolSpec {
            model_name: tool.model_name,
            server: tool.server,
            tool: tool.tool,
            description: tool.description.unwrap_or_default(),
            input_schema: tool.input_schema,
        })
        .collect()
}

impl TurnRun {
    /// Waits for the `required` MCP servers to finish starting (a turn/interrupt ends the
    /// wait), then takes the tools of every server ready: what the model is offered for the
    /// whole turn. A required server that is not ready fails the turn, naming it.
    pub(super) async fn prepare_mcp(&mut self) -> Result<(), AgentError> {
        let waited = tokio::select! {
            waited = self.mcp.wait_required() => waited,
            () = self.active.cancel.cancelled() => return Err(AgentError::Interrupted),
        };
        waited.map_err(|error| {
            AgentError::Failed(format!("a required MCP server is not ready: {error}"))
        })?;
        self.mcp_tools = offered_tools(&self.mcp);
        Ok(())
    }

    /// Calls `tool` of `server` as an `mcpToolCall` item; see the module's docs.
    pub(super) async fn call_mcp(
        &mut self,
        server: &str,
        tool: &str,
        arguments: Value,
    ) -> Result<McpToolOutcome, AgentError> {
        if !self
            .mcp_tools
            .iter()
            .any(|spec| spec.server == server && spec.tool == tool)
        {
            return Ok(McpToolOutcome::failed(format!(
                "tool {tool} of MCP server {server} is not offered this turn: the server was \
                 not ready when the turn started, or its configuration hides the tool (see \
                 mcpServerStatus/list)"
            )));
        }
        let id = store::new_id();
        let started = Instant::now();
        let item = |status, result, error: Option<String>, duration_ms| ThreadItem::McpToolCall {
            id: id.clone(),
            server: server.to_owned(),
            tool: tool.to_owned(),
            status,
            arguments: arguments.clone(),
            result,
            error: error.map(|message| McpToolCallError { message }),
            duration_ms,
        };
        self.item_started(&item(McpToolCallStatus::InProgress, None, None, None))
            .await;
        if self.mcp.approval_mode(server, tool) == ToolApprovalMode::Prompt {
            let refusal = match self.approve_mcp(server, tool, &arguments).await {
                Ok(refusal) => refusal,
                Err(interrupted) => {
                    let done = item(
                        McpToolCallStatus::Failed,
                        None,
                        Some(INTERRUPTED.to_owned()),
                        Some(elapsed_ms(started)),
                    );
                    self.item_completed(done).await;
                    return Err(interrupted);
                }
            };
            if let Some(refusal) = refusal {
                let done = item(
                    McpToolCallStatus::Failed,
                    None,
                    Some(refusal.to_owned()),
                    Some(elapsed_ms(started)),
                );
                self.item_completed(done).await;
                return Ok(McpToolOutcome::failed(refusal));
            }
        }
        let object = match &arguments {
            Value::Object(object) => Some(object.clone()),
            Value::Null => None,
            _ => {
                let error = "the arguments must be a JSON object".to_owned();
                let done = item(
                    McpToolCallStatus::Failed,
                    None,
                    Some(error.clone()),
                    Some(elapsed_ms(started)),
                );
                self.item_completed(done).await;
                return Ok(McpToolOutcome::failed(error));
            }
        };
        let (progress_tx, mut progress) = mpsc::channel(PROGRESS_QUEUE);
        let manager = self.mcp.clone();
        let elicitor = Arc::new(TurnElicitor {
            thread: Arc::clone(&self.thread),
            outgoing: self.outgoing.clone(),
            turn_id: self.turn_id.clone(),
            cancel: self.active.cancel.clone(),
        });
        let call = manager.call_tool_for(
            server,
            tool,
            object,
            Some(progress_tx),
            self.active.cancel.clone(),
            Some(elicitor),
        );
        tokio::pin!(call);
        let answer = loop {
            tokio::select! {
                answer = &mut call => break answer,
                Some(update) = progress.recv() => self.progress(&id, update).await,
            }
        };
        // Progress sent before the answer still precedes the item's completion.
        while let Ok(update) = progress.try_recv() {
            self.progress(&id, update).await;
        }
        let duration = Some(elapsed_ms(started));
        match answer {
            Ok(result) => {
                let content: Vec<Value> = result
                    .content
                    .iter()
                    .map(|block| serde_json::to_value(block).unwrap_or_default())
                    .collect();
                let outcome = McpToolOutcome {
                    success: result.is_error != Some(true),
                    text: mcp_result_text(&content, result.structured_content.as_ref()),
                };
                let result = McpToolCallResult {
                    content,
                    structured_content: result.structured_content,
                    meta: result
                        .meta
                        .as_ref()
                        .map(|meta| serde_json::to_value(meta).unwrap_or_default()),
                };
                self.item_completed(item(
                    McpToolCallStatus::Completed,
                    Some(result),
                    None,
                    duration,
                ))
                .await;
                Ok(outcome)
            }
            Err(McpError::Cancelled { .. }) => {
                let done = item(
                    McpToolCallStatus::Failed,
                    None,
                    Some(INTERRUPTED.to_owned()),
                    duration,
                );
                self.item_completed(done).await;
                Err(AgentError::Interrupted)
            }
            Err(error) => {
                let message = error.to_string();
                let done = item(
                    McpToolCallStatus::Failed,
                    None,
                    Some(message.clone()),
                    duration,
                );
                self.item_completed(done).await;
                Ok(McpToolOutcome::failed(message))
            }
        }
    }

    /// `item/mcpToolCall/progress` of item `item_id`: the server's message, else
    /// `progress/total` (or the progress alone).
    async fn progress(&self, item_id: &str, update: McpProgress) {
        let message = update.message.unwrap_or_else(|| match update.total {
            Some(total) => format!("{}/{total}", update.progress),
            None => update.progress.to_string(),
        });
        self.notify(ServerNotification::McpToolCallProgress(
            McpToolCallProgressNotification {
                thread_id: self.thread.id.clone(),
                turn_id: self.turn_id.clone(),
                item_id: item_id.to_owned(),
                message,
            },
        ))
        .await;
    }

    /// Asks the thread's clients whether `tool` of `server` may run, as the reference asks:
    /// `mcpServer/elicitation/request`, a form with no fields whose `_meta` says it is an MCP
    /// tool call's approval. `None` when accepted, else why not.
    async fn approve_mcp(
        &self,
        server: &str,
        tool: &str,
        arguments: &Value,
    ) -> Result<Option<&'static str>, AgentError> {
        if self.approval_policy == ApprovalPolicy::Never {
            return Ok(Some(POLICY_NEVER));
        }
        let description = self
            .mcp_tools
            .iter()
            .find(|spec| spec.server == server && spec.tool == tool)
            .map(|spec| spec.description.clone());
        let display: Vec<Value> = arguments
            .as_object()
            .into_iter()
            .flatten()
            .map(|(name, value)| json!({"name": name, "value": value, "display_name": name}))
            .collect();
        let params = McpServerElicitationRequestParams {
            thread_id: self.thread.id.clone(),
            turn_id: Some(self.turn_id.clone()),
            server_name: server.to_owned(),
            request: McpElicitationRequest::Form {
                message: format!("Allow the {server} MCP server to run tool \"{tool}\"?"),
                requested_schema: json!({"type": "object", "properties": {}}),
                meta: Some(json!({
                    "codex_approval_kind": "mcp_tool_call",
                    "tool_name": tool,
                    "tool_description": description,
                    "tool_params": arguments,
                    "tool_params_display": display,
                })),
            },
        };
        self.set_flag(ThreadActiveFlag::WaitingOnApproval, true)
            .await;
        let pending = self
            .send_to_thread(|id| McpServerElicitationRequest::into_request(id, params))
            .await;
        let answer = self.await_answer(pending).await;
        self.set_flag(ThreadActiveFlag::WaitingOnApproval, false)
            .await;
        Ok(match answer? {
            Ok(value) => match serde_json::from_value::<McpServerElicitationRequestResponse>(value)
            {
                Ok(response) => match response.action {
                    McpServerElicitationAction::Accept => None,
                    McpServerElicitationAction::Cancel => Some(CANCELLED),
                    McpServerElicitationAction::Decline => Some(REJECTED),
                },
                Err(error) => {
                    tracing::debug!(%error, "undecodable MCP approval answer; declined");
                    Some(REJECTED)
                }
            },
            Err(_) => Some(REJECTED),
        })
    }
}

/// Answers the elicitation requests attributed to one call of a turn: asks the thread's
/// clients (`mcpServer/elicitation/request` with the call's thread and turn, the first answer
/// wins, `serverRequest/resolved` after it) and hands their answer to the MCP server. No
/// answer (the turn interrupted, nobody subscribed in time, an answer that does not decode)
/// declines.
struct TurnElicitor {
    thread: Arc<LoadedThread>,
    outgoing: OutgoingMessageSender,
    turn_id: String,
    cancel: CancellationToken,
}

impl McpElicitor for TurnElicitor {
    fn elicit(
        &self,
        server: &str,
        request: ElicitRequestParams,
    ) -> Pin<Box<dyn Future<Output = ElicitResult> + Send + 'static>> {
        let thread = Arc::clone(&self.thread);
        let outgoing = self.outgoing.clone();
        let turn_id = self.turn_id.clone();
        let cancel = self.cancel.clone();
        let server = server.to_owned();
        Box::pin(async move {
            let decline = ElicitResult::new(ElicitationAction::Decline);
            let request = match serde_json::to_value(&request)
                .and_then(serde_json::from_value::<McpElicitationRequest>)
            {
                Ok(request) => request,
                Err(error) => {
                    tracing::warn!(%server, %error, "MCP elicitation request of an unknown shape; declined");
                    return decline;
                }
            };
            let params = McpServerElicitationRequestParams {
                thread_id: thread.id.clone(),
                turn_id: Some(turn_id.clone()),
                server_name: server,
                request,
            };
            let pending = outgoing
                .send_shared_request(&thread.id, thread.subscribers(), |id| {
                    McpServerElicitationRequest::into_request(id, params)
                })
                .await;
            let request_id = pending.id().clone();
            let answer = tokio::select! {
                answer = pending => Some(answer),
                () = cancel.cancelled() => None,
            };
            if answer.is_none() {
                outgoing.cancel_request(
                    &request_id,
                    tandem_protocol::JSONRPCErrorError::internal(INTERRUPTED),
                );
            }
            thread
                .notify(
                    &outgoing,
                    ServerNotification::ServerRequestResolved(ServerRequestResolvedNotification {
                        thread_id: thread.id.clone(),
                        turn_id,
                        request_id,
                    }),
                    None,
                )
                .await;
            let Some(Ok(value)) = answer else {
                return decline;
            };
            match serde_json::from_value::<McpServerElicitationRequestResponse>(value) {
                Ok(response) => {
                    let mut result = ElicitResult::new(match response.action {
                        McpServerElicitationAction::Accept => ElicitationAction::Accept,
                        McpServerElicitationAction::Decline => ElicitationAction::Decline,
                        McpServerElicitationAction::Cancel => ElicitationAction::Cancel,
                    });
                    result.content = response.content;
                    result
                }
                Err(error) => {
                    tracing::debug!(%error, "undecodable elicitation answer; declined");
                    decline
                }
            }
        })
    }
}
