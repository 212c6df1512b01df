// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `thread/name/updated` params.
 */
export type ThreadNameUpdatedNotification = {
/**
 * The thread.
 */
threadId: string,
/**
 * The new name.
 */
threadName: string | null, };
