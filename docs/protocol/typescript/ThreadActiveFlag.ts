// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * A flag of an `active` thread: what the active turn waits for.
 */
export type ThreadActiveFlag = "waitingOnApproval" | "waitingOnUserInput";
