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
 * How much of each turn's items to include (default `summary`: the first user message
 * and the last agent message).
 */
itemsView?: TurnItemsView | null, };
