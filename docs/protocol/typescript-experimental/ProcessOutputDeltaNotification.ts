// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { ProcessOutputStream } from "./ProcessOutputStream";

/**
 * `process/outputDelta` params.
 */
export type ProcessOutputDeltaNotification = {
/**
 * The process.
 */
processHandle: string,
/**
 * The stream.
 */
stream: ProcessOutputStream,
/**
 * The bytes; `deltaBase64` on the wire. In-process they are the chunk read from the pipe,
 * shared, never encoded.
 */
deltaBase64: string,
/**
 * This delta reached the stream's cap.
 */
capReached: boolean, };
