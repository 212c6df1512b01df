// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { UserInputQuestion } from "./UserInputQuestion";

/**
 * `item/tool/requestUserInput` params.
 */
export type ToolRequestUserInputParams = {
/**
 * The thread.
 */
threadId: string,
/**
 * The turn.
 */
turnId: string,
/**
 * Names this request only; no item carries it.
 */
itemId: string,
/**
 * Always `true`.
 */
isBlocking: boolean,
/**
 * The questions.
 */
questions: Array<UserInputQuestion>, };
