// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * Where a connection comes from; stamped on threads as `source`.
 */
export type SessionSource = "cli" | "vscode" | "exec" | "appServer" | "unknown" | { "custom": string };
