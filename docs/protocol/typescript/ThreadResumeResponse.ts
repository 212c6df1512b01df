// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { ApprovalPolicy } from "./ApprovalPolicy";
import type { ApprovalsReviewer } from "./ApprovalsReviewer";
import type { EventCursor } from "./EventCursor";
import type { SandboxPolicy } from "./SandboxPolicy";
import type { Thread } from "./Thread";
import type { TurnsPage } from "./TurnsPage";

/**
 * `thread/resume` result; the caller is subscribed to the thread.
 */
export type ThreadResumeResponse = {
/**
 * The thread, with all its turns unless `excludeTurns` or `initialTurnsPage` was given.
 */
thread: Thread,
/**
 * The page asked for by `initialTurnsPage`; omitted when it was not asked for.
 */
initialTurnsPage?: TurnsPage | null,
/**
 * `thread/turns/list` cursor (with `sortDirection: "desc"`) whose first page starts at
 * the newest turn, inclusive; `null` for a thread without turns.
 */
turnsBackwardsCursor: string | null,
/**
 * `thread/items/list` cursor (with `sortDirection: "desc"`) whose first page starts at
 * the newest item, inclusive; `null` for a thread without items.
 */
itemsBackwardsCursor: string | null,
/**
 * s-seq: where the thread's event stream stands for this connection: every notification
 * after it is (or was, when replayed) sent to it. Omitted by servers without cursors.
 */
cursor?: EventCursor | null,
/**
 * s-seq: present when the request carried a `cursor`: `true` if events after it are no
 * longer in the replay window (or it is from another server instance); `thread` then
 * holds every turn to rebuild from, whatever `excludeTurns` said.
 */
gap?: boolean | null,
/**
 * s-seq: present when the request carried a `cursor` and there was no gap: how many
 * notifications were replayed (sent before this result).
 */
replayed?: number | null,
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
