// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { CommandExecResponse } from "./CommandExecResponse";
import type { ConfigReadResponse } from "./ConfigReadResponse";
import type { ConfigWriteResponse } from "./ConfigWriteResponse";
import type { EmptyResponse } from "./EmptyResponse";
import type { FsGetMetadataResponse } from "./FsGetMetadataResponse";
import type { FsReadDirectoryResponse } from "./FsReadDirectoryResponse";
import type { FsReadFileResponse } from "./FsReadFileResponse";
import type { FsWatchResponse } from "./FsWatchResponse";
import type { FuzzyFileSearchResponse } from "./FuzzyFileSearchResponse";
import type { GetAccountResponse } from "./GetAccountResponse";
import type { InitializeResponse } from "./InitializeResponse";
import type { ListMcpServerStatusResponse } from "./ListMcpServerStatusResponse";
import type { McpResourceReadResponse } from "./McpResourceReadResponse";
import type { McpServerToolCallResponse } from "./McpServerToolCallResponse";
import type { ModelListResponse } from "./ModelListResponse";
import type { ThreadAttachmentAddResponse } from "./ThreadAttachmentAddResponse";
import type { ThreadAttachmentListResponse } from "./ThreadAttachmentListResponse";
import type { ThreadForkResponse } from "./ThreadForkResponse";
import type { ThreadItemsListResponse } from "./ThreadItemsListResponse";
import type { ThreadListResponse } from "./ThreadListResponse";
import type { ThreadLoadedListResponse } from "./ThreadLoadedListResponse";
import type { ThreadReadResponse } from "./ThreadReadResponse";
import type { ThreadResumeResponse } from "./ThreadResumeResponse";
import type { ThreadRevertResponse } from "./ThreadRevertResponse";
import type { ThreadRollbackResponse } from "./ThreadRollbackResponse";
import type { ThreadStartResponse } from "./ThreadStartResponse";
import type { ThreadTurnsListResponse } from "./ThreadTurnsListResponse";
import type { ThreadUnarchiveResponse } from "./ThreadUnarchiveResponse";
import type { ThreadUnsubscribeResponse } from "./ThreadUnsubscribeResponse";
import type { TurnStartResponse } from "./TurnStartResponse";
import type { TurnSteerResponse } from "./TurnSteerResponse";

/**
 * The result type of each ClientRequest method, by method name: the `result` of a successful response to that request. A lookup table, not a message.
 */
export type ClientRequestResponses = {
  "initialize": InitializeResponse,
  "config/read": ConfigReadResponse,
  "thread/start": ThreadStartResponse,
  "thread/resume": ThreadResumeResponse,
  "thread/read": ThreadReadResponse,
  "thread/list": ThreadListResponse,
  "thread/loaded/list": ThreadLoadedListResponse,
  "thread/turns/list": ThreadTurnsListResponse,
  "thread/unsubscribe": ThreadUnsubscribeResponse,
  "thread/name/set": EmptyResponse,
  "thread/fork": ThreadForkResponse,
  "thread/delete": EmptyResponse,
  "thread/attachment/add": ThreadAttachmentAddResponse,
  "thread/attachment/remove": EmptyResponse,
  "turn/start": TurnStartResponse,
  "turn/steer": TurnSteerResponse,
  "turn/interrupt": EmptyResponse,
  "thread/archive": EmptyResponse,
  "thread/unarchive": ThreadUnarchiveResponse,
  "thread/compact/start": EmptyResponse,
  "thread/revert": ThreadRevertResponse,
  "thread/rollback": ThreadRollbackResponse,
  "thread/attachment/list": ThreadAttachmentListResponse,
  "model/list": ModelListResponse,
  "account/read": GetAccountResponse,
  "config/value/write": ConfigWriteResponse,
  "config/batchWrite": ConfigWriteResponse,
  "thread/items/list": ThreadItemsListResponse,
  "command/exec": CommandExecResponse,
  "command/exec/write": EmptyResponse,
  "command/exec/terminate": EmptyResponse,
  "command/exec/resize": EmptyResponse,
  "fs/readFile": FsReadFileResponse,
  "fs/writeFile": EmptyResponse,
  "fs/createDirectory": EmptyResponse,
  "fs/getMetadata": FsGetMetadataResponse,
  "fs/readDirectory": FsReadDirectoryResponse,
  "fs/remove": EmptyResponse,
  "fs/copy": EmptyResponse,
  "fs/watch": FsWatchResponse,
  "fs/unwatch": EmptyResponse,
  "fuzzyFileSearch": FuzzyFileSearchResponse,
  "thread/shellCommand": EmptyResponse,
  "mcpServerStatus/list": ListMcpServerStatusResponse,
  "mcpServer/tool/call": McpServerToolCallResponse,
  "mcpServer/resource/read": McpResourceReadResponse,
  "config/mcpServer/reload": EmptyResponse,
};
