// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `thread/deleted` params.
 */
export type ThreadDeletedNotification = {
/**
 * The thread.
 */
threadId: string, };
