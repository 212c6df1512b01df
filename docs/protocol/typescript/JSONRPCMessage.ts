// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { JSONRPCError } from "./JSONRPCError";
import type { JSONRPCNotification } from "./JSONRPCNotification";
import type { JSONRPCRequest } from "./JSONRPCRequest";
import type { JSONRPCResponse } from "./JSONRPCResponse";

/**
 * Any one message on the wire.
 */
export type JSONRPCMessage = JSONRPCRequest | JSONRPCNotification | JSONRPCResponse | JSONRPCError;
