// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `thread/loaded/list` params.
 */
export type ThreadLoadedListParams = {
/**
 * The last id of the previous page.
 */
cursor?: string | null,
/**
 * Page size (0 counts as 1).
 */
limit?: number | null, };
