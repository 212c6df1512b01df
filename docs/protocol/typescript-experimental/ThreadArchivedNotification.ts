// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `thread/archived` params: sent to every initialized connection.
 */
export type ThreadArchivedNotification = {
/**
 * The thread.
 */
threadId: string, };
