// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { JsonValue } from "./JsonValue";

/**
 * The `error` member of an error response.
 */
export type JSONRPCErrorError = {
/**
 * One of the codes in `crate::error_codes`.
 */
code: number,
/**
 * A human-readable explanation.
 */
message: string,
/**
 * Optional structured detail.
 */
data?: JsonValue | null, };
