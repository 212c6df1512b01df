// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `thread/loaded/list` result.
 */
export type ThreadLoadedListResponse = {
/**
 * Ids of loaded threads, sorted.
 */
data: Array<string>,
/**
 * Cursor of the next page, if any.
 */
nextCursor: string | null, };
