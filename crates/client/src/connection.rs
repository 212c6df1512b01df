//! What a UI sees of the connection under a client: [`ReconnectPolicy`] (whether and how a
//! wire client comes back after its connection ends), [`ConnectionState`] (the changes, as a
//! watch channel) and [`ReconnectStats`] (what the comebacks cost). They sit apart from the
//! backends, which report the changes, and from [`crate::Client`], which hands them out.

use std::time::Duration;

/// Default [`ReconnectPolicy::first_backoff`].
pub const DEFAULT_FIRST_RECONNECT_BACKOFF: Duration = Duration::from_millis(100);
/// Default [`ReconnectPolicy::max_backoff`].
pub const DEFAULT_MAX_RECONNECT_BACKOFF: Duration = Duration::from_secs(5);
/// Default [`ReconnectPolicy::max_attempts`].
pub const DEFAULT_MAX_RECONNECT_ATTEMPTS: u32 = 20;

/// Whether and how a wire client (a websocket, a child over stdio) comes back by itself after
/// its connection ends: it reconnects (restarts a child) with exponential backoff, initializes
/// again and resumes every thread it was subscribed to from the last event it saw
/// (docs/protocol.md, "Client reconnect"). On by default: a production client expects a
/// dropped websocket or a restarted server to cost it nothing but the wait.
///
/// ```
/// use std::time::Duration;
/// use tandem_client::ReconnectPolicy;
///
/// let policy = ReconnectPolicy::new()
///     .first_backoff(Duration::from_millis(50))
///     .max_backoff(Duration::from_secs(2))
///     .max_attempts(10);
/// assert!(policy.is_enabled());
/// assert!(!ReconnectPolicy::disabled().is_enabled());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReconnectPolicy {
    pub(crate) enabled: bool,
    pub(crate) first_backoff: Duration,
    pub(crate) max_backoff: Duration,
    pub(crate) max_attempts: u32,
}

impl Default for ReconnectPolicy {
    fn default() -> Self {
        Self {
            enabled: true,
            first_backoff: DEFAULT_FIRST_RECONNECT_BACKOFF,
            max_backoff: DEFAULT_MAX_RECONNECT_BACKOFF,
            max_attempts: DEFAULT_MAX_RECONNECT_ATTEMPTS,
        }
    }
}

impl ReconnectPolicy {
    /// Reconnect, with the defaults written on each setter.
    pub fn new() -> Self {
        Self::default()
    }

    /// Never reconnect by itself: a lost connection ends every subscription and handle, and
    /// the next request opens a new connection (the behaviour before issue 17).
    pub fn disabled() -> Self {
        Self {
            enabled: false,
            ..Self::default()
        }
    }

    /// Whether the client reconnects by itself.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// The wait before the first attempt; it doubles after every failed one. Default 100 ms.
    pub fn first_backoff(mut self, backoff: Duration) -> Self {
        self.first_backoff = backoff;
        self
    }

    /// The longest wait between two attempts. Default 5 s.
    pub fn max_backoff(mut self, backoff: Duration) -> Self {
        self.max_backoff = backoff;
        self
    }

    /// Attempts per outage before the client gives up (0 counts as 1); then every
    /// subscription and handle ends with the last failure, and the next request tries again.
    /// Default 20 (about a minute and a half with the default backoffs).
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// The wait before attempt `attempt` (1 for the first).
    pub(crate) fn backoff(&self, attempt: u32) -> Duration {
        let doublings = attempt.saturating_sub(1).min(31);
        self.first_backoff
            .saturating_mul(1 << doublings)
            .min(self.max_backoff)
    }
}

/// The state of a client's connection, as [`crate::Client::connection_state`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnectionState {
    /// Not connected yet: a wire backend connects on the first request.
    Idle,
    /// Connected and initialized.
    Connected {
        /// The connection generation ([`crate::Client::generation`]).
        generation: u64,
    },
    /// The connection ended; the client is coming back by itself.
    Reconnecting {
        /// Which attempt is next (1 for the first).
        attempt: u32,
        /// Why the connection ended, or why the last attempt failed.
        reason: String,
    },
    /// Back: a new connection is initialized and every followed thread was resumed.
    Reconnected {
        /// The new connection generation.
        generation: u64,
        /// How many times the client came back since it started.
        reconnects: u64,
    },
    /// The connection ended and the client does not come back by itself (reconnect disabled,
    /// or every attempt failed); the next request tries to connect again.
    Disconnected {
        /// Why.
        reason: String,
    },
    /// [`crate::Client::close`] was called.
    Closed,
}

/// What reconnecting cost a client so far ([`crate::Client::reconnect_stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReconnectStats {
    /// Successful reconnects.
    pub reconnects: u64,
    /// Events the server replayed on resume (sent before the `thread/resume` answer).
    pub replayed_events: u64,
    /// Events dropped because they were already seen (a `seq` at or below the last one).
    pub duplicates_dropped: u64,
    /// Resumes the server answered with `gap: true` (the client resynced from the snapshot).
    pub gaps: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_bound() {
        let policy = ReconnectPolicy::new()
            .first_backoff(Duration::from_millis(100))
            .max_backoff(Duration::from_millis(750));
        let waits: Vec<_> = (1..=6).map(|attempt| policy.backoff(attempt)).collect();
        assert_eq!(
            waits,
            [100, 200, 400, 750, 750, 750].map(Duration::from_millis)
        );
        // Far attempts neither overflow nor exceed the bound.
        assert_eq!(policy.backoff(u32::MAX), Duration::from_millis(750));
    }
}
