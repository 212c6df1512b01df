// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { ThreadAttachment } from "./ThreadAttachment";

/**
 * `thread/attachment/list` result: attachments oldest first.
 */
export type ThreadAttachmentListResponse = {
/**
 * One page of attachments.
 */
data: Array<ThreadAttachment>,
/**
 * Cursor of the next page, if any.
 */
nextCursor: string | null, };
