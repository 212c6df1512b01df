// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { ApprovalPolicy } from "./ApprovalPolicy";
import type { EventCursor } from "./EventCursor";
import type { JsonValue } from "./JsonValue";
import type { SandboxMode } from "./SandboxMode";
import type { ThreadResumeInitialTurnsPageParams } from "./ThreadResumeInitialTurnsPageParams";

/**
 * `thread/resume` params.
 */
export type ThreadResumeParams = {
/**
 * The thread.
 */
threadId: string,
/**
 * Leave `thread.turns` empty.
 */
excludeTurns?: boolean | null,
/**
 * Experimental: answer with this page of turns in `initialTurnsPage` and leave
 * `thread.turns` empty.
 */
initialTurnsPage?: ThreadResumeInitialTurnsPageParams | null,
/**
 * s-seq: the cursor of the last notification about this thread the client saw. Every
 * later event still in the server's replay window is sent before any live one; if that
 * is not possible the result says `gap: true` and carries the full thread.
 */
cursor?: EventCursor | null,
/**
 * Working directory (absolute).
 */
cwd?: string | null,
/**
 * Model.
 */
model?: string | null,
/**
 * Approval policy (any input spelling).
 */
approvalPolicy?: ApprovalPolicy | null,
/**
 * Sandbox mode of the thread's commands (`null` asks for the server default).
 */
sandbox?: SandboxMode | null,
/**
 * Thread name.
 */
name?: string | null,
/**
 * Configuration overrides under config-file (snake_case) keys.
 */
config?: { [key in string]: JsonValue } | null, };
