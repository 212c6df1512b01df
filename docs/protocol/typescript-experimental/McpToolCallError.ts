// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * Why an `mcpToolCall` item failed.
 */
export type McpToolCallError = {
/**
 * What went wrong, as the model is told.
 */
message: string, };
