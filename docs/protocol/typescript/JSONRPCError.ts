// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { JSONRPCErrorError } from "./JSONRPCErrorError";
import type { RequestId } from "./RequestId";

/**
 * `{id, error: {code, message, data?}}`; `id` is `null` only for a parse error.
 */
export type JSONRPCError = {
/**
 * The id of the request this answers, or `None` when the request could not be read.
 */
id: RequestId | null,
/**
 * What went wrong.
 */
error: JSONRPCErrorError, };
