//! mcp30: samples of the MCP methods, the `mcpToolCall` item, its progress notification and
//! `mcpServer/elicitation/request`, with their literal JSON (the reference's shapes).

use std::collections::BTreeMap;

use serde_json::{Value, json};
use tandem_protocol::*;

use super::*;

/// One request per MCP client method, ids 60 to 63.
pub(crate) fn mcp_requests() -> Vec<ClientRequest> {
    use client_methods as m;
    vec![
        request::<m::McpServerStatusList>(60, mcp_status_list_params()),
        request::<m::McpServerToolCall>(61, mcp_tool_call_params()),
        request::<m::McpServerResourceRead>(62, mcp_resource_read_params()),
        request::<m::McpServerReload>(63, EmptyParams {}),
    ]
}

pub(crate) fn mcp_status_list_params() -> ListMcpServerStatusParams {
    ListMcpServerStatusParams {
        detail: Some(McpServerStatusDetail::ToolsAndAuthOnly),
        server_name: Some(s("docs")),
        ..ListMcpServerStatusParams::default()
    }
}

pub(crate) fn mcp_status_list_params_json() -> Value {
    json!({"detail": "toolsAndAuthOnly", "serverName": "docs"})
}

pub(crate) fn mcp_status_list_response() -> ListMcpServerStatusResponse {
    ListMcpServerStatusResponse {
        data: vec![McpServerStatus {
            name: s("docs"),
            runtime_status: Some(McpServerConnectionStatus::Connected),
            plugin_id: None,
            http_origin: Some(s("http://127.0.0.1:8080")),
            server_info: Some(json!({"name": "docs", "version": "1.0.0"})),
            server_capabilities: json!({"tools": {}}),
            tool_list_meta: Value::Null,
            tools: BTreeMap::from([(
                s("echo"),
                json!({"name": "echo", "inputSchema": {"type": "object"}}),
            )]),
            tools_error: None,
            resources: Vec::new(),
            resource_templates: Vec::new(),
            auth_status: McpAuthStatus::BearerToken,
        }],
        next_cursor: None,
    }
}

pub(crate) fn mcp_status_list_response_json() -> Value {
    json!({"data": [{"name": "docs", "runtimeStatus": "connected", "pluginId": null,
                     "httpOrigin": "http://127.0.0.1:8080",
                     "serverInfo": {"name": "docs", "version": "1.0.0"},
                     "serverCapabilities": {"tools": {}}, "toolListMeta": null,
                     "tools": {"echo": {"name": "echo", "inputSchema": {"type": "object"}}},
                     "toolsError": null, "resources": [], "resourceTemplates": [],
                     "authStatus": "bearerToken"}],
           "nextCursor": null})
}

pub(crate) fn mcp_tool_call_params() -> McpServerToolCallParams {
    McpServerToolCallParams {
        thread_id: s(THREAD_ID),
        server: s("docs"),
        tool: s("echo"),
        arguments: Some(json!({"text": "hi"})),
        meta: None,
    }
}

pub(crate) fn mcp_tool_call_params_json() -> Value {
    json!({"threadId": THREAD_ID, "server": "docs", "tool": "echo", "arguments": {"text": "hi"}})
}

pub(crate) fn mcp_tool_call_response() -> McpServerToolCallResponse {
    McpServerToolCallResponse {
        content: vec![json!({"type": "text", "text": "hi"})],
        structured_content: Some(json!({"echo": "hi"})),
        is_error: Some(false),
        meta: None,
    }
}

pub(crate) fn mcp_tool_call_response_json() -> Value {
    json!({"content": [{"type": "text", "text": "hi"}], "structuredContent": {"echo": "hi"},
           "isError": false})
}

pub(crate) fn mcp_resource_read_params() -> McpResourceReadParams {
    McpResourceReadParams {
        server: s("docs"),
        uri: s("test://greeting"),
        thread_id: Some(s(THREAD_ID)),
        connector_id: None,
        origin_call_id: None,
        target: None,
        meta: None,
    }
}

pub(crate) fn mcp_resource_read_params_json() -> Value {
    json!({"server": "docs", "uri": "test://greeting", "threadId": THREAD_ID})
}

