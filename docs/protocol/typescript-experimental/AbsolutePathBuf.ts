// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * An absolute path, normalized lexically: `.` components dropped and `..` applied to the
 * component before it (symbolic links are not resolved). On the wire, a string.
 */
export type AbsolutePathBuf = string;
