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
beforeTurnId: string,
/**
 * Tandem extension: `true` also puts back the files the dropped turns changed through
 * patches (docs/protocol.md, "Undoing file changes"); omitted or `false` touches no file,
 * as in the reference.
 */
restoreFiles?: boolean | null, };
