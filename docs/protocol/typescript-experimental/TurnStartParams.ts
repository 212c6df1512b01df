// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { ApprovalPolicy } from "./ApprovalPolicy";
import type { SandboxPolicy } from "./SandboxPolicy";
import type { UserInput } from "./UserInput";

/**
 * `turn/start` params.
 */
export type TurnStartParams = {
/**
 * The thread.
 */
threadId: string,
/**
 * The user's input.
 */
input: Array<UserInput>,
/**
 * Echoed as `clientId` of the `userMessage` item.
 */
clientUserMessageId?: string | null,
/**
 * Approval policy from this turn on: omitted keeps the thread's, `null` asks for the
 * server default.
 */
approvalPolicy?: ApprovalPolicy | null,
/**
 * Model from this turn on: omitted keeps the thread's, `null` asks for the server default.
 */
model?: string | null,
/**
 * Sandbox policy from this turn on: omitted keeps the thread's, `null` asks for the
 * server default.
 */
sandboxPolicy?: SandboxPolicy | null,
/**
 * Reasoning effort from this turn on (`none`, `minimal`, `low`, `medium`, `high`,
 * `xhigh`): omitted keeps the thread's, `null` asks for the server default (config
 * `model_reasoning_effort`).
 */
effort?: string | null,
/**
 * Reasoning summary from this turn on (`auto`, `concise`, `detailed`, `none`): omitted
 * keeps the thread's, `null` asks for the server default (config `model_reasoning_summary`).
 */
summary?: string | null, };
