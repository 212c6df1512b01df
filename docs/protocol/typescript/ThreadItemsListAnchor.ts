// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * An item position inside the turn named by `thread/items/list.turnId`; the page starts
 * just past it.
 */
export type ThreadItemsListAnchor = { "type": "item",
/**
 * The anchor item's id.
 */
itemId: string, };
