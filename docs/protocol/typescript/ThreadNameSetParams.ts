// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `thread/name/set` params.
 */
export type ThreadNameSetParams = {
/**
 * The thread.
 */
threadId: string,
/**
 * The new name; trimmed by the server, must not be empty.
 */
name: string, };
