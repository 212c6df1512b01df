// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { ImageDetail } from "./ImageDetail";
import type { JsonValue } from "./JsonValue";

/**
 * One piece of user input, tagged on `type`: `text`, `image` (a `data:` URL) or `localImage`.
 *
 * On input the server also recognises the other input types of existing clients (`audio`,
 * `localAudio`, `skill`, `mention`, an `image` by `fileId`) and answers them with -32602
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
text_elements: Array<JsonValue>, } | { "type": "image",
/**
 * The `data:` URL.
 */
url: string,
/**
 * How closely the model should look; `null` leaves it to the model.
 */
detail: ImageDetail | null, } | { "type": "localImage",
/**
 * The file's path.
 */
path: string,
/**
 * How closely the model should look; `null` leaves it to the model.
 */
detail: ImageDetail | null, };
