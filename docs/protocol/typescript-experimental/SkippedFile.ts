// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * Tandem extension: a file `restoreFiles` left alone, and why.
 */
export type SkippedFile = {
/**
 * The file (absolute).
 */
path: string,
/**
 * Why it was not restored, in words.
 */
reason: string, };
