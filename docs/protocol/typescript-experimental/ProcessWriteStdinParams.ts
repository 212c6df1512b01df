// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `process/writeStdin` params.
 */
export type ProcessWriteStdinParams = {
/**
 * The process.
 */
processHandle: string,
/**
 * Bytes to write; `deltaBase64` on the wire.
 */
deltaBase64?: string | null,
/**
 * Close stdin after writing.
 */
closeStdin?: boolean | null, };
