// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { CommandExecParams } from "./CommandExecParams";
import type { CommandExecResizeParams } from "./CommandExecResizeParams";
import type { CommandExecTerminateParams } from "./CommandExecTerminateParams";
import type { CommandExecWriteParams } from "./CommandExecWriteParams";
import type { ConfigBatchWriteParams } from "./ConfigBatchWriteParams";
import type { ConfigReadParams } from "./ConfigReadParams";
import type { ConfigValueWriteParams } from "./ConfigValueWriteParams";
import type { EmptyParams } from "./EmptyParams";
import type { FsCopyParams } from "./FsCopyParams";
import type { FsCreateDirectoryParams } from "./FsCreateDirectoryParams";
import type { FsGetMetadataParams } from "./FsGetMetadataParams";
import type { FsReadDirectoryParams } from "./FsReadDirectoryParams";
import type { FsReadFileParams } from "./FsReadFileParams";
import type { FsRemoveParams } from "./FsRemoveParams";
import type { FsUnwatchParams } from "./FsUnwatchParams";
import type { FsWatchParams } from "./FsWatchParams";
import type { FsWriteFileParams } from "./FsWriteFileParams";
import type { FuzzyFileSearchParams } from "./FuzzyFileSearchParams";
import type { GetAccountParams } from "./GetAccountParams";
import type { InitializeParams } from "./InitializeParams";
import type { ListMcpServerStatusParams } from "./ListMcpServerStatusParams";
import type { McpResourceReadParams } from "./McpResourceReadParams";
import type { McpServerToolCallParams } from "./McpServerToolCallParams";
import type { ModelListParams } from "./ModelListParams";
import type { RequestId } from "./RequestId";
import type { ThreadArchiveParams } from "./ThreadArchiveParams";
import type { ThreadAttachmentAddParams } from "./ThreadAttachmentAddParams";
import type { ThreadAttachmentListParams } from "./ThreadAttachmentListParams";
import type { ThreadAttachmentRemoveParams } from "./ThreadAttachmentRemoveParams";
import type { ThreadCompactStartParams } from "./ThreadCompactStartParams";
import type { ThreadDeleteParams } from "./ThreadDeleteParams";
import type { ThreadForkParams } from "./ThreadForkParams";
import type { ThreadItemsListParams } from "./ThreadItemsListParams";
import type { ThreadListParams } from "./ThreadListParams";
import type { ThreadLoadedListParams } from "./ThreadLoadedListParams";
import type { ThreadNameSetParams } from "./ThreadNameSetParams";
import type { ThreadReadParams } from "./ThreadReadParams";
import type { ThreadResumeParams } from "./ThreadResumeParams";
import type { ThreadRevertParams } from "./ThreadRevertParams";
import type { ThreadRollbackParams } from "./ThreadRollbackParams";
import type { ThreadShellCommandParams } from "./ThreadShellCommandParams";
import type { ThreadStartParams } from "./ThreadStartParams";
import type { ThreadTurnsListParams } from "./ThreadTurnsListParams";
import type { ThreadUnarchiveParams } from "./ThreadUnarchiveParams";
import type { ThreadUnsubscribeParams } from "./ThreadUnsubscribeParams";
import type { TurnInterruptParams } from "./TurnInterruptParams";
import type { TurnStartParams } from "./TurnStartParams";
import type { TurnSteerParams } from "./TurnSteerParams";

/**
 * A request from client to server: one object per method, discriminated by `method`.
 */
export type ClientRequest =
  | { id: RequestId, method: "initialize", params: InitializeParams, }
  | { id: RequestId, method: "config/read", params: ConfigReadParams, }
  | { id: RequestId, method: "thread/start", params: ThreadStartParams, }
  | { id: RequestId, method: "thread/resume", params: ThreadResumeParams, }
  | { id: RequestId, method: "thread/read", params: ThreadReadParams, }
  | { id: RequestId, method: "thread/list", params: ThreadListParams, }
  | { id: RequestId, method: "thread/loaded/list", params: ThreadLoadedListParams, }
  | { id: RequestId, method: "thread/turns/list", params: ThreadTurnsListParams, }
  | { id: RequestId, method: "thread/unsubscribe", params: ThreadUnsubscribeParams, }
  | { id: RequestId, method: "thread/name/set", params: ThreadNameSetParams, }
  | { id: RequestId, method: "thread/fork", params: ThreadForkParams, }
  | { id: RequestId, method: "thread/delete", params: ThreadDeleteParams, }
  | { id: RequestId, method: "thread/attachment/add", params: ThreadAttachmentAddParams, }
  | { id: RequestId, method: "thread/attachment/remove", params: ThreadAttachmentRemoveParams, }
  | { id: RequestId, method: "turn/start", params: TurnStartParams, }
  | { id: RequestId, method: "turn/steer", params: TurnSteerParams, }
  | { id: RequestId, method: "turn/interrupt", params: TurnInterruptParams, }
  | { id: RequestId, method: "thread/archive", params: ThreadArchiveParams, }
  | { id: RequestId, method: "thread/unarchive", params: ThreadUnarchiveParams, }
  | { id: RequestId, method: "thread/compact/start", params: ThreadCompactStartParams, }
  | { id: RequestId, method: "thread/revert", params: ThreadRevertParams, }
  | { id: RequestId, method: "thread/rollback", params: ThreadRollbackParams, }
  | { id: RequestId, method: "thread/attachment/list", params: ThreadAttachmentListParams, }
  | { id: RequestId, method: "model/list", params: ModelListParams, }
  | { id: RequestId, method: "account/read", params: GetAccountParams, }
  | { id: RequestId, method: "config/value/write", params: ConfigValueWriteParams, }
  | { id: RequestId, method: "config/batchWrite", params: ConfigBatchWriteParams, }
  | { id: RequestId, method: "thread/items/list", params: ThreadItemsListParams, }
  | { id: RequestId, method: "command/exec", params: CommandExecParams, }
  | { id: RequestId, method: "command/exec/write", params: CommandExecWriteParams, }
  | { id: RequestId, method: "command/exec/terminate", params: CommandExecTerminateParams, }
  | { id: RequestId, method: "command/exec/resize", params: CommandExecResizeParams, }
  | { id: RequestId, method: "fs/readFile", params: FsReadFileParams, }
  | { id: RequestId, method: "fs/writeFile", params: FsWriteFileParams, }
  | { id: RequestId, method: "fs/createDirectory", params: FsCreateDirectoryParams, }
  | { id: RequestId, method: "fs/getMetadata", params: FsGetMetadataParams, }
  | { id: RequestId, method: "fs/readDirectory", params: FsReadDirectoryParams, }
  | { id: RequestId, method: "fs/remove", params: FsRemoveParams, }
  | { id: RequestId, method: "fs/copy", params: FsCopyParams, }
  | { id: RequestId, method: "fs/watch", params: FsWatchParams, }
  | { id: RequestId, method: "fs/unwatch", params: FsUnwatchParams, }
  | { id: RequestId, method: "fuzzyFileSearch", params: FuzzyFileSearchParams, }
  | { id: RequestId, method: "thread/shellCommand", params: ThreadShellCommandParams, }
  | { id: RequestId, method: "mcpServerStatus/list", params: ListMcpServerStatusParams, }
  | { id: RequestId, method: "mcpServer/tool/call", params: McpServerToolCallParams, }
  | { id: RequestId, method: "mcpServer/resource/read", params: McpResourceReadParams, }
  | { id: RequestId, method: "config/mcpServer/reload", params: EmptyParams, };
