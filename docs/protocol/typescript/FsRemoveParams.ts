// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { AbsolutePathBuf } from "./AbsolutePathBuf";

/**
 * `fs/remove` params.
 */
export type FsRemoveParams = {
/**
 * Absolute path to remove (a symbolic link is removed, not what it points to).
 */
path: AbsolutePathBuf,
/**
 * Whether a directory's contents are removed too; `null` or omitted = `true`.
 */
recursive?: boolean | null,
/**
 * Whether a missing path is accepted; `null` or omitted = `true`.
 */
force?: boolean | null, };
