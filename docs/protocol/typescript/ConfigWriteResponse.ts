// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { JsonValue } from "./JsonValue";
import type { WriteStatus } from "./WriteStatus";

/**
 * `config/value/write` and `config/batchWrite` result.
 */
export type ConfigWriteResponse = {
/**
 * Whether the value is in effect.
 */
status: WriteStatus,
/**
 * The file's new version, `sha256:<hex of its bytes>`: pass it as `expectedVersion`.
 */
version: string,
/**
 * The file written (absolute).
 */
filePath: string,
/**
 * What overrides the written value, with `okOverridden`; else `null`.
 */
overriddenMetadata: JsonValue | null, };
