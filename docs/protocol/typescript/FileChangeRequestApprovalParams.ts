// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `item/fileChange/requestApproval` params: may these changes be written? The changes
 * themselves are in the `fileChange` item `item_id`, started just before.
 */
export type FileChangeRequestApprovalParams = {
/**
 * The thread.
 */
threadId: string,
/**
 * The turn.
 */
turnId: string,
/**
 * The id of the `fileChange` item.
 */
itemId: string,
/**
 * When the request was made, unix milliseconds.
 */
startedAtMs: number,
/**
 * Why the change needs approval (e.g. which paths lie outside the writable roots).
 */
reason: string | null,
/**
 * A root the agent asks to write beneath for the rest of the session; Tandem sends
 * `null` (it never asks for more than the change at hand).
 */
grantRoot: string | null, };
