// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { SortDirection } from "./SortDirection";
import type { TurnItemsView } from "./TurnItemsView";

/**
 * `thread/turns/list` params.
 */
export type ThreadTurnsListParams = {
/**
 * The thread.
 */
threadId: string,
/**
 * Page size.
 */
limit?: number | null,
/**
 * Order (default `desc`).
 */
sortDirection?: SortDirection | null,
/**
 * `nextCursor` of the previous page.
 */
cursor?: string | null,
/**
 * Accepted and ignored: items are always full.
 */
itemsView?: TurnItemsView | null, };
