// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { JsonValue } from "./JsonValue";

/**
 * `{method, params?}`; server notifications also carry `emittedAtMs`.
 */
export type JSONRPCNotification = {
/**
 * The notification method, e.g. `turn/completed`.
 */
method: string,
/**
 * Notification parameters; omitted and `null` both mean `{}`.
 */
params?: JsonValue | null,
/**
 * Unix milliseconds at which the server emitted the notification (server to client only).
 */
emittedAtMs?: number | null, };
