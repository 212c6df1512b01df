//! Delivery classes and per-connection filtering: which notifications must wait for room
//! (guaranteed) and which may be dropped with a `Lagged` marker (best effort), and which a
//! connection never sees at all.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use foldhash::HashSet;
use tandem_protocol::{DEFAULT_GUARANTEED_NOTIFICATION_METHODS, is_experimental_notification};
use tokio::sync::oneshot;

use crate::processor::ConnectionSessionState;

/// Which notification methods are delivered with the guaranteed class in-process. The default
/// is docs/protocol.md section 6; embedders may add their own custom notifications.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryPolicy {
    /// Looked up for every notification the in-process host delivers: foldhash, not SipHash,
    /// which was ~3% of a notification's instructions.
    guaranteed: HashSet<String>,
}

impl Default for DeliveryPolicy {
    fn default() -> Self {
        Self {
            guaranteed: DEFAULT_GUARANTEED_NOTIFICATION_METHODS
                .iter()
                .map(|method| (*method).to_owned())
                .collect(),
        }
    }
}

impl DeliveryPolicy {
    /// A policy under which every notification is best effort.
    pub fn all_best_effort() -> Self {
        Self {
            guaranteed: HashSet::default(),
        }
    }

    /// Marks `method` as guaranteed: it waits for room in the event queue instead of being
    /// dropped.
    pub fn guarantee(mut self, method: impl Into<String>) -> Self {
        self.guaranteed.insert(method.into());
        self
    }

    /// Marks `method` as best effort.
    pub fn best_effort(mut self, method: &str) -> Self {
        self.guaranteed.remove(method);
        self
    }

    /// Whether `method` is delivered with the guaranteed class.
    pub fn is_guaranteed(&self, method: &str) -> bool {
        self.guaranteed.contains(method)
    }
}

/// The notifications one connection accepts, derived from its frozen capabilities.
#[derive(Debug, Clone, Default)]
pub(crate) struct NotificationFilter {
    experimental_api: bool,
    /// Looked up for every notification routed to the connection (foldhash, like the policy).
    opted_out: HashSet<String>,
}

impl NotificationFilter {
    pub(crate) fn from_session(session: &ConnectionSessionState) -> Self {
        Self {
            experimental_api: session.experimental_api,
            opted_out: session
                .opted_out_notification_methods
                .iter()
                .cloned()
                .collect(),
        }
    }

    pub(crate) fn allows(&self, method: &str) -> bool {
        (self.experimental_api || !is_experimental_notification(method))
            && !self.opted_out.contains(method)
    }
}

/// Tells a producer that its message was handed to the consumer (written into the event queue,
/// or resolved to the waiting caller). Cloned once per recipient of a broadcast: the producer
/// hears back when the last clone is gone, with `true` if any recipient took the message.
#[derive(Debug, Clone)]
pub(crate) struct DeliveryAck(Arc<AckState>);

struct AckState {
    delivered: AtomicBool,
    notify: std::sync::Mutex<Option<oneshot::Sender<bool>>>,
    /// Runs at the moment of hand-over, on the thread that hands over, before the consumer can
    /// act on the message (see [`DeliveryAck::with_callback`]).
    on_delivered: std::sync::Mutex<Option<DeliveryCallback>>,
}

/// What [`DeliveryAck::with_callback`] runs, with whether any recipient took the message.
pub(crate) type DeliveryCallback = Box<dyn FnOnce(bool) + Send>;

impl std::fmt::Debug for AckState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AckState")
            .field("delivered", &self.delivered)
            .finish_non_exhaustive()
    }
}

impl DeliveryAck {
    pub(crate) fn new() -> (Self, oneshot::Receiver<bool>) {
        let (tx, rx) = oneshot::channel();
        let state = AckState {
            delivered: AtomicBool::new(false),
            notify: std::sync::Mutex::new(Some(tx)),
            on_delivered: std::sync::Mutex::new(None),
        };
        (Self(Arc::new(state)), rx)
    }

    /// Like [`DeliveryAck::new`], and `callback` runs synchronously where the last clone is
    /// dropped: in the host's loop that hands the message to the consumer, before that loop
    /// takes the consumer's next request. A producer uses it for state that the consumer's
    /// reaction must already see (a released process handle).
    pub(crate) fn with_callback(callback: DeliveryCallback) -> (Self, oneshot::Receiver<bool>) {
        let (ack, rx) = Self::new();
        *ack.0
            .on_delivered
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(callback);
        (ack, rx)
    }

    /// Records delivery; the producer is told once every clone is dropped.
    pub(crate) fn delivered(self) {
        self.0.delivered.store(true, Ordering::Release);
    }
}

impl Drop for AckState {
    fn drop(&mut self) {
        let delivered = self.delivered.load(Ordering::Acquire);
        let callback = self
            .on_delivered
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(callback) = callback {
            callback(delivered);
        }
        let sender = self
            .notify
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(sender) = sender {
            let _ = sender.send(delivered);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_policy_is_protocol_section_six() {
        let policy = DeliveryPolicy::default();
        assert!(policy.is_guaranteed("process/outputDelta"));
        assert!(policy.is_guaranteed("turn/completed"));
        assert!(!policy.is_guaranteed("thread/started"));
        let policy = policy.guarantee("acme/tick").best_effort("turn/completed");
        assert!(policy.is_guaranteed("acme/tick"));
        assert!(!policy.is_guaranteed("turn/completed"));
    }

    #[test]
    fn filter_drops_opt_outs_and_experimental() {
        let mut session = ConnectionSessionState::default();
        session
            .opted_out_notification_methods
            .insert("thread/started".into());
        let filter = NotificationFilter::from_session(&session);
        assert!(!filter.allows("thread/started"));
        assert!(!filter.allows("process/exited"));
        assert!(filter.allows("turn/completed"));
        session.experimental_api = true;
        assert!(NotificationFilter::from_session(&session).allows("process/exited"));
    }

    #[tokio::test]
    async fn ack_reports_any_delivery_after_last_clone() {
        let (ack, rx) = DeliveryAck::new();
        let other = ack.clone();
        drop(ack);
        other.delivered();
        assert!(rx.await.unwrap());
        let (ack, rx) = DeliveryAck::new();
        drop(ack);
        assert!(!rx.await.unwrap());
    }
}
