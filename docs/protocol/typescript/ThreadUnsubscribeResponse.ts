// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { ThreadUnsubscribeStatus } from "./ThreadUnsubscribeStatus";

/**
 * `thread/unsubscribe` result.
 */
export type ThreadUnsubscribeResponse = {
/**
 * What happened.
 */
status: ThreadUnsubscribeStatus, };
