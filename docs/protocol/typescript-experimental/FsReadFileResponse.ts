// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `fs/readFile` result.
 */
export type FsReadFileResponse = {
/**
 * File contents encoded as base64.
 */
dataBase64: string, };
