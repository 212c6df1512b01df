// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * A turn's status.
 */
export type TurnStatus = "inProgress" | "completed" | "interrupted" | "failed";
