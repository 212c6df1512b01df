// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { ApprovalPolicy } from "./ApprovalPolicy";
import type { ApprovalsReviewer } from "./ApprovalsReviewer";
import type { EventCursor } from "./EventCursor";
import type { SandboxPolicy } from "./SandboxPolicy";
import type { Thread } from "./Thread";

/**
 * `thread/start` result; the caller is subscribed to the thread.
 */
export type ThreadStartResponse = {
/**
 * The new thread.
 */
thread: Thread,
/**
 * recon: where the new thread's event stream stands for the caller (as in
 * `thread/resume`): a client that loses its connection before the thread's first event
 * resumes from it without a gap. Omitted by servers without cursors.
 */
cursor?: EventCursor | null,
/**
 * The model the thread uses.
 */
model: string,
/**
 * The provider of that model.
 */
modelProvider: string,
/**
 * The thread's working directory (absolute).
 */
cwd: string,
/**
 * The thread's approval policy.
 */
approvalPolicy: ApprovalPolicy,
/**
 * Always `"user"`.
 */
approvalsReviewer: ApprovalsReviewer,
/**
 * The sandbox policy the thread's commands run under, as enforced.
 */
sandbox: SandboxPolicy,
/**
 * The reasoning effort the thread's turns ask of the model (config
 * `model_reasoning_effort`); `null` when none is configured, and then none is sent.
 */
reasoningEffort: string | null,
/**
 * Always `null`: Tandem has no service tiers.
 */
serviceTier: string | null, };
