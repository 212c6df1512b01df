// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { JsonValue } from "./JsonValue";

/**
 * `mcpServer/tool/call` params: call a tool of a configured server directly.
 */
export type McpServerToolCallParams = {
/**
 * A thread the server knows (loaded or stored); the call is not part of its history.
 */
threadId: string,
/**
 * The `NAME` of `[mcp_servers.NAME]`.
 */
server: string,
/**
 * The tool, as the server names it.
 */
tool: string,
/**
 * Its arguments: an object, or omitted (`null` reads as omitted).
 */
arguments?: JsonValue | null,
/**
 * MCP request metadata (accepted, not forwarded).
 */
_meta?: JsonValue | null, };
