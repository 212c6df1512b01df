// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { AbsolutePathBuf } from "./AbsolutePathBuf";

/**
 * `fs/watch` result.
 */
export type FsWatchResponse = {
/**
 * The watched path, normalized (the path every `fs/changed` paths are under).
 */
path: AbsolutePathBuf, };
