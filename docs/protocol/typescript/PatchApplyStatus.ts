// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * Status of a `fileChange` item.
 */
export type PatchApplyStatus = "inProgress" | "completed" | "failed" | "declined";
