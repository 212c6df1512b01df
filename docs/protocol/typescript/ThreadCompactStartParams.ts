// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `thread/compact/start` params.
 */
export type ThreadCompactStartParams = {
/**
 * The thread (loaded).
 */
threadId: string, };
