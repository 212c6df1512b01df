// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { McpServerStatus } from "./McpServerStatus";

/**
 * `mcpServerStatus/list` result.
 */
export type ListMcpServerStatusResponse = {
/**
 * Every configured server (or the one asked for), by name.
 */
data: Array<McpServerStatus>,
/**
 * Always `null`: one page.
 */
nextCursor: string | null, };
