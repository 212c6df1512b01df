// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `sortDirection` of list requests, by creation time.
 */
export type SortDirection = "asc" | "desc";
