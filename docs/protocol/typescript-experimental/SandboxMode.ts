// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `thread/start.sandbox` (and `thread/resume`, `thread/fork`): the policy asked for by name,
 * with every option of `SandboxPolicy` at its default.
 */
export type SandboxMode = "read-only" | "workspace-write" | "danger-full-access";
