// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { JsonValue } from "./JsonValue";
import type { MergeStrategy } from "./MergeStrategy";

/**
 * One edit of `config/batchWrite`.
 */
export type ConfigEdit = {
/**
 * Dotted key (`model`, `model_providers.local.base_url`; quote a segment holding a dot).
 */
keyPath: string,
/**
 * The JSON value to write; `null` removes the key.
 */
value: JsonValue,
/**
 * How the value combines with what is there.
 */
mergeStrategy: MergeStrategy, };
