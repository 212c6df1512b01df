// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { AbsolutePathBuf } from "./AbsolutePathBuf";

/**
 * `fs/readDirectory` params.
 */
export type FsReadDirectoryParams = {
/**
 * Absolute directory path to read.
 */
path: AbsolutePathBuf, };
