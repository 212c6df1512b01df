// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * Whether the written value is the effective one.
 */
export type WriteStatus = "ok" | "okOverridden";
