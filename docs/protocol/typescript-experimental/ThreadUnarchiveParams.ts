// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `thread/unarchive` params.
 */
export type ThreadUnarchiveParams = {
/**
 * The thread.
 */
threadId: string, };
