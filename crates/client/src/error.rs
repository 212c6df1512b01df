//! [`ClientError`]: the one error type of tandem-client. Every variant answers the two
//! questions a caller needs before doing anything else: was the request sent, and may it be
//! sent again without risk ([`ClientError::was_sent`], [`ClientError::is_retry_safe`]).

use std::time::Duration;

use tandem_protocol::error_codes::OVERLOADED;
use tandem_protocol::{JSONRPCErrorError, RequestId};

/// Why a request, an answer to a server request or a connection failed.
///
/// | variant | sent? | safe to retry? |
/// |---|---|---|
/// | [`Closed`](Self::Closed), [`NotSent`](Self::NotSent), [`Connect`](Self::Connect) | no | yes |
/// | [`TimedOut`](Self::TimedOut), [`Disconnected`](Self::Disconnected) | as the `sent` field says | only if not sent |
/// | [`MaybeSent`](Self::MaybeSent) | maybe | yes: it carries an idempotency key |
/// | [`Server`](Self::Server) | yes | only for -32001 (overloaded) |
/// | [`InvalidResponse`](Self::InvalidResponse) | yes | no |
/// | [`ServerRequestNotPending`](Self::ServerRequestNotPending) | no (nothing to send) | no |
///
/// A request that was sent is never replayed automatically: only the caller knows whether
/// running it twice is harmless.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClientError {
    /// The client was closed before the request was written.
    #[error("`{method}` was not sent: the client is closed; create a new client")]
    Closed {
        /// The request's method.
        method: String,
    },
    /// The request could not be written, for example because a bounded queue on the way to
    /// the server was full. Nothing reached the server.
    #[error("`{method}` was not sent: {reason}; it is safe to retry")]
    NotSent {
        /// The request's method.
        method: String,
        /// What stopped it.
        reason: String,
    },
    /// No reply arrived within the request's timeout. When `sent`, the server may still act on
    /// the request.
    #[error(
        "`{method}` got no reply within {after:?} ({}); raise the timeout with \
         ClientOptions::request_timeout or RequestOptions::timeout",
        if *.sent { "it was sent, so it may still take effect" } else { "it was never sent" }
    )]
    TimedOut {
        /// The request's method.
        method: String,
        /// The timeout that expired.
        after: Duration,
        /// Whether the request had been written when the timeout expired.
        sent: bool,
    },
    /// The connection to the server ended before the reply arrived. When `sent`, the outcome
    /// is unknown: the request carried no idempotency key, so only the caller can tell whether
    /// sending it again is harmless (read the state back first).
    #[error(
        "`{method}` failed: the connection to the server was lost ({reason}); {}",
        if *.sent {
            "connection lost, outcome unknown: it was sent and may have taken effect; check the \
             server's state before sending it again"
        } else {
            "it was never sent; it is safe to retry"
        }
    )]
    Disconnected {
        /// The request's method.
        method: String,
        /// Whether the request had been written before the connection ended.
        sent: bool,
        /// What ended the connection.
        reason: String,
    },
    /// The connection to the server ended after the request was sent and before its reply
    /// arrived, and the request carries an idempotency key (`clientUserMessageId` of
    /// `turn/start` and `turn/steer`, `idempotencyKey` of `thread/start` and `thread/fork`):
    /// it may or may not have taken effect, and sending it again unchanged is safe (the server
    /// answers a repeat with the first result and starts nothing).
    #[error(
        "`{method}` may have reached the server before the connection was lost ({reason}); \
         maybe sent, safe to retry: send it again unchanged (same idempotency key)"
    )]
    MaybeSent {
        /// The request's method.
        method: String,
        /// What ended the connection.
        reason: String,
    },
    /// The server answered with a JSON-RPC error. (In-process, raw params that do not decode
    /// get this answer from the protocol's decoding without reaching the processor, exactly as
    /// a wire server's transport answers them; see [`crate::Client::request`].)
    #[error("the server rejected `{method}`: {} (code {})", .error.message, .error.code)]
    Server {
        /// The request's method.
        method: String,
        /// The server's error.
        error: JSONRPCErrorError,
    },
    /// The server's result does not decode into the method's response type.
    #[error(
        "the server's reply to `{method}` does not decode: {reason}; is the server a compatible Tandem version?"
    )]
    InvalidResponse {
        /// The request's method.
        method: String,
        /// The decoding error.
        reason: String,
    },
    /// The server could not be started or reached, so nothing was sent.
    #[error("cannot reach the server: {reason}")]
    Connect {
        /// What failed.
        reason: String,
    },
    /// An answer was given to a server request that is not waiting for one: it was already
    /// answered, the server resolved it (for example because its turn was interrupted), it
    /// belongs to an earlier connection, or it never existed.
    #[error(
        "server request {id} is not waiting for an answer (already answered, resolved by the server, or unknown)"
    )]
    ServerRequestNotPending {
        /// The server request's id.
        id: RequestId,
    },
}

