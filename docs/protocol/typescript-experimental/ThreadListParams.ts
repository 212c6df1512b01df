// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { CwdFilter } from "./CwdFilter";
import type { SortDirection } from "./SortDirection";

/**
 * `thread/list` params; every member is optional.
 */
export type ThreadListParams = {
/**
 * `nextCursor` of the previous page.
 */
cursor?: string | null,
/**
 * Page size.
 */
limit?: number | null,
/**
 * Order by creation time (default `desc`).
 */
sortDirection?: SortDirection | null,
/**
 * Only threads whose `source` is one of these kinds.
 */
sourceKinds?: Array<string> | null,
/**
 * Only threads in these directories.
 */
cwd?: CwdFilter | null,
/**
 * Only threads whose name contains this substring.
 */
searchTerm?: string | null,
/**
 * `true`: archived threads only; `false` or omitted: unarchived threads only.
 */
archived?: boolean | null,
/**
 * Tandem has no thread hierarchy: any value matches no thread.
 */
parentThreadId?: string | null,
/**
 * Tandem has no thread hierarchy: any value matches no thread.
 */
ancestorThreadId?: string | null, };
