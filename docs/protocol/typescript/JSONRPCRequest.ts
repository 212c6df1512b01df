// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { JsonValue } from "./JsonValue";
import type { RequestId } from "./RequestId";

/**
 * `{id, method, params?}`.
 */
export type JSONRPCRequest = {
/**
 * Correlates the response with this request.
 */
id: RequestId,
/**
 * The method name, e.g. `thread/start`.
 */
method: string,
/**
 * Method parameters; omitted and `null` both mean `{}`.
 */
params?: JsonValue | null, };
