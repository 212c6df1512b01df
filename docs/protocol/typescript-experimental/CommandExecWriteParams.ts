// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `command/exec/write` params.
 */
export type CommandExecWriteParams = {
/**
 * The client's `processId`.
 */
processId: string,
/**
 * Bytes to write; `deltaBase64` on the wire.
 */
deltaBase64?: string | null,
/**
 * Close stdin after writing.
 */
closeStdin?: boolean | null, };
