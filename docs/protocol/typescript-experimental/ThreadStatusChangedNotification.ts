// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { ThreadStatus } from "./ThreadStatus";

/**
 * `thread/status/changed` params.
 */
export type ThreadStatusChangedNotification = {
/**
 * The thread.
 */
threadId: string,
/**
 * Its new status.
 */
status: ThreadStatus, };
