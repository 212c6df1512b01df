// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { FsReadDirectoryEntry } from "./FsReadDirectoryEntry";

/**
 * `fs/readDirectory` result.
 */
export type FsReadDirectoryResponse = {
/**
 * The directory's direct children (Tandem sorts them by name; the reference leaves
 * them in the order the OS lists them).
 */
entries: Array<FsReadDirectoryEntry>, };
