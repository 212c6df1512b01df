// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `command/exec` result, sent once the process exited and after every
 * `command/exec/outputDelta` of it.
 */
export type CommandExecResponse = {
/**
 * Exit code; 128 + N for signal N (137 after `command/exec/terminate`); 124 on timeout.
 */
exitCode: number,
/**
 * Captured stdout, lossily decoded as UTF-8; empty when streamed.
 */
stdout: string,
/**
 * Captured stderr, lossily decoded as UTF-8; empty when streamed.
 */
stderr: string, };
