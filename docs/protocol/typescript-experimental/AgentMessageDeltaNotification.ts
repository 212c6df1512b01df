// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `item/agentMessage/delta` params.
 */
export type AgentMessageDeltaNotification = {
/**
 * The thread.
 */
threadId: string,
/**
 * The turn.
 */
turnId: string,
/**
 * The `agentMessage` item.
 */
itemId: string,
/**
 * Text to append.
 */
delta: string, };
