// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `thread/read` params.
 */
export type ThreadReadParams = {
/**
 * The thread.
 */
threadId: string,
/**
 * Fill `thread.turns` (default `false`).
 */
includeTurns?: boolean | null, };
