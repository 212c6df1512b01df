// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `thread/rollback` params (the name before upstream 0.171; `thread/revert` replaces it).
 */
export type ThreadRollbackParams = {
/**
 * The thread.
 */
threadId: string,
/**
 * How many turns to drop from the end (at least 1).
 */
numTurns: number,
/**
 * Tandem extension: as `thread/revert`'s `restoreFiles`.
 */
restoreFiles?: boolean | null, };
