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
 * The decisions a client may offer: experimental and optional in the reference. Tandem's
 * server never sends it, since its approvals always offer all four (docs/protocol.md,
 * section 12); the client reads it from other servers. `None` is omitted on the wire.
 */
availableDecisions?: Array<CommandExecutionApprovalDecision> | null, };
