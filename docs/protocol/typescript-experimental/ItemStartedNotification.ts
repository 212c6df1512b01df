// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { ThreadItem } from "./ThreadItem";

/**
 * `item/started` params.
 */
export type ItemStartedNotification = {
/**
 * The thread.
 */
threadId: string,
/**
 * The turn.
 */
turnId: string,
/**
 * The item as it starts.
 */
item: ThreadItem,
/**
 * Unix milliseconds.
 */
startedAtMs: number, };
