// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * How a config write combines with what is there.
 */
export type MergeStrategy = "replace" | "upsert";
