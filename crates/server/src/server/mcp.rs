//! The MCP methods of the protocol (issue 30), over the server's one [`McpManager`]:
//! `mcpServerStatus/list`, `mcpServer/tool/call`, `mcpServer/resource/read` and
//! `config/mcpServer/reload`, and the `mcpServer/startupStatus/updated` notifications, each
//! in the reference app-server's shape (its JSON schema, release 0.169.0; compared with the
//! running reference against the same test server).
//!
//! The messages are carried as the protocol's `Custom` requests and notifications, built here
//! as JSON: the server claims the four methods ([`METHODS`]). Every request is answered from
//! a task of its own, so a slow server never holds the processor task.

use std::sync::Arc;

use serde_json::{Value, json};
use tandem_host::{OutgoingMessageSender, RequestContext};
use tandem_mcp::{
    McpError, McpManager, McpServerSnapshot, McpStartupUpdate, McpTransportConfig, http_origin,
};
use tandem_protocol::{JSONRPCErrorError, ServerNotification};
use tokio_util::sync::CancellationToken;

use crate::config::ServerConfig;

/// The client methods served here.
pub const METHODS: &[&str] = &[
    "mcpServerStatus/list",
    "mcpServer/tool/call",
    "mcpServer/resource/read",
    "config/mcpServer/reload",
];

/// The notification of a server's startup state.
pub const STARTUP_STATUS_UPDATED: &str = "mcpServer/startupStatus/updated";

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

    /// Answers `method` (one of [`METHODS`]) with `params`, on a task of its own. `config`
    /// is the effective configuration, whose file a reload reads again.
    pub(crate) fn handle(
        &self,
        method: &str,
        params: Value,
        context: RequestContext,
        config: Arc<ServerConfig>,
    ) {
        let manager = self.manager.clone();
        let outgoing = self.outgoing.clone();
        let method = method.to_owned();
        tokio::spawn(async move {
            let answer = match method.as_str() {
                "mcpServerStatus/list" => status_list(&manager, &params),
                "mcpServer/tool/call" => tool_call(&manager, params).await,
                "mcpServer/resource/read" => resource_read(&manager, &params).await,
                _ => reload(&manager, &config).await,
            };
            outgoing.send_result(context.id, answer).await;
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
    ServerNotification::Custom {
        method: STARTUP_STATUS_UPDATED.to_owned(),
        params: json!({
            "threadId": null,
            "name": update.name,
            "status": update.state.as_str(),
            "error": update.error,
            "failureReason": update
                .authentication_required
                .then_some("reauthenticationRequired"),
        }),
    }
}

fn string_param<'a>(params: &'a Value, key: &str) -> Result<&'a str, JSONRPCErrorError> {
    params
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| JSONRPCErrorError::invalid_params(format!("{key} must be a string")))
}

fn mcp_error(error: McpError) -> JSONRPCErrorError {
    match error {
        McpError::UnknownServer(_) => JSONRPCErrorError::invalid_params(error.to_string()),
        other => JSONRPCErrorError::internal(other.to_string()),
    }
}

/// `mcpServerStatus/list`: every configured server (or the one `serverName` names), in one
/// page (`nextCursor: null`).
fn status_list(manager: &McpManager, params: &Value) -> Result<Value, JSONRPCErrorError> {
    let only = params.get("serverName").and_then(Value::as_str);
    let tools_only = params.get("detail").and_then(Value::as_str) == Some("toolsAndAuthOnly");
    let data: Vec<Value> = manager
        .statuses()
        .iter()
        .filter(|status| only.is_none_or(|name| name == status.config.name))
        .map(|status| server_status(status, tools_only))
        .collect();
    Ok(json!({ "data": data, "nextCursor": null }))
}

/// One `McpServerStatus`.
fn server_status(status: &McpServerSnapshot, tools_only: bool) -> Value {
    let tools: serde_json::Map<String, Value> = status
        .tools
        .iter()
        .map(|tool| {
            (
                tool.name.to_string(),
                serde_json::to_value(tool).unwrap_or_default(),
            )
        })
        .collect();
    let auth_status = match &status.config.transport {
        McpTransportConfig::StreamableHttp(http) if http.bearer_token_env_var.is_some() => {
            "bearerToken"
        }
        _ => "unsupported",
    };
    let (resources, templates) = if tools_only {
        (Value::Array(Vec::new()), Value::Array(Vec::new()))
    } else {
        (
            serde_json::to_value(&status.resources).unwrap_or_default(),
            serde_json::to_value(&status.resource_templates).unwrap_or_default(),
        )
    };
    json!({
        "name": status.config.name,
        "runtimeStatus": status.state.as_str(),
        "pluginId": null,
        "httpOrigin": http_origin(&status.config),
        "serverInfo": status.server_info,
        "serverCapabilities": if status.capabilities.is_null() { Value::Null } else { status.capabilities.clone() },
        "toolListMeta": null,
        "tools": tools,
        "toolsError": status.tools_error.clone().or_else(|| status.error.clone()),
        "resources": resources,
        "resourceTemplates": templates,
        "authStatus": auth_status,
    })
}

/// `mcpServer/tool/call`: `tool` of `server` with `arguments`, under the server's
/// `tool_timeout_sec`.
async fn tool_call(manager: &McpManager, params: Value) -> Result<Value, JSONRPCErrorError> {
    string_param(&params, "threadId")?;
    let server = string_param(&params, "server")?;
    let tool = string_param(&params, "tool")?;
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => None,
        Some(Value::Object(arguments)) => Some(arguments.clone()),
        Some(_) => {
            return Err(JSONRPCErrorError::invalid_params(
                "arguments must be an object",
            ));
        }
    };
    let result = manager
        .call_tool(server, tool, arguments, None, CancellationToken::new())
        .await
        .map_err(mcp_error)?;
    Ok(json!({
        "content": result.content,
        "structuredContent": result.structured_content,
        "isError": result.is_error,
        "_meta": result.meta,
    }))
}

/// `mcpServer/resource/read`: `uri` of `server`.
async fn resource_read(manager: &McpManager, params: &Value) -> Result<Value, JSONRPCErrorError> {
    let server = string_param(params, "server")?;
    let uri = string_param(params, "uri")?;
    let result = manager
        .read_resource(server, uri)
        .await
        .map_err(mcp_error)?;
    Ok(json!({ "contents": result.contents, "originCallId": null }))
}

/// `config/mcpServer/reload`: reads the config file again and restarts the servers whose
/// table changed (others keep running).
async fn reload(manager: &McpManager, config: &ServerConfig) -> Result<Value, JSONRPCErrorError> {
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
    Ok(json!({}))
}
