// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * Who ran a `commandExecution` item's command (`source`; absent on input means `agent`).
 */
export type CommandExecutionSource = "agent" | "userShell";