pub(crate) fn mcp_resource_read_response() -> McpResourceReadResponse {
    McpResourceReadResponse {
        contents: vec![
            json!({"uri": "test://greeting", "mimeType": "text/plain", "text": "hello"}),
        ],
        origin_call_id: None,
    }
}

pub(crate) fn mcp_resource_read_response_json() -> Value {
    json!({"contents": [{"uri": "test://greeting", "mimeType": "text/plain", "text": "hello"}],
           "originCallId": null})
}

pub(crate) fn mcp_elicitation_params() -> McpServerElicitationRequestParams {
    McpServerElicitationRequestParams {
        thread_id: s(THREAD_ID),
        turn_id: Some(s(TURN_ID)),
        server_name: s("docs"),
        request: McpElicitationRequest::Form {
            message: s("Which branch?"),
            requested_schema: json!({"type": "object",
                                     "properties": {"branch": {"type": "string"}},
                                     "required": ["branch"]}),
            meta: None,
        },
    }
}

pub(crate) fn mcp_elicitation_params_json() -> Value {
    json!({"threadId": THREAD_ID, "turnId": TURN_ID, "serverName": "docs", "mode": "form",
           "message": "Which branch?",
           "requestedSchema": {"type": "object", "properties": {"branch": {"type": "string"}},
                               "required": ["branch"]}})
}

pub(crate) fn mcp_elicitation_response() -> McpServerElicitationRequestResponse {
    McpServerElicitationRequestResponse {
        action: McpServerElicitationAction::Accept,
        content: Some(json!({"branch": "main"})),
        meta: None,
    }
}

pub(crate) fn mcp_elicitation_response_json() -> Value {
    json!({"action": "accept", "content": {"branch": "main"}})
}

pub(crate) fn mcp_startup_status_updated() -> ServerNotification {
    ServerNotification::McpServerStartupStatusUpdated(McpServerStatusUpdatedNotification {
        thread_id: None,
        name: s("docs"),
        status: McpServerStartupState::Failed,
        error: Some(s("MCP server docs requires authentication")),
        failure_reason: Some(McpServerStartupFailureReason::ReauthenticationRequired),
    })
}

pub(crate) fn mcp_startup_status_updated_json() -> Value {
    json!({"method": "mcpServer/startupStatus/updated",
           "params": {"threadId": null, "name": "docs", "status": "failed",
                      "error": "MCP server docs requires authentication",
                      "failureReason": "reauthenticationRequired"}})
}

pub(crate) fn mcp_tool_call_progress() -> ServerNotification {
    ServerNotification::McpToolCallProgress(McpToolCallProgressNotification {
        thread_id: s(THREAD_ID),
        turn_id: s(TURN_ID),
        item_id: s("call-mcp-1"),
        message: s("step 1/3"),
    })
}

pub(crate) fn mcp_tool_call_progress_json() -> Value {
    json!({"method": "item/mcpToolCall/progress",
           "params": {"threadId": THREAD_ID, "turnId": TURN_ID, "itemId": "call-mcp-1",
                      "message": "step 1/3"}})
}

/// A finished `mcpToolCall` item.
pub(crate) fn mcp_tool_call_item() -> ThreadItem {
    ThreadItem::McpToolCall {
        id: s("call-mcp-1"),
        server: s("docs"),
        tool: s("echo"),
        status: McpToolCallStatus::Completed,
        arguments: json!({"text": "hi"}),
        result: Some(McpToolCallResult {
            content: vec![json!({"type": "text", "text": "hi"})],
            structured_content: Some(json!({"echo": "hi"})),
            meta: None,
        }),
        error: None,
        duration_ms: Some(12),
    }
}

pub(crate) fn mcp_tool_call_item_json() -> Value {
    json!({"type": "mcpToolCall", "id": "call-mcp-1", "server": "docs", "tool": "echo",
           "status": "completed", "arguments": {"text": "hi"},
           "result": {"content": [{"type": "text", "text": "hi"}],
                      "structuredContent": {"echo": "hi"}, "_meta": null},
           "error": null, "durationMs": 12})
}
