// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { ThreadAttachmentOperation } from "./ThreadAttachmentOperation";

/**
 * `thread/attachment/updated` params.
 */
export type ThreadAttachmentUpdatedNotification = {
/**
 * The thread.
 */
threadId: string,
/**
 * Attachment type.
 */
attachmentType: string,
/**
 * Key within the type.
 */
identityKey: string,
/**
 * The attachment's id.
 */
attachmentId: string,
/**
 * Created or deleted.
 */
operation: ThreadAttachmentOperation, };
