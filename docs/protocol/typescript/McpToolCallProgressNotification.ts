// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `item/mcpToolCall/progress`: a progress notification of an MCP server about a call in
 * flight.
 */
export type McpToolCallProgressNotification = {
/**
 * The thread.
 */
threadId: string,
/**
 * The turn.
 */
turnId: string,
/**
 * The `mcpToolCall` item.
 */
itemId: string,
/**
 * The server's message, or `progress/total` when it sent none.
 */
message: string, };
