// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `approvalPolicy`: whether the agent asks the client before running a command.
 *
 * Output uses only the two canonical spellings. Input also accepts the spellings of existing
 * clients, all of which mean `ApprovalPolicy::OnRequest` because Tandem has no finer
 * policy: `"untrusted"`, `"on-failure"`, `"onRequest"` and `{"granular": {...}}`.
 */
export type ApprovalPolicy = "never" | "on-request";
