// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { JsonValue } from "./JsonValue";
import type { McpServerElicitationAction } from "./McpServerElicitationAction";

/**
 * The client's result for `mcpServer/elicitation/request`.
 */
export type McpServerElicitationRequestResponse = {
/**
 * The answer.
 */
action: McpServerElicitationAction,
/**
 * The form's values, for `accept`.
 */
content?: JsonValue | null,
/**
 * The client's metadata.
 */
_meta?: JsonValue | null, };
