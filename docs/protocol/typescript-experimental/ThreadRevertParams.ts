// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `thread/revert` params.
 */
export type ThreadRevertParams = {
/**
 * The thread.
 */
threadId: string,
/**
 * The first turn to drop: it and every later turn are removed from the stored history.
 */
beforeTurnId: string, };
