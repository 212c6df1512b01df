// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `process/share` params (experimental): hand out a read-only attach token for one of this
 * connection's running PTY processes.
 */
export type ProcessShareParams = {
/**
 * The process (spawned by this connection, or resumed by it, with `tty: true`).
 */
processHandle: string, };
