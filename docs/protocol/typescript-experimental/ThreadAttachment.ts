// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { JsonValue } from "./JsonValue";

/**
 * A piece of client data attached to a thread, unique per (`attachmentType`, `identityKey`).
 */
export type ThreadAttachment = {
/**
 * Opaque attachment id.
 */
id: string,
/**
 * Client-chosen type (non-empty).
 */
attachmentType: string,
/**
 * Client-chosen key, unique within the type (non-empty).
 */
identityKey: string,
/**
 * Any JSON.
 */
payload: JsonValue,
/**
 * Creation time, unix seconds.
 */
createdAt: number, };
