// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { JsonValue } from "./JsonValue";

/**
 * `thread/attachment/add` params.
 */
export type ThreadAttachmentAddParams = {
/**
 * The thread.
 */
threadId: string,
/**
 * Attachment type (non-empty).
 */
attachmentType: string,
/**
 * Key, unique within the type (non-empty).
 */
identityKey: string,
/**
 * Any JSON.
 */
payload: JsonValue, };
