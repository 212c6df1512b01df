// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { JsonValue } from "./JsonValue";

/**
 * `item/tool/call` params: call a dynamic tool the client provided.
 */
export type ToolCallParams = {
/**
 * The thread.
 */
threadId: string,
/**
 * The turn.
 */
turnId: string,
/**
 * The id of the call's `dynamicToolCall` item.
 */
callId: string,
/**
 * Tool namespace, if any.
 */
namespace: string | null,
/**
 * Tool name.
 */
tool: string,
/**
 * Arguments chosen by the model.
 */
arguments: JsonValue, };
