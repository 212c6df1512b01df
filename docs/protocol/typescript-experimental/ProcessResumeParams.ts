// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { EventCursor } from "./EventCursor";

/**
 * procre: `process/resume` params (experimental): take over a process of a connection that
 * closed (or this one) and receive its notifications again, replaying those after `cursor`.
 */
export type ProcessResumeParams = {
/**
 * The `processSession` of the `initialize` result of the connection that spawned the
 * process (or resumed it last).
 */
processSession: string,
/**
 * The process.
 */
processHandle: string,
/**
 * The `cursor` of the last `process/outputDelta` or `process/exited` of this process the
 * client saw; omitted when it saw none, which replays everything still in the window.
 */
cursor?: EventCursor | null, };
