// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { ThreadItemsListAnchor } from "./ThreadItemsListAnchor";

/**
 * `thread/items/list.cursor`: a cursor string returned by an earlier page, or an item
 * anchor.
 */
export type ThreadItemsListCursor = string | ThreadItemsListAnchor;
