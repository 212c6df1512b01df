// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `command/exec/terminate` params.
 */
export type CommandExecTerminateParams = {
/**
 * The client's `processId`.
 */
processId: string, };
