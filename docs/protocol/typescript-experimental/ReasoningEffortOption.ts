// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * One reasoning effort a model accepts.
 */
export type ReasoningEffortOption = {
/**
 * The effort's name (non-empty).
 */
reasoningEffort: string,
/**
 * What it means.
 */
description: string, };
