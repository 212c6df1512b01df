// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * How much `mcpServerStatus/list` reports of each server.
 */
export type McpServerStatusDetail = "full" | "toolsAndAuthOnly";
