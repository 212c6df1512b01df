// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { SortDirection } from "./SortDirection";
import type { TurnItemsView } from "./TurnItemsView";

/**
 * `thread/resume.initialTurnsPage` (experimental): the `thread/turns/list` page to return
 * with the resume, from the newest (or oldest) turn.
 */
export type ThreadResumeInitialTurnsPageParams = {
/**
 * Page size (as `thread/turns/list.limit`).
 */
limit?: number | null,
/**
 * Order (default `desc`: newest first).
 */
sortDirection?: SortDirection | null,
/**
 * How much of each turn's items to include (default `summary`).
 */
itemsView?: TurnItemsView | null, };
