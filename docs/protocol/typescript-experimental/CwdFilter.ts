// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * The `cwd` filter of `thread/list`: one path or several.
 */
export type CwdFilter = string | Array<string>;
