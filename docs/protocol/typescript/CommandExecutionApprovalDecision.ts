// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * A decision on a command approval.
 *
 * Decoding is lenient: any value other than the four listed decodes as
 * `CommandExecutionApprovalDecision::Decline`, because docs/protocol.md counts any other answer
 * as a refusal rather than as an invalid reply.
 */
export type CommandExecutionApprovalDecision = "accept" | "acceptForSession" | "decline" | "cancel";
