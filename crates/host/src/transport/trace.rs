//! The wire trace: every JSON message a wire connection reads or writes, logged through
//! `tracing` at TRACE level under the target [`WIRE_TRACE_TARGET`] (`tandem::wire`), with the
//! connection's id and the direction, so that what a client and the server said to each other
//! can be read back. It is the bytes as framed (one line, or one websocket text frame), without
//! the newline; a frame that is not UTF-8 is shown lossily.
//!
//! It lives in the transports, beside the framing, because only they see the JSON: the
//! in-process host passes typed messages and has no wire to trace. The subscriber decides where
//! the trace goes (`tandem` writes it to stderr or to `--trace-file`, never to stdout, which is
//! the stdio transport's wire). Disabled, each call is one cached level check.

use crate::processor::ConnectionId;

/// The `tracing` target of the wire trace: `TANDEM_LOG=tandem::wire=trace` turns it on.
pub const WIRE_TRACE_TARGET: &str = "tandem::wire";

/// Whether the wire trace is on (a message written in parts is then written whole instead, so
/// that it is logged as one line).
pub(crate) fn enabled() -> bool {
    tracing::enabled!(target: WIRE_TRACE_TARGET, tracing::Level::TRACE)
}

/// Logs a frame read from `connection`.
pub(crate) fn inbound(connection: ConnectionId, frame: &[u8]) {
    if tracing::enabled!(target: WIRE_TRACE_TARGET, tracing::Level::TRACE) {
        tracing::trace!(
            target: WIRE_TRACE_TARGET,
            "connection {} in  {}",
            connection.0,
            String::from_utf8_lossy(frame).trim_end()
        );
    }
}

/// Logs a frame about to be written to `connection` (encoded, without its framing).
pub(crate) fn outbound(connection: ConnectionId, frame: &[u8]) {
    if tracing::enabled!(target: WIRE_TRACE_TARGET, tracing::Level::TRACE) {
        tracing::trace!(
            target: WIRE_TRACE_TARGET,
            "connection {} out {}",
            connection.0,
            String::from_utf8_lossy(frame).trim_end()
        );
    }
}
