// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { AbsolutePathBuf } from "./AbsolutePathBuf";

/**
 * `fs/changed` params: paths that changed under one watch.
 */
export type FsChangedNotification = {
/**
 * The watch.
 */
watchId: string,
/**
 * The paths that changed since the previous `fs/changed` of this watch, sorted, each
 * once. When more changed than one notification carries, this is the watched path
 * alone: re-read it (docs/protocol.md, "Files").
 */
changedPaths: Array<AbsolutePathBuf>, };
