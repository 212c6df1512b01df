// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { EventCursor } from "./EventCursor";

/**
 * procre: `process/resume` result.
 */
export type ProcessResumeResponse = {
/**
 * `true` when some notifications after `cursor` are no longer in the process's replay
 * window (or `cursor` is from another server instance): nothing was replayed and the
 * process's output between `cursor` and this answer is missing.
 */
gap: boolean,
/**
 * Notifications replayed (sent before this result).
 */
replayed: number,
/**
 * Where the process's stream stands: every later notification reaches this connection.
 */
cursor: EventCursor, };
