// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { JsonValue } from "./JsonValue";

/**
 * One piece of user input, tagged on `type`. Only `text` belongs to the protocol.
 *
 * On input the server also recognises the input types of existing clients (`image`,
 * `localImage`, `audio`, `localAudio`, `skill`, `mention`) and answers them with -32602
 * `unsupported input type: X`; they are not part of this schema.
 */
export type UserInput = { "type": "text",
/**
 * The text.
 */
text: string,
/**
 * UI annotations of existing clients. Always `[]` on output; on input any array is
 * accepted (or the member omitted) and dropped.
 */
text_elements: Array<JsonValue>, };
