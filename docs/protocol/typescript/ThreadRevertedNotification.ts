// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `thread/reverted` params: sent to the thread's subscribers after the `thread/revert` reply.
 */
export type ThreadRevertedNotification = {
/**
 * The thread.
 */
threadId: string, };
