// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { McpServerStartupFailureReason } from "./McpServerStartupFailureReason";
import type { McpServerStartupState } from "./McpServerStartupState";

/**
 * `mcpServer/startupStatus/updated`: a server's startup state changed. Sent to every
 * initialized connection.
 */
export type McpServerStatusUpdatedNotification = {
/**
 * Always `null`: Tandem's servers are shared by every thread.
 */
threadId: string | null,
/**
 * The server.
 */
name: string,
/**
 * Its new state.
 */
status: McpServerStartupState,
/**
 * Why it failed.
 */
error: string | null,
/**
 * Set when it failed for want of credentials.
 */
failureReason: McpServerStartupFailureReason | null, };
