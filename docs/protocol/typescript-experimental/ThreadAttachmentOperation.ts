// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * What happened to an attachment.
 */
export type ThreadAttachmentOperation = "created" | "deleted";
