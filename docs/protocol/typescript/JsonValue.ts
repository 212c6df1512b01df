// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

export type JsonValue = number | string | boolean | Array<JsonValue> | { [key in string]: JsonValue } | null;
