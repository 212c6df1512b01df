// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { Thread } from "./Thread";

/**
 * `thread/list` result.
 */
export type ThreadListResponse = {
/**
 * One page of threads.
 */
data: Array<Thread>,
/**
 * Cursor of the next page, if any.
 */
nextCursor: string | null,
/**
 * Always `null`.
 */
backwardsCursor: string | null, };
