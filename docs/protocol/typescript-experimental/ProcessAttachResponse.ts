// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { EventCursor } from "./EventCursor";
import type { ProcessScreenResponse } from "./ProcessScreenResponse";

/**
 * The `process/attach` result.
 */
export type ProcessAttachResponse = {
/**
 * The screen now: exactly the process's output up to `cursor` run through the server's
 * emulator. Every later `process/outputDelta` and `process/exited` of the process reaches
 * this connection (cursors above `cursor`), so drawing the screen and then applying them
 * shows what the owner's terminal shows.
 */
screen: ProcessScreenResponse,
/**
 * Where the process's stream stood when the screen was taken.
 */
cursor: EventCursor, };
