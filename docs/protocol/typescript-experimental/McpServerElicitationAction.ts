// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * The user's answer to an elicitation.
 */
export type McpServerElicitationAction = "accept" | "decline" | "cancel";
