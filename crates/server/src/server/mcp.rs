//! The MCP methods of the protocol (issue 30), over the server's one [`McpManager`]:
//! `mcpServerStatus/list`, `mcpServer/tool/call`, `mcpServer/resource/read` and
//! `config/mcpServer/reload`, and the `mcpServer/startupStatus/updated` notifications. The
//! wire shapes are tandem-protocol's types (the reference app-server's, release 0.169.0);
//! this module maps tandem-mcp's states and results onto them. Every request is answered from
//! a task of its own, so a slow server never holds the processor task.

use std::sync::Arc;

use serde_json::Value;
use tandem_host::{OutgoingMessageSender, RequestContext};
use tandem_mcp::{
    McpError, McpManager, McpServerSnapshot, McpServerState, McpStartupState, McpStartupUpdate,
    McpTransportConfig, http_origin,
};
use tandem_protocol::{
    EmptyResponse, JSONRPCErrorError, ListMcpServerStatusParams, ListMcpServerStatusResponse,
    McpAuthStatus, McpResourceReadParams, McpResourceReadResponse, McpServerConnectionStatus,
    McpServerStartupFailureReason, McpServerStartupState, McpServerStatus, McpServerStatusDetail,
    McpServerStatusUpdatedNotification, McpServerToolCallParams, McpServerToolCallResponse,
    ServerNotification,
};
use tokio_util::sync::CancellationToken;

use crate::config::ServerConfig;
use crate::threads::ThreadService;

/// One MCP request of a client, decoded.
pub(crate) enum McpRequest {
    /// `mcpServerStatus/list`.
    StatusList(ListMcpServerStatusParams),
    /// `mcpServer/tool/call`.
    ToolCall(McpServerToolCallParams),
    /// `mcpServer/resource/read`.
    ResourceRead(McpResourceReadParams),
    /// `config/mcpServer/reload`.
    Reload,
}

/// The MCP servers of one Tandem server and the requests about them.
pub(crate) struct McpService {
    manager: McpManager,
    outgoing: OutgoingMessageSender,
    /// Stops the task that forwards startup updates.
    stop: CancellationToken,
}

