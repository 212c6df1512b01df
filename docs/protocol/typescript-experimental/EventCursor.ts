// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * The position of one notification in its thread's event stream.
 *
 * Carried as the top-level `cursor` member of every notification a thread's subscribers
 * receive, and given back in `thread/resume`'s `cursor` to replay what came after it. `seq`
 * grows by one per event of a thread; `epoch` names the server instance that assigned it, so
 * a cursor from before a restart is recognized as stale instead of being misread.
 */
export type EventCursor = {
/**
 * The server instance that assigned `seq` (random, chosen when the server starts).
 */
epoch: string,
/**
 * The event's number in its thread's stream; strictly increasing, one per event.
 */
seq: number, };
