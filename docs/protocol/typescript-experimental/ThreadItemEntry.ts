// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { ThreadItem } from "./ThreadItem";

/**
 * One item of a `thread/items/list` page, with the turn that holds it.
 */
export type ThreadItemEntry = {
/**
 * The turn holding the item.
 */
turnId: string,
/**
 * The item, as stored.
 */
item: ThreadItem,
/**
 * When the item started, unix milliseconds (its `item/started`'s `startedAtMs`); `null`
 * when not recorded (a forked thread's copied history, a database from before the times
 * were kept).
 */
startedAtMs: number | null,
/**
 * When the item completed, unix milliseconds (its `item/completed`'s `completedAtMs`);
 * `null` while it runs, or when not recorded.
 */
completedAtMs: number | null, };
