// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { Turn } from "./Turn";

/**
 * `turn/started` params.
 */
export type TurnStartedNotification = {
/**
 * The thread.
 */
threadId: string,
/**
 * The turn (no items yet).
 */
turn: Turn, };
