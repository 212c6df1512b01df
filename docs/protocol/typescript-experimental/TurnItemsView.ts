// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `itemsView` of a turn: how complete its `items` are.
 */
export type TurnItemsView = "notLoaded" | "summary" | "full";
