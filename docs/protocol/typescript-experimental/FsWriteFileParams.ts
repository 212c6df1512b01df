// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { AbsolutePathBuf } from "./AbsolutePathBuf";

/**
 * `fs/writeFile` params.
 */
export type FsWriteFileParams = {
/**
 * Absolute path to write (created, or truncated and replaced).
 */
path: AbsolutePathBuf,
/**
 * File contents encoded as base64 (standard alphabet, padded); checked by the server,
 * which answers -32600 `fs/writeFile requires valid base64 dataBase64: ...`.
 */
dataBase64: string, };
