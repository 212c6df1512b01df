// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * One content item of a dynamic tool call's output: `{type: "inputText", text}`.
 */
export type DynamicToolCallOutputContentItem = { "type": "inputText",
/**
 * The text.
 */
text: string, };
