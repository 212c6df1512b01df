// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { PtySize } from "./PtySize";

/**
 * `process/resizePty` params.
 */
export type ProcessResizePtyParams = {
/**
 * The process.
 */
processHandle: string,
/**
 * The new size.
 */
size: PtySize, };
