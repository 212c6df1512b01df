// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { AbsolutePathBuf } from "./AbsolutePathBuf";

/**
 * `fs/watch` params.
 */
export type FsWatchParams = {
/**
 * Absolute file or directory path to watch (it need not exist yet).
 */
path: AbsolutePathBuf,
/**
 * Connection-scoped watch id, named by `fs/unwatch` and every `fs/changed`.
 */
watchId: string, };
