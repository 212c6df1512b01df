// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `sandbox` of the session settings. Tandem does not sandbox commands, so the only value is
 * `{"type": "dangerFullAccess"}`.
 */
export type SandboxPolicy = { "type": "dangerFullAccess" };
