// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { FileUpdateChange } from "./FileUpdateChange";

/**
 * `item/fileChange/patchUpdated` params: the changes of a `fileChange` item as they stand
 * (sent while the patch is being prepared, before the item completes).
 */
export type FileChangePatchUpdatedNotification = {
/**
 * The thread.
 */
threadId: string,
/**
 * The turn.
 */
turnId: string,
/**
 * The `fileChange` item.
 */
itemId: string,
/**
 * Every change of the item so far.
 */
changes: Array<FileUpdateChange>, };
