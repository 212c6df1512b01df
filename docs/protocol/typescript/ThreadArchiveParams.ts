// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `thread/archive` params.
 */
export type ThreadArchiveParams = {
/**
 * The thread.
 */
threadId: string, };
