// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `thread/delete` params.
 */
export type ThreadDeleteParams = {
/**
 * The thread.
 */
threadId: string, };
