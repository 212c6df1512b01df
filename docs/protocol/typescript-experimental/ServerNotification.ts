// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { AgentMessageDeltaNotification } from "./AgentMessageDeltaNotification";
import type { CommandExecOutputDeltaNotification } from "./CommandExecOutputDeltaNotification";
import type { CommandExecutionOutputDeltaNotification } from "./CommandExecutionOutputDeltaNotification";
import type { ContextCompactedNotification } from "./ContextCompactedNotification";
import type { ErrorNotification } from "./ErrorNotification";
import type { ItemCompletedNotification } from "./ItemCompletedNotification";
import type { ItemStartedNotification } from "./ItemStartedNotification";
import type { ProcessExitedNotification } from "./ProcessExitedNotification";
import type { ProcessOutputDeltaNotification } from "./ProcessOutputDeltaNotification";
import type { ServerRequestResolvedNotification } from "./ServerRequestResolvedNotification";
import type { ThreadArchivedNotification } from "./ThreadArchivedNotification";
import type { ThreadAttachmentUpdatedNotification } from "./ThreadAttachmentUpdatedNotification";
import type { ThreadClosedNotification } from "./ThreadClosedNotification";
import type { ThreadDeletedNotification } from "./ThreadDeletedNotification";
import type { ThreadNameUpdatedNotification } from "./ThreadNameUpdatedNotification";
import type { ThreadRevertedNotification } from "./ThreadRevertedNotification";
import type { ThreadStartedNotification } from "./ThreadStartedNotification";
import type { ThreadStatusChangedNotification } from "./ThreadStatusChangedNotification";
import type { ThreadTokenUsageUpdatedNotification } from "./ThreadTokenUsageUpdatedNotification";
import type { ThreadUnarchivedNotification } from "./ThreadUnarchivedNotification";
import type { TurnCompletedNotification } from "./TurnCompletedNotification";
import type { TurnStartedNotification } from "./TurnStartedNotification";

/**
 * A notification from server to client. Transports stamp `emittedAtMs` (unix milliseconds) beside `method`.
 */
export type ServerNotification =
  | { method: "thread/started", params: ThreadStartedNotification, emittedAtMs?: number, }
  | { method: "thread/status/changed", params: ThreadStatusChangedNotification, emittedAtMs?: number, }
  | { method: "thread/closed", params: ThreadClosedNotification, emittedAtMs?: number, }
  | { method: "thread/deleted", params: ThreadDeletedNotification, emittedAtMs?: number, }
  | { method: "thread/name/updated", params: ThreadNameUpdatedNotification, emittedAtMs?: number, }
  | { method: "thread/attachment/updated", params: ThreadAttachmentUpdatedNotification, emittedAtMs?: number, }
  | { method: "turn/started", params: TurnStartedNotification, emittedAtMs?: number, }
  | { method: "turn/completed", params: TurnCompletedNotification, emittedAtMs?: number, }
  | { method: "item/started", params: ItemStartedNotification, emittedAtMs?: number, }
  | { method: "item/completed", params: ItemCompletedNotification, emittedAtMs?: number, }
  | { method: "item/agentMessage/delta", params: AgentMessageDeltaNotification, emittedAtMs?: number, }
  | { method: "item/commandExecution/outputDelta", params: CommandExecutionOutputDeltaNotification, emittedAtMs?: number, }
  | { method: "serverRequest/resolved", params: ServerRequestResolvedNotification, emittedAtMs?: number, }
  | { method: "error", params: ErrorNotification, emittedAtMs?: number, }
  | { method: "process/outputDelta", params: ProcessOutputDeltaNotification, emittedAtMs?: number, }
  | { method: "process/exited", params: ProcessExitedNotification, emittedAtMs?: number, }
  | { method: "thread/archived", params: ThreadArchivedNotification, emittedAtMs?: number, }
  | { method: "thread/unarchived", params: ThreadUnarchivedNotification, emittedAtMs?: number, }
  | { method: "thread/compacted", params: ContextCompactedNotification, emittedAtMs?: number, }
  | { method: "thread/reverted", params: ThreadRevertedNotification, emittedAtMs?: number, }
  | { method: "thread/tokenUsage/updated", params: ThreadTokenUsageUpdatedNotification, emittedAtMs?: number, }
  | { method: "command/exec/outputDelta", params: CommandExecOutputDeltaNotification, emittedAtMs?: number, };
