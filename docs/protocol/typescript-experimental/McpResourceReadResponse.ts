// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { JsonValue } from "./JsonValue";

/**
 * `mcpServer/resource/read` result.
 */
export type McpResourceReadResponse = {
/**
 * The contents (MCP `ResourceContents`: `{uri, mimeType, text}` or `{uri, mimeType,
 * blob}`).
 */
contents: Array<JsonValue>,
/**
 * Always `null`.
 */
originCallId: string | null, };
