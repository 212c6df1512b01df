// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * A decision on a file change approval.
 *
 * Decoding is lenient, as for commands: any value other than the four listed (and the other
 * clients' words for them) decodes as `FileChangeApprovalDecision::Decline`.
 */
export type FileChangeApprovalDecision = "accept" | "acceptForSession" | "decline" | "cancel";
