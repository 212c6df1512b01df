// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { JsonValue } from "./JsonValue";
import type { RequestId } from "./RequestId";

/**
 * `{id, result}`.
 */
export type JSONRPCResponse = {
/**
 * The id of the request this answers.
 */
id: RequestId,
/**
 * The method's result object.
 */
result: JsonValue, };
