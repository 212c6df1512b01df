// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `item/reasoning/summaryPartAdded` params: a new part of a reasoning item's summary starts.
 */
export type ReasoningSummaryPartAddedNotification = {
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
 * The index of the part in the item's `summary`.
 */
summaryIndex: number, };
