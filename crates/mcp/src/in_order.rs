//! Messages to a stdio server leave in the order rmcp sent them.
//!
//! rmcp's service loop hands every outgoing message to the transport's `send` in order, but
//! runs each returned future on a task of its own, and the stdio transport only takes its
//! writer's lock when that future is first polled. Two messages sent back to back can
//! therefore reach the pipe in either order. For a tool call that is interrupted at once,
//! that lost the cancellation: `notifications/cancelled` overtook its `tools/call`, the server
//! found no such request to cancel and then ran the call to its end (or forever).
//!
//! [`InOrder`] chains the sends: each one starts writing only once the one before it has
//! finished (written, failed or been dropped). The streamable HTTP transport needs no chain:
//! it registers a request's cancellation when `send` is called, in order.

use rmcp::service::{RxJsonRpcMessage, ServiceRole, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::oneshot;

/// A transport whose sends are written one after the other, in the order of the `send`
/// calls (see the module documentation).
pub(crate) struct InOrder<T> {
    inner: T,
    /// Resolves once the last send handed out has finished; `None` before the first.
    previous: Option<oneshot::Receiver<()>>,
}

impl<T> InOrder<T> {
    pub(crate) fn new(inner: T) -> Self {
        Self {
            inner,
            previous: None,
        }
    }
}

impl<R: ServiceRole, T: Transport<R>> Transport<R> for InOrder<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<R>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let (finished, next) = oneshot::channel::<()>();
        let previous = self.previous.replace(next);
        let send = self.inner.send(item);
        async move {
            // Dropped with this future, written or not: the next send never waits forever
            // on one that was abandoned.
            let _finished = finished;
            if let Some(previous) = previous {
                // An error only means the one before was dropped: it is finished too.
                let _ = previous.await;
            }
            send.await
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<R>>> + Send {
        self.inner.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use rmcp::RoleClient;
    use rmcp::model::{
        CancelledNotification, CancelledNotificationParam, ClientJsonRpcMessage,
        ClientNotification, ClientRequest, JsonRpcMessage, NumberOrString, PingRequest,
        ServerJsonRpcMessage,
    };

    use super::*;

    /// Like rmcp's stdio transport: a send's place in the written order is taken when its
    /// future is first polled.
    #[derive(Clone, Default)]
    struct LockedAtPoll(Arc<Mutex<Vec<ClientJsonRpcMessage>>>);

    impl Transport<RoleClient> for LockedAtPoll {
        type Error = std::io::Error;

        fn send(
            &mut self,
            item: ClientJsonRpcMessage,
        ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
            let written = Arc::clone(&self.0);
            async move {
                written.lock().expect("written").push(item);
                Ok(())
            }
        }

        async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
            None
        }

        async fn close(&mut self) -> Result<(), Self::Error> {
            Ok(())
        }
    }

    fn call(id: i64) -> ClientJsonRpcMessage {
        JsonRpcMessage::request(
            ClientRequest::PingRequest(PingRequest::default()),
            NumberOrString::Number(id),
        )
    }

    fn cancel(id: i64) -> ClientJsonRpcMessage {
        JsonRpcMessage::notification(ClientNotification::CancelledNotification(
            CancelledNotification::new(CancelledNotificationParam::new(
                Some(NumberOrString::Number(id)),
                None,
            )),
        ))
    }

    fn is_request(message: &ClientJsonRpcMessage) -> bool {
        matches!(message, JsonRpcMessage::Request(_))
    }

    #[tokio::test]
    async fn a_cancellation_polled_first_is_still_written_after_its_request() {
        let written = LockedAtPoll::default();
        // Without the chain, the later send polled first is written first: the race.
        let mut bare = written.clone();
        let request = Transport::<RoleClient>::send(&mut bare, call(1));
        let cancellation = Transport::<RoleClient>::send(&mut bare, cancel(1));
        cancellation.await.expect("sent");
        request.await.expect("sent");
        assert!(!is_request(&written.0.lock().expect("written")[0]));
        written.0.lock().expect("written").clear();

        let mut ordered = InOrder::new(written.clone());
        let request = Transport::<RoleClient>::send(&mut ordered, call(2));
        let cancellation = tokio::spawn(Transport::<RoleClient>::send(&mut ordered, cancel(2)));
        // The cancellation's task runs first and waits for the request's send.
        tokio::task::yield_now().await;
        assert!(written.0.lock().expect("written").is_empty());
        request.await.expect("sent");
        tokio::time::timeout(Duration::from_secs(10), cancellation)
            .await
            .expect("the cancellation is written once the request is")
            .expect("task")
            .expect("sent");
        let written = written.0.lock().expect("written");
        assert_eq!(written.len(), 2);
        assert!(is_request(&written[0]) && !is_request(&written[1]));
    }

    #[tokio::test]
    async fn a_dropped_send_does_not_hold_up_the_next() {
        let written = LockedAtPoll::default();
        let mut ordered = InOrder::new(written.clone());
        drop(Transport::<RoleClient>::send(&mut ordered, call(1)));
        tokio::time::timeout(
            Duration::from_secs(10),
            Transport::<RoleClient>::send(&mut ordered, cancel(1)),
        )
        .await
        .expect("not held up")
        .expect("sent");
        assert_eq!(written.0.lock().expect("written").len(), 1);
    }
}
