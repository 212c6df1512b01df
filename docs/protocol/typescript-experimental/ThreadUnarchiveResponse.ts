// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { Thread } from "./Thread";

/**
 * `thread/unarchive` result.
 */
export type ThreadUnarchiveResponse = {
/**
 * The thread, `notLoaded`, without turns.
 */
thread: Thread, };
