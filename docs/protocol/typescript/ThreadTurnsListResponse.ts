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
 * Always `null`.
 */
backwardsCursor: string | null, };
