// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { FuzzyFileSearchMatchType } from "./FuzzyFileSearchMatchType";

/**
 * One result of `fuzzyFileSearch`.
 */
export type FuzzyFileSearchResult = {
/**
 * The root (as the request gave it) the path is under.
 */
root: string,
/**
 * The path, relative to `root`.
 */
path: string,
/**
 * File or directory.
 */
match_type: FuzzyFileSearchMatchType,
/**
 * The last component of `path`.
 */
file_name: string,
/**
 * How well `path` matches: higher is better; results are sorted by it (descending),
 * then by `path`.
 */
score: number,
/**
 * The positions (in characters of `path`) that matched the query, ascending.
 */
indices: Array<number> | null, };
