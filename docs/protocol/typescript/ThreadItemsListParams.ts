// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { SortDirection } from "./SortDirection";
import type { ThreadItemOutputDeferral } from "./ThreadItemOutputDeferral";
import type { ThreadItemsListCursor } from "./ThreadItemsListCursor";

/**
 * `thread/items/list` params.
 */
export type ThreadItemsListParams = {
/**
 * The thread.
 */
threadId: string,
/**
 * Only this turn's items; all the thread's items when omitted.
 */
turnId?: string | null,
/**
 * Where the page starts (exclusive for an anchor or a `nextCursor`).
 */
cursor?: ThreadItemsListCursor | null,
/**
 * Page size (default 50, at most 500; 0 counts as 1).
 */
limit?: number | null,
/**
 * Order (default `asc`: oldest first).
 */
sortDirection?: SortDirection | null,
/**
 * Accepted and ignored (see `ThreadItemOutputDeferral`).
 */
deferOutput?: ThreadItemOutputDeferral | null, };
