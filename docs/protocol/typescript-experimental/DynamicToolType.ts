// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * The `type` of a `DynamicToolSpec`; only `"function"`.
 */
export type DynamicToolType = "function";
