// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { Thread } from "./Thread";

/**
 * `thread/read` result.
 */
export type ThreadReadResponse = {
/**
 * The thread; status `notLoaded` when not loaded.
 */
thread: Thread, };
