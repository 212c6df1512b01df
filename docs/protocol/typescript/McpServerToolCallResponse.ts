// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { JsonValue } from "./JsonValue";

/**
 * `mcpServer/tool/call` result: the server's `CallToolResult`, members it did not send
 * omitted (as the reference passes it on).
 */
export type McpServerToolCallResponse = {
/**
 * The content blocks (MCP `ContentBlock`s: text, image, audio, resource links...).
 */
content: Array<JsonValue>,
/**
 * Structured content, when the tool gives it.
 */
structuredContent?: JsonValue | null,
/**
 * Whether the tool reports an error.
 */
isError?: boolean | null,
/**
 * The result's `_meta`.
 */
_meta?: JsonValue | null, };
