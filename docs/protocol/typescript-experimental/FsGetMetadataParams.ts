// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { AbsolutePathBuf } from "./AbsolutePathBuf";

/**
 * `fs/getMetadata` params.
 */
export type FsGetMetadataParams = {
/**
 * Absolute path to inspect.
 */
path: AbsolutePathBuf, };
