// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `thread/compacted` params: the compaction turn `turnId` stored its summary. Sent after the
 * `contextCompaction` item completes and before `turn/completed` (the reference marks it
 * deprecated in favour of the item; clients still listen for it).
 */
export type ContextCompactedNotification = {
/**
 * The thread.
 */
threadId: string,
/**
 * The compaction turn.
 */
turnId: string, };
