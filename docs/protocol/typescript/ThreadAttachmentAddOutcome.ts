// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * Whether `thread/attachment/add` created the attachment or found it.
 */
export type ThreadAttachmentAddOutcome = "created" | "existing";
