// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { CommandAction } from "./CommandAction";
import type { CommandExecutionApprovalDecision } from "./CommandExecutionApprovalDecision";

/**
 * `item/commandExecution/requestApproval` params.
 */
export type CommandExecutionRequestApprovalParams = {
/**
 * The thread.
 */
threadId: string,
/**
 * The turn.
 */
turnId: string,
/**
 * The id of the `commandExecution` item.
 */
itemId: string,
/**
 * When the request was made, unix milliseconds.
 */
startedAtMs: number,
/**
 * The command, shell-quoted.
 */
command: string,
/**
 * Working directory.
 */
cwd: string,
/**
 * Why the agent wants to run it, if it said.
 */
reason: string | null,
/**
 * One `unknown` action holding the command.
 */
commandActions: Array<CommandAction>,
/**
 * All four decisions, sent only to a connection that opted in to the experimental API
 * (the reference's stable schema has no such member, and typed stable clients reject
 * the values); `None` is omitted on the wire.
 */
availableDecisions?: Array<CommandExecutionApprovalDecision> | null, };
