// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { JsonValue } from "./JsonValue";

/**
 * `mcpServer/resource/read` params.
 */
export type McpResourceReadParams = {
/**
 * The `NAME` of `[mcp_servers.NAME]`.
 */
server: string,
/**
 * The resource.
 */
uri: string,
/**
 * Accepted and ignored (Tandem's servers are shared by every thread).
 */
threadId?: string | null,
/**
 * Accepted and ignored (hosted apps of the reference).
 */
connectorId?: string | null,
/**
 * Accepted and ignored (hosted apps of the reference).
 */
originCallId?: string | null,
/**
 * Accepted and ignored (hosted apps of the reference).
 */
target?: JsonValue | null,
/**
 * MCP request metadata (accepted, not forwarded).
 */
_meta?: JsonValue | null, };
