// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { SessionSource } from "./SessionSource";
import type { ThreadStatus } from "./ThreadStatus";
import type { Turn } from "./Turn";

/**
 * A thread (docs/protocol.md section 7).
 */
export type Thread = {
/**
 * UUIDv7 thread id.
 */
id: string,
/**
 * Equal to `id`; existing clients read this name.
 */
sessionId: string,
/**
 * The thread's name, if set.
 */
name: string | null,
/**
 * The first user text; may be empty.
 */
preview: string,
/**
 * Whether the thread is discarded instead of persisted.
 */
ephemeral: boolean,
/**
 * Creation time, unix seconds.
 */
createdAt: number,
/**
 * Last update time, unix seconds.
 */
updatedAt: number,
/**
 * Current status.
 */
status: ThreadStatus,
/**
 * Working directory (absolute).
 */
cwd: string,
/**
 * The session source of the connection that created the thread.
 */
source: SessionSource,
/**
 * The thread this one was forked from.
 */
forkedFromId: string | null,
/**
 * The thread's model, if known.
 */
model: string | null,
/**
 * The model provider.
 */
modelProvider: string,
/**
 * The server's version.
 */
cliVersion: string,
/**
 * Always `null`: Tandem has no projects.
 */
projectId: string | null,
/**
 * The turns, filled only where docs/protocol.md says so; otherwise empty.
 */
turns: Array<Turn>, };
