// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `thread/unarchived` params: sent to every initialized connection.
 */
export type ThreadUnarchivedNotification = {
/**
 * The thread.
 */
threadId: string, };
