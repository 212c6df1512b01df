// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { UserInputQuestionOption } from "./UserInputQuestionOption";

/**
 * One question of `item/tool/requestUserInput`.
 */
export type UserInputQuestion = {
/**
 * Key of the answer in the result.
 */
id: string,
/**
 * Short header.
 */
header: string,
/**
 * The question.
 */
question: string,
/**
 * Always `false`.
 */
isOther: boolean,
/**
 * Always `false`.
 */
isSecret: boolean,
/**
 * Choices, or `null` for free text.
 */
options: Array<UserInputQuestionOption> | null, };
