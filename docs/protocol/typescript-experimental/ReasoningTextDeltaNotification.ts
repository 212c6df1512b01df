// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `item/reasoning/textDelta` params: the model's own reasoning text.
 */
export type ReasoningTextDeltaNotification = {
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
 * The index of the part in the item's `content`.
 */
contentIndex: number, };
