// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `process/exited` params.
 */
export type ProcessExitedNotification = {
/**
 * The process.
 */
processHandle: string,
/**
 * Exit code; 128 + N for signal N; 124 on timeout.
 */
exitCode: number,
/**
 * Captured stdout (empty when streamed).
 */
stdout: string,
/**
 * stdout reached its cap.
 */
stdoutCapReached: boolean,
/**
 * Captured stderr (empty when streamed).
 */
stderr: string,
/**
 * stderr reached its cap.
 */
stderrCapReached: boolean,
/**
 * A stream did not reach EOF within the drain budget. Absent or `null` on input means
 * `false`.
 */
outputDrainTimedOut: boolean, };
