// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * Params with no members (`{}`); unknown members are ignored.
 */
export type EmptyParams = Record<symbol, never>;
