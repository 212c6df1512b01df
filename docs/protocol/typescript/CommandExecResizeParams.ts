// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { PtySize } from "./PtySize";

/**
 * `command/exec/resize` params.
 */
export type CommandExecResizeParams = {
/**
 * The client's `processId`.
 */
processId: string,
/**
 * The new size.
 */
size: PtySize, };
