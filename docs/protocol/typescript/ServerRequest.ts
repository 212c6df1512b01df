// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { CommandExecutionRequestApprovalParams } from "./CommandExecutionRequestApprovalParams";
import type { FileChangeRequestApprovalParams } from "./FileChangeRequestApprovalParams";
import type { McpServerElicitationRequestParams } from "./McpServerElicitationRequestParams";
import type { RequestId } from "./RequestId";
import type { ToolCallParams } from "./ToolCallParams";
import type { ToolRequestUserInputParams } from "./ToolRequestUserInputParams";

/**
 * A request from server to client; the client must answer each with a result or an error.
 */
export type ServerRequest =
  | { id: RequestId, method: "item/tool/call", params: ToolCallParams, }
  | { id: RequestId, method: "item/commandExecution/requestApproval", params: CommandExecutionRequestApprovalParams, }
  | { id: RequestId, method: "item/tool/requestUserInput", params: ToolRequestUserInputParams, }
  | { id: RequestId, method: "item/fileChange/requestApproval", params: FileChangeRequestApprovalParams, }
  | { id: RequestId, method: "mcpServer/elicitation/request", params: McpServerElicitationRequestParams, };
