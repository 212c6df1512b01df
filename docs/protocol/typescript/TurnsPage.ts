// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { Turn } from "./Turn";

/**
 * One page of turns, as `thread/turns/list` answers it.
 */
export type TurnsPage = {
/**
 * The turns.
 */
data: Array<Turn>,
/**
 * Cursor of the next page in the same direction, if any.
 */
nextCursor: string | null,
/**
 * Cursor for the opposite direction that includes this page's first turn again; `null`
 * for an empty page.
 */
backwardsCursor: string | null, };
