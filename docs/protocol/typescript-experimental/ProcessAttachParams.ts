// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `process/attach` params (experimental): watch a running PTY process another connection
 * spawned: its present screen at once, then its output live.
 */
export type ProcessAttachParams = {
/**
 * The process, by its owner's handle.
 */
processHandle: string,
/**
 * The owner's `process/share` answer for it.
 */
attachToken: string, };
