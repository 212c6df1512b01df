// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { CommandAction } from "./CommandAction";
import type { CommandExecutionSource } from "./CommandExecutionSource";
import type { CommandExecutionStatus } from "./CommandExecutionStatus";
import type { DynamicToolCallOutputContentItem } from "./DynamicToolCallOutputContentItem";
import type { DynamicToolCallStatus } from "./DynamicToolCallStatus";
import type { FileUpdateChange } from "./FileUpdateChange";
import type { JsonValue } from "./JsonValue";
import type { McpToolCallError } from "./McpToolCallError";
import type { McpToolCallResult } from "./McpToolCallResult";
import type { McpToolCallStatus } from "./McpToolCallStatus";
import type { PatchApplyStatus } from "./PatchApplyStatus";
import type { UserInput } from "./UserInput";

/**
 * One item of a turn, tagged on `type`.
 */
export type ThreadItem = { "type": "userMessage",
/**
 * Item id.
 */
id: string,
/**
 * The input, as given.
 */
content: Array<UserInput>,
/**
 * Echoes the `clientUserMessageId` of `turn/start` or `turn/steer`.
 */
clientId: string | null, } | { "type": "agentMessage",
/**
 * Item id.
 */
id: string,
/**
 * The message text.
 */
text: string, } | { "type": "commandExecution",
/**
 * Item id; also the `itemId` of its approval request.
 */
id: string,
/**
 * The command, shell-quoted.
 */
command: string,
/**
 * Working directory.
 */
cwd: string,
/**
 * Current status.
 */
status: CommandExecutionStatus,
/**
 * One `unknown` action holding the command.
 */
commandActions: Array<CommandAction>,
/**
 * The process id, once running.
 */
processId: string | null,
/**
 * Exit code, once exited.
 */
exitCode: number | null,
/**
 * Combined output, once available.
 */
aggregatedOutput: string | null,
/**
 * Run time in milliseconds, once finished.
 */
durationMs: number | null,
/**
 * Who ran it: the agent, or the user (`thread/shellCommand`).
 */
source: CommandExecutionSource, } | { "type": "dynamicToolCall",
/**
 * Item id; also the `callId` of its `item/tool/call` request.
 */
id: string,
/**
 * Tool name.
 */
tool: string,
/**
 * Tool namespace, if any.
 */
namespace: string | null,
/**
 * Arguments chosen by the model.
 */
arguments: JsonValue,
/**
 * Current status.
 */
status: DynamicToolCallStatus,
/**
 * The client's output, once answered.
 */
contentItems: Array<DynamicToolCallOutputContentItem> | null,
/**
 * Whether the call succeeded, once finished.
 */
success: boolean | null,
/**
 * Duration in milliseconds, once finished.
 */
durationMs: number | null, } | { "type": "contextCompaction",
/**
 * Item id: `<turn id>-compaction`.
 */
id: string, } | { "type": "reasoning",
/**
 * Item id.
 */
id: string,
/**
 * The summary, one string per part (`item/reasoning/summaryPartAdded`).
 */
summary: Array<string>,
/**
 * The reasoning text, one string per part (`item/reasoning/textDelta`).
 */
content: Array<string>, } | { "type": "fileChange",
/**
 * Item id; also the `itemId` of its approval request.
 */
id: string,
/**
 * Every file of the patch, with its diff.
 */
changes: Array<FileUpdateChange>,
/**
 * Current status.
 */
status: PatchApplyStatus, } | { "type": "mcpToolCall",
/**
 * Item id; also the `itemId` of its progress notifications.
 */
id: string,
/**
 * The `NAME` of `[mcp_servers.NAME]`.
 */
server: string,
/**
 * The tool, as the server names it.
 */
tool: string,
/**
 * Current status.
 */
status: McpToolCallStatus,
/**
 * Arguments chosen by the model.
 */
arguments: JsonValue,
/**
 * What the server answered, once it did.
 */
result: McpToolCallResult | null,
/**
 * Why the call failed, when it did.
 */
error: McpToolCallError | null,
/**
 * Duration in milliseconds, once finished.
 */
durationMs: number | null, };
