// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { PtySize } from "./PtySize";

/**
 * The `process/screen` result: the screen the server's terminal emulator shows now, after
 * every output byte read so far.
 */
export type ProcessScreenResponse = {
/**
 * The emulated screen's size: the PTY's, within the server's bound.
 */
size: PtySize,
/**
 * The cursor's row, from 0.
 */
cursorRow: number,
/**
 * The cursor's column, from 0.
 */
cursorCol: number,
/**
 * The screen's text: one line per row, trailing blanks trimmed.
 */
text: string,
/**
 * Escape sequences that draw the screen (text, colours, attributes, cursor) on a terminal
 * of `size`, whatever it showed before.
 */
formatted: string,
/**
 * How many output bytes the screen reflects.
 */
outputBytes: number, };
