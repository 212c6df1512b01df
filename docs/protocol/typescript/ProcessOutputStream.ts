// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * Which output stream a delta belongs to.
 */
export type ProcessOutputStream = "stdout" | "stderr";
