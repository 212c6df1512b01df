// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { AbsolutePathBuf } from "./AbsolutePathBuf";

/**
 * `fs/readFile` params.
 */
export type FsReadFileParams = {
/**
 * Absolute path to read.
 */
path: AbsolutePathBuf, };
