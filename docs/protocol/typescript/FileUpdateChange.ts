// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { PatchChangeKind } from "./PatchChangeKind";

/**
 * One file of a `fileChange` item: its path, what happens to it, and the unified diff of
 * the change (git-style headers).
 */
export type FileUpdateChange = {
/**
 * The file's absolute path (before a move).
 */
path: string,
/**
 * Add, delete, or update (with an optional move).
 */
kind: PatchChangeKind,
/**
 * The change as a unified diff.
 */
diff: string, };
