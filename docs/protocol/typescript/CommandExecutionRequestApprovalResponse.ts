// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { CommandExecutionApprovalDecision } from "./CommandExecutionApprovalDecision";

/**
 * The client's result for `item/commandExecution/requestApproval`.
 */
export type CommandExecutionRequestApprovalResponse = {
/**
 * The decision; unknown values read as `decline`.
 */
decision: CommandExecutionApprovalDecision, };
