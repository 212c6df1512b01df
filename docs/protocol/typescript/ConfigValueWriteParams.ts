// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { JsonValue } from "./JsonValue";
import type { MergeStrategy } from "./MergeStrategy";

/**
 * `config/value/write` params.
 */
export type ConfigValueWriteParams = {
/**
 * Dotted key.
 */
keyPath: string,
/**
 * The JSON value to write; `null` removes the key.
 */
value: JsonValue,
/**
 * How the value combines with what is there.
 */
mergeStrategy: MergeStrategy,
/**
 * The config file; only the home's `config.toml` is writable.
 */
filePath?: string | null,
/**
 * Write only if the file's `version` is still this one.
 */
expectedVersion?: string | null, };
