// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { FuzzyFileSearchResult } from "./FuzzyFileSearchResult";

/**
 * `fuzzyFileSearch` result.
 */
export type FuzzyFileSearchResponse = {
/**
 * The best matches, best first.
 */
files: Array<FuzzyFileSearchResult>, };
