// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * A PTY size.
 */
export type PtySize = {
/**
 * Rows (greater than 0).
 */
rows: number,
/**
 * Columns (greater than 0).
 */
cols: number, };
