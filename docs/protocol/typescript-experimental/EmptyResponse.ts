// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * A result with no members (`{}`).
 */
export type EmptyResponse = Record<symbol, never>;