impl ClientError {
    /// Whether the request reached the transport (and so possibly the server).
    pub fn was_sent(&self) -> bool {
        match self {
            Self::Closed { .. }
            | Self::NotSent { .. }
            | Self::Connect { .. }
            | Self::ServerRequestNotPending { .. } => false,
            Self::TimedOut { sent, .. } | Self::Disconnected { sent, .. } => *sent,
            Self::MaybeSent { .. } | Self::Server { .. } | Self::InvalidResponse { .. } => true,
        }
    }

    /// Whether sending the same request again cannot make it take effect twice: it was never
    /// sent, the server refused it with -32001 (overloaded) before acting on it, or it carries
    /// an idempotency key ([`Self::MaybeSent`]).
    pub fn is_retry_safe(&self) -> bool {
        match self {
            Self::MaybeSent { .. } => true,
            Self::Server { error, .. } => error.code == OVERLOADED,
            Self::ServerRequestNotPending { .. } => false,
            other => !other.was_sent(),
        }
    }

    /// The server's JSON-RPC error, if that is what this is.
    pub fn server_error(&self) -> Option<&JSONRPCErrorError> {
        match self {
            Self::Server { error, .. } => Some(error),
            _ => None,
        }
    }

    /// Whether the server answered -32001 (a bounded queue was full).
    pub fn is_overloaded(&self) -> bool {
        self.server_error()
            .is_some_and(|error| error.code == OVERLOADED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_follows_the_table() {
        let method = || "m".to_owned();
        let overloaded = ClientError::Server {
            method: method(),
            error: JSONRPCErrorError::overloaded("request queue is full"),
        };
        assert!(overloaded.was_sent() && overloaded.is_retry_safe());
        let invalid = ClientError::Server {
            method: method(),
            error: JSONRPCErrorError::invalid_request("no"),
        };
        assert!(invalid.was_sent() && !invalid.is_retry_safe());
        let timed_out = ClientError::TimedOut {
            method: method(),
            after: Duration::from_secs(1),
            sent: true,
        };
        assert!(timed_out.was_sent() && !timed_out.is_retry_safe());
        let closed = ClientError::Closed { method: method() };
        assert!(!closed.was_sent() && closed.is_retry_safe());
        let lost = ClientError::Disconnected {
            method: method(),
            sent: false,
            reason: "eof".into(),
        };
        assert!(lost.is_retry_safe());
        let unknown = ClientError::Disconnected {
            method: method(),
            sent: true,
            reason: "eof".into(),
        };
        assert!(unknown.was_sent() && !unknown.is_retry_safe());
        assert!(unknown.to_string().contains("outcome unknown"));
        let maybe = ClientError::MaybeSent {
            method: method(),
            reason: "eof".into(),
        };
        assert!(maybe.was_sent() && maybe.is_retry_safe());
        assert!(maybe.to_string().contains("maybe sent, safe to retry"));
    }
}
