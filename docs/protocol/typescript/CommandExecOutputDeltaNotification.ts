// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { ProcessOutputStream } from "./ProcessOutputStream";

/**
 * `command/exec/outputDelta` params.
 */
export type CommandExecOutputDeltaNotification = {
/**
 * The client's `processId`.
 */
processId: string,
/**
 * The stream (`stdout` carries all PTY output).
 */
stream: ProcessOutputStream,
/**
 * The bytes; `deltaBase64` on the wire.
 */
deltaBase64: string,
/**
 * This delta reached the stream's cap: later output of the stream was dropped.
 */
capReached: boolean, };
