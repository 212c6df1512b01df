// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * One entry of an `fs/readDirectory` result.
 */
export type FsReadDirectoryEntry = {
/**
 * The child's name only, not a path.
 */
fileName: string,
/**
 * Whether the entry resolves (through symbolic links) to a directory.
 */
isDirectory: boolean,
/**
 * Whether the entry resolves (through symbolic links) to a regular file.
 */
isFile: boolean, };
