// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `item/reasoning/summaryTextDelta` params: text of one part of a reasoning summary.
 */
export type ReasoningSummaryTextDeltaNotification = {
/**
 * The thread.
 */
threadId: string,
/**
 * The turn.
 */
turnId: string,
/**
 * The `reasoning` item.
 */
itemId: string,
/**
 * Text to append.
 */
delta: string,
/**
 * The index of the part in the item's `summary`.
 */
summaryIndex: number, };
