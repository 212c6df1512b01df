// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { Thread } from "./Thread";

/**
 * `thread/revert` result.
 */
export type ThreadRevertResponse = {
/**
 * The thread after the revert; `turns` is always empty (page them with
 * `thread/turns/list`).
 */
thread: Thread,
/**
 * Always `null`: start `thread/turns/list` without a cursor.
 */
turnsBackwardsCursor: string | null,
/**
 * Always `null`.
 */
itemsBackwardsCursor: string | null, };
