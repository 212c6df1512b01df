// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `turn/diff/updated` params: the unified diff of every file the turn changed through
 * patches, from each file's content when the turn first touched it to now.
 */
export type TurnDiffUpdatedNotification = {
/**
 * The thread.
 */
threadId: string,
/**
 * The turn.
 */
turnId: string,
/**
 * The whole turn's diff (git-style headers, renames and deletions included).
 */
diff: string, };
