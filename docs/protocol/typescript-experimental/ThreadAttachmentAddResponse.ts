// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { ThreadAttachment } from "./ThreadAttachment";
import type { ThreadAttachmentAddOutcome } from "./ThreadAttachmentAddOutcome";

/**
 * `thread/attachment/add` result.
 */
export type ThreadAttachmentAddResponse = {
/**
 * Created or existing.
 */
outcome: ThreadAttachmentAddOutcome,
/**
 * The attachment.
 */
attachment: ThreadAttachment, };
