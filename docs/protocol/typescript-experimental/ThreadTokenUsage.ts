// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { TokenUsageBreakdown } from "./TokenUsageBreakdown";

/**
 * A thread's token usage.
 */
export type ThreadTokenUsage = {
/**
 * Every model request of the thread since it was loaded in this server.
 */
total: TokenUsageBreakdown,
/**
 * The latest model request.
 */
last: TokenUsageBreakdown,
/**
 * The model's context window; `null` (providers do not report it).
 */
modelContextWindow: number | null, };
