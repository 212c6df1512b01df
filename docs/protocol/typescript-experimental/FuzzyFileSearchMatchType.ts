// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * Whether a search result is a file or a directory.
 */
export type FuzzyFileSearchMatchType = "file" | "directory";
