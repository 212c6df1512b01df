// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * A startup state (`status` of `mcpServer/startupStatus/updated`).
 */
export type McpServerStartupState = "starting" | "ready" | "failed" | "cancelled";
