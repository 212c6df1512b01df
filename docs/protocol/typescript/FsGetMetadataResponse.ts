// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `fs/getMetadata` result.
 */
export type FsGetMetadataResponse = {
/**
 * Whether the path resolves (through symbolic links) to a directory.
 */
isDirectory: boolean,
/**
 * Whether the path resolves (through symbolic links) to a regular file.
 */
isFile: boolean,
/**
 * Whether the path itself is a symbolic link.
 */
isSymlink: boolean,
/**
 * Creation time in Unix milliseconds when the file system reports it, otherwise `0`.
 */
createdAtMs: number,
/**
 * Modification time in Unix milliseconds when available, otherwise `0`.
 */
modifiedAtMs: number, };
