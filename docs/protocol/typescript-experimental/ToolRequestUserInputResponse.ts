// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { UserInputAnswer } from "./UserInputAnswer";

/**
 * The client's result for `item/tool/requestUserInput`.
 */
export type ToolRequestUserInputResponse = {
/**
 * Answers by question id.
 */
answers: { [key in string]: UserInputAnswer }, };
