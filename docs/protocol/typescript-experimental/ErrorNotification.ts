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
 * Always `false`: Tandem does not retry.
 */
willRetry: boolean, };
