// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { FileChangeApprovalDecision } from "./FileChangeApprovalDecision";

/**
 * The client's result for `item/fileChange/requestApproval`.
 */
export type FileChangeRequestApprovalResponse = {
/**
 * The decision; unknown values read as `decline`.
 */
decision: FileChangeApprovalDecision, };
