// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `process/kill` params.
 */
export type ProcessKillParams = {
/**
 * The process.
 */
processHandle: string, };
