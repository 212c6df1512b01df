// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { ApprovalPolicy } from "./ApprovalPolicy";
import type { JsonValue } from "./JsonValue";
import type { SandboxMode } from "./SandboxMode";

/**
 * `thread/start` params; every member is optional.
 */
export type ThreadStartParams = {
/**
 * Discard the thread instead of persisting it.
 */
ephemeral?: boolean | null,
/**
 * Tandem extension: a client-chosen key that makes the request idempotent. A retry with
 * the same key (and the same params) answers with the thread the first request created
 * and creates nothing; the same key with other params is refused with -32600. Remembered
 * for 24 hours (docs/protocol.md, "Idempotent requests").
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
