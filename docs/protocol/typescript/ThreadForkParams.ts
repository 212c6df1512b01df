// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { ApprovalPolicy } from "./ApprovalPolicy";
import type { JsonValue } from "./JsonValue";
import type { SandboxMode } from "./SandboxMode";

/**
 * `thread/fork` params.
 */
export type ThreadForkParams = {
/**
 * The source thread.
 */
threadId: string,
/**
 * Discard the fork instead of persisting it.
 */
ephemeral?: boolean | null,
/**
 * Leave `thread.turns` of the result empty.
 */
excludeTurns?: boolean | null,
/**
 * Copy history through this turn, inclusive (default: all of it).
 */
lastTurnId?: string | null,
/**
 * Tandem extension: a client-chosen key, scoped to the source thread, that makes the
 * request idempotent, as `thread/start.idempotencyKey` (docs/protocol.md, "Idempotent
 * requests").
 */
idempotencyKey?: string | null,
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
