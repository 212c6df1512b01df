// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { JsonValue } from "./JsonValue";

/**
 * What an `mcpToolCall` item's server answered; `structuredContent` and `_meta` are always
 * present (`null` when the server sent none), as the reference sends them.
 */
export type McpToolCallResult = {
/**
 * The content blocks, as the server sent them.
 */
content: Array<JsonValue>,
/**
 * Structured content, when the tool gives it.
 */
structuredContent: JsonValue | null,
/**
 * The result's `_meta`.
 */
_meta: JsonValue | null, };
