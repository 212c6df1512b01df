// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { RequestId } from "./RequestId";

/**
 * `serverRequest/resolved` params: a server request was answered or cancelled.
 */
export type ServerRequestResolvedNotification = {
/**
 * The thread.
 */
threadId: string,
/**
 * The turn, so that turn-scoped subscribers see it.
 */
turnId: string,
/**
 * The server request's id.
 */
requestId: RequestId, };
