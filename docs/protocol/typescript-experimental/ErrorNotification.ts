// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { TurnError } from "./TurnError";

/**
 * `error` params.
 */
export type ErrorNotification = {
/**
 * The thread.
 */
threadId: string,
/**
 * The turn.
 */
turnId: string,
/**
 * What went wrong.
 */
error: TurnError,
/**
 * `true` when the server retries what failed (the turn goes on, e.g. a model request
 * that is sent again: `Reconnecting... 2/5`); `false` when the error ends the turn.
 */
willRetry: boolean, };
