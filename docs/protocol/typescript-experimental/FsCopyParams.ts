// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { AbsolutePathBuf } from "./AbsolutePathBuf";

/**
 * `fs/copy` params.
 */
export type FsCopyParams = {
/**
 * Absolute source path (a symbolic link is copied as a link).
 */
sourcePath: AbsolutePathBuf,
/**
 * Absolute destination path.
 */
destinationPath: AbsolutePathBuf,
/**
 * Required for directory copies; ignored for file copies.
 */
recursive?: boolean | null, };
