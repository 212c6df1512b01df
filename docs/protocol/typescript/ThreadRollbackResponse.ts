// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { SkippedFile } from "./SkippedFile";
import type { Thread } from "./Thread";

/**
 * `thread/rollback` result.
 */
export type ThreadRollbackResponse = {
/**
 * The thread after the rollback, with its remaining turns.
 */
thread: Thread,
/**
 * The files now as they were before the reverted turns (absolute paths, sorted).
 */
restoredFiles?: Array<string> | null,
/**
 * The files left alone, each with why (changed on disk since a turn wrote it, outside
 * the writable roots, or of a turn whose earlier contents were not kept).
 */
skippedFiles?: Array<SkippedFile> | null,
/**
 * The reverted turns whose earlier file contents were not kept (past a bound): their
 * files are among `skippedFiles`.
 */
unrestorableTurns?: Array<string> | null, };
