// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { AbsolutePathBuf } from "./AbsolutePathBuf";

/**
 * `fs/createDirectory` params.
 */
export type FsCreateDirectoryParams = {
/**
 * Absolute directory path to create.
 */
path: AbsolutePathBuf,
/**
 * Whether parent directories should also be created (and an existing directory
 * accepted); `null` or omitted = `true`.
 */
recursive?: boolean | null, };
