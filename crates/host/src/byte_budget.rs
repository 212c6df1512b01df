//! The byte bound of a wire connection's writer queue. A message count alone does not bound
//! memory: one `turn/start` with an 8 MB input makes several multi-megabyte notifications, and
//! 32 768 of those fit a queue counted in messages. The outbound router (the queue's only
//! producer) charges each message's encoded size (estimated, see [`crate::json_size`]) here
//! before it enters the queue, and the connection's writer releases it when it takes the
//! message off; the router treats a queue over its byte limit exactly like a queue full of
//! messages (waits on stdio; on a websocket connection what does not fit waits in the
//! router's backlog).

use std::sync::atomic::{AtomicUsize, Ordering};

use serde::{Serialize, Serializer};
use tandem_protocol::{ServerNotification, ServerRequest, bytes_base64};
use tokio::sync::Notify;

use crate::json_size;

/// Bytes queued for one connection's writer, against a limit.
#[derive(Debug)]
pub(crate) struct ByteBudget {
    limit: usize,
    queued: AtomicUsize,
    /// Signalled whenever the writer releases bytes; the router is the only waiter.
    released: Notify,
    /// Messages and bytes the router holds back for the connection (its backlog), for the
    /// writer's log line when it gives up on the peer.
    backlog: (AtomicUsize, AtomicUsize),
}

impl ByteBudget {
    /// A budget of `limit` bytes (0 is treated as 1).
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit: limit.max(1),
            queued: AtomicUsize::new(0),
            released: Notify::new(),
            backlog: (AtomicUsize::new(0), AtomicUsize::new(0)),
        }
    }

    /// Bytes charged and not yet released.
    pub(crate) fn queued(&self) -> usize {
        self.queued.load(Ordering::Acquire)
    }

    /// Whether a message of `bytes` fits now. An empty queue takes a message of any size:
    /// otherwise one larger than the limit could never be sent.
    pub(crate) fn fits(&self, bytes: usize) -> bool {
        let queued = self.queued();
        queued == 0 || queued.saturating_add(bytes) <= self.limit
    }

    /// Waits until a message of `bytes` fits. Only the router waits, so nothing can take the
    /// room between this returning and the charge.
    pub(crate) async fn room_for(&self, bytes: usize) {
        while !self.fits(bytes) {
            // `notify_one` keeps a permit when nobody waits yet: a release between the check
            // and this await is not missed.
            self.released.notified().await;
        }
    }

    /// Records what the router's backlog for the connection holds.
    pub(crate) fn set_backlog(&self, messages: usize, bytes: usize) {
        self.backlog.0.store(messages, Ordering::Relaxed);
        self.backlog.1.store(bytes, Ordering::Relaxed);
    }

    /// Messages and bytes in the router's backlog for the connection.
    pub(crate) fn backlog(&self) -> (usize, usize) {
        (
            self.backlog.0.load(Ordering::Relaxed),
            self.backlog.1.load(Ordering::Relaxed),
        )
    }

    /// Charges `bytes` for a message entering the queue.
    pub(crate) fn charge(&self, bytes: usize) {
        self.queued.fetch_add(bytes, Ordering::AcqRel);
    }

    /// Releases what a message taken off the queue (or never queued after all) was charged.
    pub(crate) fn release(&self, bytes: usize) {
        if bytes == 0 {
            return;
        }
        let _ = self
            .queued
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |queued| {
                Some(queued.saturating_sub(bytes))
            });
        self.released.notify_one();
    }
}

/// The size of `notification` as the writer will encode it, measured like
/// [`encoded_size`](crate::message::encoded_size):
/// what a replay window charges for keeping it.
pub(crate) fn notification_size(notification: &ServerNotification) -> usize {
    notification_payload_size(notification).unwrap_or(0) + ENVELOPE_BYTES
}

pub(crate) fn notification_payload_size(notification: &ServerNotification) -> Option<usize> {
    match notification {
        // Process output, the bulk of what a wire carries, is measured from its length: the
        // generic estimate would base64-encode every delta once more just to count it.
        ServerNotification::ProcessOutputDelta(delta) => {
            Some(process_delta_size(delta.process_handle.len(), delta.delta.len()) - ENVELOPE_BYTES)
        }
        ServerNotification::CommandExecOutputDelta(delta) => Some(
            delta.process_id.len()
                + bytes_base64::encoded_len(delta.delta.len())
                + COMMAND_DELTA_MEMBERS_BYTES,
        ),
        notification => json_size::estimate(&NotificationParams(notification)),
    }
}

/// What the JSON-RPC envelope (id, method, timestamp) adds to the payload, roughly.
pub(crate) const ENVELOPE_BYTES: usize = 64;

