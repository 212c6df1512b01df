// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * Status of a `commandExecution` item.
 */
export type CommandExecutionStatus = "inProgress" | "completed" | "failed" | "declined";
