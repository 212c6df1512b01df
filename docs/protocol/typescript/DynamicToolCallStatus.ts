// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * Status of a `dynamicToolCall` item.
 */
export type DynamicToolCallStatus = "inProgress" | "completed" | "failed";
