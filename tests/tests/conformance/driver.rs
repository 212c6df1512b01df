//! The one interface every transport offers the scenarios: frames of bytes out, server
//! messages as JSON in. Scenarios are written against [`Driver`] only, so each of them runs
//! unchanged, and is compared as JSON, on every transport.
//!
//! No driver reads ahead in the background: a message is taken from the transport only when
//! [`Driver::recv`] is called. A scenario that stops calling it is a client that stops
//! reading, and the server sees real backpressure (a full event queue in-process, a full pipe
//! or socket over the wire).

use async_trait::async_trait;
use serde_json::Value;

/// Why a driver could not do what a scenario asked.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DriverError {
    /// The server could not be started (binary missing, bad flags, no listen address).
    #[error("the server did not start: {0}")]
    Start(String),
    /// The server closed the connection (stdout EOF, websocket close, host stopped).
    #[error("the connection is closed: {0}")]
    Closed(String),
    /// Reading or writing the transport failed.
    #[error("transport i/o failed: {0}")]
    Io(String),
    /// The server sent something that is not one JSON value.
    #[error("the server sent a message that is not JSON ({error}): {text}")]
    NotJson {
        /// The parser's complaint.
        error: String,
        /// The message, lossily decoded.
        text: String,
    },
    /// The in-process event queue overflowed and best-effort notifications were dropped: the
    /// scenario read too slowly for a comparison to mean anything.
    #[error("{skipped} best-effort notifications were dropped (in-process Lagged)")]
    Lagged {
        /// How many were dropped.
        skipped: u64,
    },
    /// The transport cannot express this step (see [`crate::session::Transport`]).
    #[error("not expressible on this transport: {0}")]
    Unsupported(&'static str),
    /// `recv` was called while reading was paused: a scenario bug.
    #[error("recv called while reading is paused")]
    Paused,
}

/// One client connection to a server under test.
#[async_trait]
pub(crate) trait Driver: Send {
    /// Sends one line (stdio) or one frame (websocket) holding exactly `frame`; in-process,
    /// `frame` goes through the wire decoder first, so it meets the same rules.
    async fn send_raw(&mut self, frame: &[u8]) -> Result<(), DriverError>;

    /// Sends one JSON message.
    async fn send(&mut self, message: &Value) -> Result<(), DriverError> {
        let frame = serde_json::to_vec(message).expect("a JSON value serializes");
        self.send_raw(&frame).await
    }

    /// The next message the server sent: a response, an error, a notification or a server
    /// request, exactly as it arrived (not normalized).
    async fn recv(&mut self) -> Result<Value, DriverError>;

    /// Stops reading: until [`Driver::resume`], nothing is taken from the transport and
    /// `recv` fails with [`DriverError::Paused`].
    fn pause(&mut self);

    /// Reads again after [`Driver::pause`].
    fn resume(&mut self);

    /// Drops this connection and opens a new one to the same server (websocket: a new socket,
    /// not yet initialized; in-process: a new event consumer on the same, initialized
    /// connection). Stdio has one connection per server process and cannot.
    async fn reconnect(&mut self) -> Result<(), DriverError> {
        Err(DriverError::Unsupported(
            "a stdio server has exactly one connection",
        ))
    }

    /// Closes the connection the way a client hangs up (stdin EOF, websocket close, host
    /// shutdown) and waits for the server side to finish.
    async fn close(self: Box<Self>) -> Result<(), DriverError>;
}
