// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { EmptyParams } from "./EmptyParams";

/**
 * A notification from client to server.
 */
export type ClientNotification =
  | { method: "initialized", params: EmptyParams, };
