// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `thread/attachment/remove` params.
 */
export type ThreadAttachmentRemoveParams = {
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
identityKey: string, };
