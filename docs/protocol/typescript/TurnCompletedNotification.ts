// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { Turn } from "./Turn";

/**
 * `turn/completed` params.
 */
export type TurnCompletedNotification = {
/**
 * The thread.
 */
threadId: string,
/**
 * The finished turn.
 */
turn: Turn, };