impl McpService {
    /// Starts every enabled server of `config` in the background (needs a Tokio runtime) and
    /// forwards their startup updates to every connection.
    pub(crate) fn start(outgoing: OutgoingMessageSender, config: &ServerConfig) -> Self {
        let manager = McpManager::new(config.mcp_servers.clone());
        let stop = CancellationToken::new();
        if tokio::runtime::Handle::try_current().is_err() {
            tracing::warn!(
                "TandemServer built outside a Tokio runtime: MCP servers are not started"
            );
            return Self {
                manager,
                outgoing,
                stop,
            };
        }
        let mut updates = manager.subscribe();
        let forward_to = outgoing.clone();
        let stopped = stop.clone();
        tokio::spawn(async move {
            loop {
                let update = tokio::select! {
                    () = stopped.cancelled() => return,
                    update = updates.recv() => update,
                };
                match update {
                    Ok(update) => {
                        forward_to
                            .broadcast_notification(startup_notification(&update))
                            .await;
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(skipped)) => {
                        tracing::warn!(skipped, "MCP startup updates skipped (slow clients)");
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                }
            }
        });
        manager.start();
        Self {
            manager,
            outgoing,
            stop,
        }
    }

    /// The manager, for turns (their model tools).
    pub(crate) fn manager(&self) -> &McpManager {
        &self.manager
    }

    /// Answers `request` on a task of its own. `threads` knows which threads exist (a tool
    /// call names one); its effective configuration's file is what a reload reads again.
    pub(crate) fn handle(
        &self,
        request: McpRequest,
        context: RequestContext,
        threads: Arc<ThreadService>,
    ) {
        let manager = self.manager.clone();
        let outgoing = self.outgoing.clone();
        tokio::spawn(async move {
            match request {
                McpRequest::StatusList(params) => {
                    outgoing
                        .send_result(
                            context.id,
                            Ok::<_, JSONRPCErrorError>(status_list(&manager, &params)),
                        )
                        .await;
                }
                McpRequest::ToolCall(params) => {
                    let answer = tool_call(&manager, &threads, params).await;
                    outgoing.send_result(context.id, answer).await;
                }
                McpRequest::ResourceRead(params) => {
                    let answer = resource_read(&manager, &params).await;
                    outgoing.send_result(context.id, answer).await;
                }
                McpRequest::Reload => {
                    let answer = reload(&manager, &threads.config()).await;
                    outgoing.send_result(context.id, answer).await;
                }
            }
        });
    }

    /// Stops every server.
    pub(crate) fn shutdown(&self) {
        self.stop.cancel();
        self.manager.shutdown();
    }
}

impl Drop for McpService {
    /// A server dropped without its shutdown still stops its MCP servers and the forwarding
    /// task (which holds an outgoing sender).
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// `mcpServer/startupStatus/updated` of `update`. Tandem's connections serve every thread,
/// so `threadId` is always `null`.
fn startup_notification(update: &McpStartupUpdate) -> ServerNotification {
    ServerNotification::McpServerStartupStatusUpdated(McpServerStatusUpdatedNotification {
        thread_id: None,
        name: update.name.clone(),
        status: match update.state {
            McpStartupState::Starting => McpServerStartupState::Starting,
            McpStartupState::Ready => McpServerStartupState::Ready,
            McpStartupState::Failed => McpServerStartupState::Failed,
            McpStartupState::Cancelled => McpServerStartupState::Cancelled,
        },
        error: update.error.clone(),
        failure_reason: update
            .authentication_required
            .then_some(McpServerStartupFailureReason::ReauthenticationRequired),
    })
}

/// Every failure of an MCP call is -32603, as the reference answers (an unknown server
/// included); the message says what to do.
fn mcp_error(error: McpError) -> JSONRPCErrorError {
    JSONRPCErrorError::internal(error.to_string())
}

/// `mcpServerStatus/list`: every configured server (or the one `serverName` names), in one
/// page (`nextCursor: null`).
fn status_list(
    manager: &McpManager,
    params: &ListMcpServerStatusParams,
) -> ListMcpServerStatusResponse {
    let tools_only = params.detail == Some(McpServerStatusDetail::ToolsAndAuthOnly);
    let data = manager
        .statuses()
        .iter()
        .filter(|status| {
            params
                .server_name
                .as_deref()
                .is_none_or(|name| name == status.config.name)
        })
        .map(|status| server_status(status, tools_only))
        .collect();
    ListMcpServerStatusResponse {
        data,
        next_cursor: None,
    }
}

fn connection_status(state: McpServerState) -> McpServerConnectionStatus {
    match state {
        McpServerState::NotStarted => McpServerConnectionStatus::NotStarted,
        McpServerState::Starting => McpServerConnectionStatus::Starting,
        McpServerState::Connected => McpServerConnectionStatus::Connected,
        McpServerState::AuthenticationRequired => McpServerConnectionStatus::AuthenticationRequired,
        McpServerState::Failed => McpServerConnectionStatus::Failed,
        McpServerState::Cancelled => McpServerConnectionStatus::Cancelled,
        McpServerState::Disabled => McpServerConnectionStatus::Disabled,
    }
}

fn to_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or_default()
}

/// One `McpServerStatus`.
fn server_status(status: &McpServerSnapshot, tools_only: bool) -> McpServerStatus {
    let tools = status
        .tools
        .iter()
        .map(|tool| (tool.name.to_string(), to_json(tool)))
        .collect();
    let auth_status = match &status.config.transport {
        McpTransportConfig::StreamableHttp(http) if http.bearer_token_env_var.is_some() => {
            McpAuthStatus::BearerToken
        }
        _ => McpAuthStatus::Unsupported,
    };
    let (resources, resource_templates) = if tools_only {
        (Vec::new(), Vec::new())
    } else {
        (
            status.resources.iter().map(to_json).collect(),
            status.resource_templates.iter().map(to_json).collect(),
        )
    };
    McpServerStatus {
        name: status.config.name.clone(),
        runtime_status: Some(connection_status(status.state)),
        plugin_id: None,
        http_origin: http_origin(&status.config),
        server_info: status.server_info.as_ref().map(to_json),
        server_capabilities: status.capabilities.clone(),
        tool_list_meta: Value::Null,
        tools,
        tools_error: status.tools_error.clone().or_else(|| status.error.clone()),
        resources,
        resource_templates,
        auth_status,
    }
}

/// `mcpServer/tool/call`: `tool` of `server` with `arguments`, under the server's
/// `tool_timeout_sec`, for a thread this server knows.
async fn tool_call(
    manager: &McpManager,
    threads: &ThreadService,
    params: McpServerToolCallParams,
) -> Result<McpServerToolCallResponse, JSONRPCErrorError> {
    threads.ensure_known(&params.thread_id).await?;
    let arguments = match params.arguments {
        None | Some(Value::Null) => None,
        Some(Value::Object(arguments)) => Some(arguments),
        Some(_) => {
            return Err(JSONRPCErrorError::invalid_params(
                "arguments must be an object",
            ));
        }
    };
    let result = manager
        .call_tool(
            &params.server,
            &params.tool,
            arguments,
            None,
            CancellationToken::new(),
        )
        .await
        .map_err(mcp_error)?;
    Ok(McpServerToolCallResponse {
        content: result.content.iter().map(to_json).collect(),
        structured_content: result.structured_content,
        is_error: result.is_error,
        meta: result.meta.as_ref().map(to_json),
    })
}

/// `mcpServer/resource/read`: `uri` of `server`.
async fn resource_read(
    manager: &McpManager,
    params: &McpResourceReadParams,
) -> Result<McpResourceReadResponse, JSONRPCErrorError> {
    let result = manager
        .read_resource(&params.server, &params.uri)
        .await
        .map_err(mcp_error)?;
    Ok(McpResourceReadResponse {
        contents: result.contents.iter().map(to_json).collect(),
        origin_call_id: None,
    })
}

/// `config/mcpServer/reload`: reads the config file again and restarts the servers whose
/// table changed (others keep running).
async fn reload(
    manager: &McpManager,
    config: &ServerConfig,
) -> Result<EmptyResponse, JSONRPCErrorError> {
    let path = config.config_file();
    let current = config.clone();
    let reloaded = tokio::task::spawn_blocking(move || {
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(error) => return Err(format!("cannot read {}: {error}", path.display())),
        };
        current
            .reload_with_file_text(&text)
            .map(|(config, _)| config)
            .map_err(|error| error.to_string())
    })
    .await
    .map_err(|error| JSONRPCErrorError::internal(error.to_string()))?
    .map_err(JSONRPCErrorError::invalid_params)?;
    manager.reload(reloaded.mcp_servers);
    Ok(EmptyResponse {})
}
