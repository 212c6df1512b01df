// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { ThreadTokenUsage } from "./ThreadTokenUsage";

/**
 * `thread/tokenUsage/updated` params: sent after each model request whose stream reported
 * usage.
 */
export type ThreadTokenUsageUpdatedNotification = {
/**
 * The thread.
 */
threadId: string,
/**
 * The turn that made the request.
 */
turnId: string,
/**
 * Usage so far.
 */
tokenUsage: ThreadTokenUsage, };
