// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { Turn } from "./Turn";

/**
 * `turn/start` result.
 */
export type TurnStartResponse = {
/**
 * The new turn (`inProgress`, no items, `itemsView: notLoaded`), or the active turn the
 * input was added to.
 */
turn: Turn, };
