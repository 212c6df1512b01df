// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * Token counts of one model request, or of a whole thread.
 */
export type TokenUsageBreakdown = {
/**
 * Every token, input and output.
 */
totalTokens: number,
/**
 * Input (prompt) tokens, cached ones included.
 */
inputTokens: number,
/**
 * Input tokens the provider served from its cache.
 */
cachedInputTokens: number,
/**
 * Input tokens written to the provider's cache (0 where not reported).
 */
cacheWriteInputTokens: number,
/**
 * Output (completion) tokens, reasoning included.
 */
outputTokens: number,
/**
 * Output tokens spent on reasoning.
 */
reasoningOutputTokens: number, };
