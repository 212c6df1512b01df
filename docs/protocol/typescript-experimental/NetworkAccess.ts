// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * Whether a sandboxed command may reach the network: `networkAccess` of
 * `SandboxPolicy::ExternalSandbox`, which only reports what the outer sandbox allows.
 */
export type NetworkAccess = "restricted" | "enabled";
