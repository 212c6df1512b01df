// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { Thread } from "./Thread";

/**
 * `thread/started` params.
 */
export type ThreadStartedNotification = {
/**
 * The new thread.
 */
thread: Thread, };
