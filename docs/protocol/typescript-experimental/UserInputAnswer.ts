// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * The answer to one question.
 */
export type UserInputAnswer = {
/**
 * The chosen labels or typed text.
 */
answers: Array<string>, };
