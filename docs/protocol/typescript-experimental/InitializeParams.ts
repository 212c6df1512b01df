// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { ClientInfo } from "./ClientInfo";
import type { InitializeCapabilities } from "./InitializeCapabilities";

/**
 * `initialize` params.
 */
export type InitializeParams = {
/**
 * Who the client is.
 */
clientInfo: ClientInfo,
/**
 * What the client opts in to or out of; may be `null`.
 */
capabilities?: InitializeCapabilities | null, };
