// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { ServerInfo } from "./ServerInfo";

/**
 * `initialize` result.
 */
export type InitializeResponse = {
/**
 * Names the server and the client.
 */
userAgent: string,
/**
 * `unix` or `windows`.
 */
platformFamily: string,
/**
 * e.g. `linux`, `macos`, `windows`.
 */
platformOs: string,
/**
 * Absolute path of the server's home directory.
 */
tandemHome: string,
/**
 * Server name and version.
 */
serverInfo: ServerInfo, };
