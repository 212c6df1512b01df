// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `approvalsReviewer` of the session settings: who answers approvals. Always `"user"`.
 */
export type ApprovalsReviewer = "user";
