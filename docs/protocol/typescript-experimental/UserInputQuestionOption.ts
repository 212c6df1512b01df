// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * One option of a user-input question.
 */
export type UserInputQuestionOption = {
/**
 * Short label.
 */
label: string,
/**
 * What choosing it means.
 */
description: string, };
