// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { JsonValue } from "./JsonValue";

/**
 * `mcpServer/elicitation/request` params: an MCP server asks the user something in the
 * course of a tool call of this thread.
 */
export type McpServerElicitationRequestParams = {
/**
 * The thread whose call the server is serving.
 */
threadId: string,
/**
 * The turn of that call.
 */
turnId: string | null,
/**
 * The `NAME` of `[mcp_servers.NAME]`.
 */
serverName: string, } & ({ "mode": "form",
/**
 * What the server says to the user.
 */
message: string,
/**
 * The form: a flat object schema of primitive properties (MCP's
 * `ElicitRequestFormParams.requestedSchema`).
 */
requestedSchema: JsonValue,
/**
 * The request's `_meta`.
 */
_meta?: JsonValue | null, } | { "mode": "url",
/**
 * What the server says to the user.
 */
message: string,
/**
 * The URL.
 */
url: string,
/**
 * The server's id of the elicitation.
 */
elicitationId: string,
/**
 * The request's `_meta`.
 */
_meta?: JsonValue | null, });
