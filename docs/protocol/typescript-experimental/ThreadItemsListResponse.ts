// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { ThreadItemEntry } from "./ThreadItemEntry";

/**
 * `thread/items/list` result.
 */
export type ThreadItemsListResponse = {
/**
 * One page of items.
 */
data: Array<ThreadItemEntry>,
/**
 * Cursor of the next page in the same direction, if any.
 */
nextCursor: string | null,
/**
 * Cursor for the opposite direction that includes this page's first item again; `null`
 * for an empty page.
 */
backwardsCursor: string | null, };
