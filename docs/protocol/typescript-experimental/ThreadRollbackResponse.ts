// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { Thread } from "./Thread";

/**
 * `thread/rollback` result.
 */
export type ThreadRollbackResponse = {
/**
 * The thread after the rollback, with its remaining turns.
 */
thread: Thread, };