/// [`notification_size`] of a `process/outputDelta` whose handle is `handle_len` bytes long
/// and whose delta is `delta_len` bytes.
pub(crate) fn process_delta_size(handle_len: usize, delta_len: usize) -> usize {
    handle_len + bytes_base64::encoded_len(delta_len) + PROCESS_DELTA_MEMBERS_BYTES + ENVELOPE_BYTES
}

/// The member names, punctuation and values of a `process/outputDelta`'s params besides its id
/// and its base64: `{"processHandle":"","stream":"stdout","deltaBase64":"","capReached":false}`.
const PROCESS_DELTA_MEMBERS_BYTES: usize = 74;

/// The same for `command/exec/outputDelta`, whose id member is `processId`.
const COMMAND_DELTA_MEMBERS_BYTES: usize = 70;

/// A notification's `params`, as the wire encodes them.
struct NotificationParams<'a>(&'a ServerNotification);

impl Serialize for NotificationParams<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize_params(serializer)
    }
}

/// A server request's `params`, as the wire encodes them.
pub(crate) struct RequestParams<'a>(pub(crate) &'a ServerRequest);

impl Serialize for RequestParams<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize_params(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{OutgoingMessage, encoded_size};
    use serde_json::json;
    use std::sync::Arc;
    use std::time::Duration;
    use tandem_protocol::RequestId;

    #[test]
    fn an_empty_queue_takes_any_message_and_a_full_one_only_what_fits() {
        let budget = ByteBudget::new(100);
        assert!(
            budget.fits(1_000),
            "an empty queue takes even an oversized message"
        );
        budget.charge(60);
        assert!(budget.fits(40));
        assert!(!budget.fits(41));
        budget.release(60);
        assert_eq!(budget.queued(), 0);
        // A release never underflows.
        budget.release(5);
        assert_eq!(budget.queued(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn room_appears_when_the_writer_releases() {
        let budget = Arc::new(ByteBudget::new(100));
        budget.charge(90);
        let waiter = tokio::spawn({
            let budget = budget.clone();
            async move { budget.room_for(50).await }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(
            !waiter.is_finished(),
            "no room while 90 of 100 bytes are queued"
        );
        budget.release(90);
        tokio::time::timeout(Duration::from_secs(1), waiter)
            .await
            .expect("room after the release")
            .unwrap();
    }

    #[test]
    fn an_output_delta_is_measured_as_the_wire_encodes_it() {
        use tandem_protocol::wire::{ServerMessage, encode_server_message};
        use tandem_protocol::{
            Bytes, CommandExecOutputDeltaNotification, ProcessOutputDeltaNotification,
            ProcessOutputStream,
        };
        for len in [0, 1, 1000, 65_536] {
            for cap_reached in [false, true] {
                let delta = Bytes::from(vec![7u8; len]);
                let process = ProcessOutputDeltaNotification {
                    process_handle: "a-handle".to_owned(),
                    stream: ProcessOutputStream::Stderr,
                    delta: delta.clone(),
                    cap_reached,
                };
                let command = CommandExecOutputDeltaNotification {
                    process_id: "an-id".to_owned(),
                    stream: ProcessOutputStream::Stdout,
                    delta,
                    cap_reached,
                };
                for notification in [
                    ServerNotification::ProcessOutputDelta(process),
                    ServerNotification::CommandExecOutputDelta(command),
                ] {
                    let mut wire = Vec::new();
                    let message = ServerMessage::Notification {
                        notification: notification.clone(),
                        emitted_at_ms: Some(1_767_225_600_000),
                        cursor: None,
                    };
                    encode_server_message(&message, &mut wire).unwrap();
                    let size = encoded_size(&OutgoingMessage::Notification(notification.clone()));
                    // The params as the generic estimate measures them (`true` is one byte
                    // shorter than the `false` counted), the envelope within its allowance.
                    let params = json_size::estimate(&NotificationParams(&notification)).unwrap();
                    let counted = size - ENVELOPE_BYTES;
                    assert!(
                        params <= counted && counted <= params + 1,
                        "{len} bytes: {counted} counted, {params} estimated"
                    );
                    // The envelope (method, timestamp) is counted as a round 64 bytes.
                    assert!(
                        wire.len().abs_diff(size) <= 16,
                        "{len} bytes: {size} counted, {} on the wire",
                        wire.len()
                    );
                }
            }
        }
    }

    #[test]
    fn the_size_is_the_encoded_size() {
        let text = "x".repeat(10_000);
        let message = OutgoingMessage::Response {
            id: RequestId::Integer(1),
            result: json!({ "text": text }),
        };
        let size = encoded_size(&message);
        assert!(
            (10_000..10_000 + 2 * ENVELOPE_BYTES).contains(&size),
            "{size}"
        );
    }
}
