// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `turn/interrupt` params.
 */
export type TurnInterruptParams = {
/**
 * The thread.
 */
threadId: string,
/**
 * The turn the client believes is active.
 */
turnId: string, };
