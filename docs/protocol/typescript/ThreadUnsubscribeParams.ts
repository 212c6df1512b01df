// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `thread/unsubscribe` params.
 */
export type ThreadUnsubscribeParams = {
/**
 * The thread.
 */
threadId: string, };
