// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * Status of an `mcpToolCall` item.
 */
export type McpToolCallStatus = "inProgress" | "completed" | "failed";
