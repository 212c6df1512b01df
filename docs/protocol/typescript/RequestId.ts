// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * A request id: an `i64` or a string. `1` and `"1"` are different ids.
 */
export type RequestId = number | string;
