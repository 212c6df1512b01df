// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { JsonValue } from "./JsonValue";
import type { McpAuthStatus } from "./McpAuthStatus";
import type { McpServerConnectionStatus } from "./McpServerConnectionStatus";

/**
 * One server of `mcpServerStatus/list`.
 */
export type McpServerStatus = {
/**
 * The `NAME` of `[mcp_servers.NAME]`.
 */
name: string,
/**
 * Its connection state.
 */
runtimeStatus: McpServerConnectionStatus | null,
/**
 * Always `null`: Tandem has no plugins.
 */
pluginId: string | null,
/**
 * The origin of an HTTP server's URL (no credentials, path or query); `null` for stdio.
 */
httpOrigin: string | null,
/**
 * What the server said about itself at the handshake (MCP's `Implementation`).
 */
serverInfo: JsonValue | null,
/**
 * The capabilities it advertised; `null` unless connected.
 */
serverCapabilities: JsonValue,
/**
 * Always `null`.
 */
toolListMeta: JsonValue,
/**
 * Its offered tools by name, each an MCP `Tool` as the server described it.
 */
tools: { [key in string]: JsonValue },
/**
 * Why its tools could not be listed (or why it failed).
 */
toolsError: string | null,
/**
 * Its resources (MCP `Resource`s).
 */
resources: Array<JsonValue>,
/**
 * Its resource templates (MCP `ResourceTemplate`s).
 */
resourceTemplates: Array<JsonValue>,
/**
 * How it authenticates.
 */
authStatus: McpAuthStatus, };
