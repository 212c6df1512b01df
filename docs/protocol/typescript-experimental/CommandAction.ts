// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * What a command does. Tandem does not parse commands: there is one `unknown` entry holding
 * the command text.
 */
export type CommandAction = { "type": "unknown",
/**
 * The command text.
 */
command: string, };
