// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `serverInfo` of the `initialize` result.
 */
export type ServerInfo = {
/**
 * Server name.
 */
name: string,
/**
 * Server version.
 */
version: string, };
