// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `fuzzyFileSearch` params.
 */
export type FuzzyFileSearchParams = {
/**
 * What to look for: matched fuzzily against each path relative to its root. An empty
 * query matches nothing.
 */
query: string,
/**
 * The directories to search (absolute; a relative or missing one yields nothing).
 */
roots: Array<string>,
/**
 * A client-chosen token: a later search with the same token cancels this one, which
 * then answers at once with no files.
 */
cancellationToken?: string | null, };
