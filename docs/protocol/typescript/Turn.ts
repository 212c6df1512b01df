// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { ThreadItem } from "./ThreadItem";
import type { TurnError } from "./TurnError";
import type { TurnItemsView } from "./TurnItemsView";
import type { TurnStatus } from "./TurnStatus";

/**
 * A turn: one user input and everything the agent did in response.
 */
export type Turn = {
/**
 * UUIDv7 turn id.
 */
id: string,
/**
 * The turn's items (see `items_view`).
 */
items: Array<ThreadItem>,
/**
 * How complete `items` is.
 */
itemsView: TurnItemsView,
/**
 * Current status.
 */
status: TurnStatus,
/**
 * Why the turn failed, when it did.
 */
error: TurnError | null,
/**
 * Start time, unix seconds.
 */
startedAt: number | null,
/**
 * Completion time, unix seconds.
 */
completedAt: number | null,
/**
 * Duration in milliseconds, once completed.
 */
durationMs: number | null, };
