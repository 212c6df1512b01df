// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { McpServerStatusDetail } from "./McpServerStatusDetail";

/**
 * `mcpServerStatus/list` params. Every member is optional.
 */
export type ListMcpServerStatusParams = {
/**
 * A `nextCursor` of an earlier page (Tandem answers in one page, so never needed).
 */
cursor?: string | null,
/**
 * Page size (accepted; Tandem answers every server at once).
 */
limit?: number | null,
/**
 * How much to report (default `full`).
 */
detail?: McpServerStatusDetail | null,
/**
 * Only this server.
 */
serverName?: string | null,
/**
 * Accepted: Tandem's servers are shared by every thread, so the answer is the same.
 */
threadId?: string | null, };
