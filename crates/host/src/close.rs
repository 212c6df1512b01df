//! Why and how the server closes a connection: the [`CloseReason`] a websocket transport turns
//! into a close frame, and the [`CloseSignal`] the router (a backlog over its ceiling) or the
//! connection's own watch cancels to ask the transport to close. Below the router and the
//! transports, which both name it.

use std::sync::OnceLock;

use tokio_util::sync::CancellationToken;

/// Why a connection is being closed by the server; websocket transports turn it into a close
/// frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CloseReason {
    /// What the peer is owed outgrew its ceiling: it reads, if at all, too slowly.
    SlowConsumer,
    /// The peer took no bytes for the grace period: it does not read. Its socket is full, so
    /// a close frame is not waited for.
    Stalled,
    /// The peer sent a message over the size limit (websocket).
    #[cfg_attr(not(feature = "websocket"), allow(dead_code))]
    MessageTooBig,
    /// The peer sent a text message that is not UTF-8 (websocket).
    #[cfg_attr(not(feature = "websocket"), allow(dead_code))]
    InvalidPayload,
    /// The host is shutting down.
    ShuttingDown,
    /// The peer closed, or the connection ended: nothing more to say.
    Finished,
}

impl CloseReason {
    /// The websocket close code and reason text.
    #[cfg_attr(not(feature = "websocket"), allow(dead_code))]
    pub(crate) fn close_frame(self) -> (u16, &'static str) {
        match self {
            // 1008: policy violation; the peer must read what it is sent.
            Self::SlowConsumer => (1008, "connection too slow: it fell too far behind"),
            Self::Stalled => (
                1008,
                "connection too slow: it took nothing for the grace period",
            ),
            Self::MessageTooBig => (1009, "message too big"),
            // 1007: RFC 6455 requires failing the connection; the code says why.
            Self::InvalidPayload => (1007, "text message is not UTF-8"),
            Self::ShuttingDown => (1001, "server shutting down"),
            Self::Finished => (1000, "closed"),
        }
    }
}

/// Asks a connection's transport to close it, once, with a reason.
#[derive(Debug, Default)]
pub(crate) struct CloseSignal {
    token: CancellationToken,
    reason: OnceLock<CloseReason>,
}

impl CloseSignal {
    /// Closes with `reason`, unless a close was already asked for (the first reason stands).
    pub(crate) fn close(&self, reason: CloseReason) {
        let _ = self.reason.set(reason);
        self.token.cancel();
    }

    pub(crate) async fn closed(&self) -> CloseReason {
        self.token.cancelled().await;
        self.reason().unwrap_or(CloseReason::ShuttingDown)
    }

    pub(crate) fn reason(&self) -> Option<CloseReason> {
        self.reason.get().copied()
    }
}
