// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `process/screen` params (experimental): the present screen of a running PTY process.
 */
export type ProcessScreenParams = {
/**
 * The process (spawned with `tty: true`).
 */
processHandle: string, };
