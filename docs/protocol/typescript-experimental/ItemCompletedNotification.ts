// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { ThreadItem } from "./ThreadItem";

/**
 * `item/completed` params.
 */
export type ItemCompletedNotification = {
/**
 * The thread.
 */
threadId: string,
/**
 * The turn.
 */
turnId: string,
/**
 * The finished item.
 */
item: ThreadItem,
/**
 * Unix milliseconds.
 */
completedAtMs: number, };
