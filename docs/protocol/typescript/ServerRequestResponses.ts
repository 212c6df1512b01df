// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { CommandExecutionRequestApprovalResponse } from "./CommandExecutionRequestApprovalResponse";
import type { FileChangeRequestApprovalResponse } from "./FileChangeRequestApprovalResponse";
import type { McpServerElicitationRequestResponse } from "./McpServerElicitationRequestResponse";
import type { ToolCallResponse } from "./ToolCallResponse";
import type { ToolRequestUserInputResponse } from "./ToolRequestUserInputResponse";

/**
 * The result type of each ServerRequest method, by method name: the `result` of a successful response to that request. A lookup table, not a message.
 */
export type ServerRequestResponses = {
  "item/tool/call": ToolCallResponse,
  "item/commandExecution/requestApproval": CommandExecutionRequestApprovalResponse,
  "item/tool/requestUserInput": ToolRequestUserInputResponse,
  "item/fileChange/requestApproval": FileChangeRequestApprovalResponse,
  "mcpServer/elicitation/request": McpServerElicitationRequestResponse,
};
