// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { Turn } from "./Turn";

/**
 * `thread/turns/list` result.
 */
export type ThreadTurnsListResponse = {
/**
 * One page of turns.
 */
data: Array<Turn>,
/**
 * Cursor of the next page, if any.
 */
nextCursor: string | null,
/**
 * Cursor for the opposite direction that includes this page's first turn again; `null`
 * for an empty page.
 */
backwardsCursor: string | null, };
