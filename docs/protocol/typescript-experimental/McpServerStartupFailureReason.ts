// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * Why a start failed, when a client can do something about it.
 */
export type McpServerStartupFailureReason = "reauthenticationRequired";
