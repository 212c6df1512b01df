// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `thread/closed` params: the thread was unloaded or deleted.
 */
export type ThreadClosedNotification = {
/**
 * The thread.
 */
threadId: string, };
