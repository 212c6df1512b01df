// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { AgentMessageDeltaNotification } from "./AgentMessageDeltaNotification";
import type { CommandExecOutputDeltaNotification } from "./CommandExecOutputDeltaNotification";
import type { CommandExecutionOutputDeltaNotification } from "./CommandExecutionOutputDeltaNotification";
import type { ContextCompactedNotification } from "./ContextCompactedNotification";
import type { ErrorNotification } from "./ErrorNotification";
import type { EventCursor } from "./EventCursor";
import type { FileChangePatchUpdatedNotification } from "./FileChangePatchUpdatedNotification";
import type { FsChangedNotification } from "./FsChangedNotification";
import type { ItemCompletedNotification } from "./ItemCompletedNotification";
import type { ItemStartedNotification } from "./ItemStartedNotification";
import type { McpServerStatusUpdatedNotification } from "./McpServerStatusUpdatedNotification";
import type { McpToolCallProgressNotification } from "./McpToolCallProgressNotification";
import type { ProcessExitedNotification } from "./ProcessExitedNotification";
import type { ProcessOutputDeltaNotification } from "./ProcessOutputDeltaNotification";
import type { ReasoningSummaryPartAddedNotification } from "./ReasoningSummaryPartAddedNotification";
import type { ReasoningSummaryTextDeltaNotification } from "./ReasoningSummaryTextDeltaNotification";
import type { ReasoningTextDeltaNotification } from "./ReasoningTextDeltaNotification";
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
import type { TurnDiffUpdatedNotification } from "./TurnDiffUpdatedNotification";
import type { TurnPlanUpdatedNotification } from "./TurnPlanUpdatedNotification";
import type { TurnStartedNotification } from "./TurnStartedNotification";

/**
 * A notification from server to client. Transports stamp `emittedAtMs` (unix milliseconds) beside `method`.
 */
export type ServerNotification =
  | { method: "thread/started", params: ThreadStartedNotification, emittedAtMs?: number, cursor?: EventCursor, }
  | { method: "thread/status/changed", params: ThreadStatusChangedNotification, emittedAtMs?: number, cursor?: EventCursor, }
  | { method: "thread/closed", params: ThreadClosedNotification, emittedAtMs?: number, cursor?: EventCursor, }
  | { method: "thread/deleted", params: ThreadDeletedNotification, emittedAtMs?: number, cursor?: EventCursor, }
  | { method: "thread/name/updated", params: ThreadNameUpdatedNotification, emittedAtMs?: number, cursor?: EventCursor, }
  | { method: "thread/attachment/updated", params: ThreadAttachmentUpdatedNotification, emittedAtMs?: number, cursor?: EventCursor, }
  | { method: "turn/started", params: TurnStartedNotification, emittedAtMs?: number, cursor?: EventCursor, }
  | { method: "turn/completed", params: TurnCompletedNotification, emittedAtMs?: number, cursor?: EventCursor, }
  | { method: "item/started", params: ItemStartedNotification, emittedAtMs?: number, cursor?: EventCursor, }
  | { method: "item/completed", params: ItemCompletedNotification, emittedAtMs?: number, cursor?: EventCursor, }
  | { method: "item/agentMessage/delta", params: AgentMessageDeltaNotification, emittedAtMs?: number, cursor?: EventCursor, }
  | { method: "item/commandExecution/outputDelta", params: CommandExecutionOutputDeltaNotification, emittedAtMs?: number, cursor?: EventCursor, }
  | { method: "serverRequest/resolved", params: ServerRequestResolvedNotification, emittedAtMs?: number, cursor?: EventCursor, }
  | { method: "error", params: ErrorNotification, emittedAtMs?: number, cursor?: EventCursor, }
  | { method: "process/outputDelta", params: ProcessOutputDeltaNotification, emittedAtMs?: number, cursor?: EventCursor, }
  | { method: "process/exited", params: ProcessExitedNotification, emittedAtMs?: number, cursor?: EventCursor, }
  | { method: "thread/archived", params: ThreadArchivedNotification, emittedAtMs?: number, cursor?: EventCursor, }
  | { method: "thread/unarchived", params: ThreadUnarchivedNotification, emittedAtMs?: number, cursor?: EventCursor, }
  | { method: "thread/compacted", params: ContextCompactedNotification, emittedAtMs?: number, cursor?: EventCursor, }
  | { method: "thread/reverted", params: ThreadRevertedNotification, emittedAtMs?: number, cursor?: EventCursor, }
  | { method: "thread/tokenUsage/updated", params: ThreadTokenUsageUpdatedNotification, emittedAtMs?: number, cursor?: EventCursor, }
  | { method: "command/exec/outputDelta", params: CommandExecOutputDeltaNotification, emittedAtMs?: number, cursor?: EventCursor, }
  | { method: "fs/changed", params: FsChangedNotification, emittedAtMs?: number, cursor?: EventCursor, }
  | { method: "turn/plan/updated", params: TurnPlanUpdatedNotification, emittedAtMs?: number, cursor?: EventCursor, }
  | { method: "item/reasoning/summaryPartAdded", params: ReasoningSummaryPartAddedNotification, emittedAtMs?: number, cursor?: EventCursor, }
  | { method: "item/reasoning/summaryTextDelta", params: ReasoningSummaryTextDeltaNotification, emittedAtMs?: number, cursor?: EventCursor, }
  | { method: "item/reasoning/textDelta", params: ReasoningTextDeltaNotification, emittedAtMs?: number, cursor?: EventCursor, }
  | { method: "item/fileChange/patchUpdated", params: FileChangePatchUpdatedNotification, emittedAtMs?: number, cursor?: EventCursor, }
  | { method: "turn/diff/updated", params: TurnDiffUpdatedNotification, emittedAtMs?: number, cursor?: EventCursor, }
  | { method: "mcpServer/startupStatus/updated", params: McpServerStatusUpdatedNotification, emittedAtMs?: number, cursor?: EventCursor, }
  | { method: "item/mcpToolCall/progress", params: McpToolCallProgressNotification, emittedAtMs?: number, cursor?: EventCursor, };
