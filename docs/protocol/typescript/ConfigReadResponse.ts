// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { JsonValue } from "./JsonValue";

/**
 * `config/read` result.
 */
export type ConfigReadResponse = {
/**
 * Effective configuration under its config-file (snake_case) keys.
 */
config: JsonValue,
/**
 * Always `{}`.
 */
origins: JsonValue,
/**
 * Always `null`.
 */
layers: JsonValue | null, };
