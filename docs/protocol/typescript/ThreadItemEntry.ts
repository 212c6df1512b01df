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
item: ThreadItem, };
