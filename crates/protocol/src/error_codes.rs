//! The JSON-RPC error codes of docs/protocol.md section 2, shared by every transport and processor.

/// The line or frame is not valid JSON; the connection stays open and the reply id is `null`.
pub const PARSE_ERROR: i64 = -32700;
/// Not a request object, params that do not decode, or a failed precondition.
pub const INVALID_REQUEST: i64 = -32600;
/// Unknown method, or a method unavailable in this build or configuration.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// A parameter has a bad value.
pub const INVALID_PARAMS: i64 = -32602;
/// Internal error.
pub const INTERNAL_ERROR: i64 = -32603;
/// A bounded queue is full; safe to retry later.
pub const OVERLOADED: i64 = -32001;
