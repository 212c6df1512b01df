//! Progress notifications routed to their call in the order the server sent them.
//!
//! rmcp hands each notification it receives to the client handler on a task of its own, but
//! answers a request inline in its service loop: a call's last progress, sent before its
//! result, could reach a handler after the call had returned, when nobody wanted it any more.
//! So progress is routed here instead, by a [`Routed`] transport around the real one: it sees
//! every incoming message in order and puts a call's progress in the call's queue before it
//! passes the next message (the answer) on. A consumer that drains the queue once the call
//! returned therefore has every update the server sent before its result.
//!
//! A call asks for its progress by carrying a [`ProgressRoute`] in its request's extensions;
//! the transport registers the route under the progress token rmcp gave the request when it
//! sends it (so no update can come before the route exists), and drops it when the answer
//! comes (or when the call ends otherwise, through [`RouteGuard`]).
//!
//! The same table answers which call a request id is (a call carries its [`CallNumber`]),
//! registered as the request is sent for the same reason: a server request that names the
//! call it serves (an elicitation on the HTTP response stream of that call's POST) can come
//! before the caller even learned its request's id.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::RoleClient;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, GetExtensions as _, GetMeta as _, JsonRpcMessage,
    ProgressToken, RequestId, ServerJsonRpcMessage, ServerNotification,
};
use rmcp::transport::Transport;
use tokio::sync::mpsc;

/// One progress notification of a tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct McpProgress {
    /// The progress so far.
    pub progress: f64,
    /// The total, when the server knows it.
    pub total: Option<f64>,
    /// What the server says it is doing.
    pub message: Option<String>,
}

/// The request extension by which a call asks for its progress.
#[derive(Clone)]
pub(crate) struct ProgressRoute(pub(crate) mpsc::Sender<McpProgress>);

/// The request extension that names the call (its number on the connection) a request is.
#[derive(Clone, Copy)]
pub(crate) struct CallNumber(pub(crate) u64);

/// The routes of one connection: the calls in flight that want their progress, by progress
/// token, and which token each such request id carries (to drop the route at the answer);
/// and which call each request id in flight is.
#[derive(Default)]
pub(crate) struct RouteTable {
    by_token: HashMap<ProgressToken, mpsc::Sender<McpProgress>>,
    by_request: HashMap<RequestId, ProgressToken>,
    calls: HashMap<RequestId, u64>,
}

impl RouteTable {
    /// Forgets `request`: it was answered, or its call ended.
    fn forget(&mut self, request: &RequestId) {
        if let Some(token) = self.by_request.remove(request) {
            self.by_token.remove(&token);
        }
        self.calls.remove(request);
    }
}

/// The number of the call in flight whose request is `request`, if any.
pub(crate) fn call_of(routes: &ProgressRoutes, request: &RequestId) -> Option<u64> {
    lock(routes).calls.get(request).copied()
}

/// The route table, shared by a connection and its transport.
pub(crate) type ProgressRoutes = Arc<Mutex<RouteTable>>;

fn lock(routes: &ProgressRoutes) -> MutexGuard<'_, RouteTable> {
    // Every change is one insert or remove: a panic elsewhere cannot leave it inconsistent.
    routes
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A client transport that routes progress notifications (see the module documentation).
pub(crate) struct Routed<T> {
    inner: T,
    server: String,
    routes: ProgressRoutes,
}

impl<T> Routed<T> {
    pub(crate) fn new(server: &str, inner: T, routes: ProgressRoutes) -> Self {
        Self {
            inner,
            server: server.to_owned(),
            routes,
        }
    }

    /// Registers the route of an outgoing call that carries one.
    fn register(&self, message: &ClientJsonRpcMessage) {
        let JsonRpcMessage::Request(request) = message else {
            return;
        };
        let ClientRequest::CallToolRequest(call) = &request.request else {
            return;
        };
        if let Some(CallNumber(number)) = call.extensions().get::<CallNumber>() {
            lock(&self.routes).calls.insert(request.id.clone(), *number);
        }
        let (Some(ProgressRoute(sender)), Some(token)) = (
            call.extensions().get::<ProgressRoute>(),
            request.request.get_meta().get_progress_token(),
        ) else {
            return;
        };
        // A call abandoned before rmcp sent it has dropped its receiver: nothing to route.
        if sender.is_closed() {
            return;
        }
        let mut routes = lock(&self.routes);
        routes.by_token.insert(token.clone(), sender.clone());
        routes.by_request.insert(request.id.clone(), token);
    }

    /// Hands progress to its call; drops the route of a call that is answered.
    fn route(&self, message: &ServerJsonRpcMessage) {
        let answered = match message {
            JsonRpcMessage::Notification(notification) => {
                let ServerNotification::ProgressNotification(progress) = &notification.notification
                else {
                    return;
                };
                let params = &progress.params;
                let sender = lock(&self.routes)
                    .by_token
                    .get(&params.progress_token)
                    .cloned();
                let Some(sender) = sender else {
                    tracing::debug!(server = %self.server, token = ?params.progress_token, "progress for no call in flight; dropped");
                    return;
                };
                let update = McpProgress {
                    progress: params.progress,
                    total: params.total,
                    message: params.message.clone(),
                };
                if sender.try_send(update).is_err() {
                    tracing::debug!(server = %self.server, "progress queue of a call full; update dropped");
                }
                return;
            }
            JsonRpcMessage::Response(response) => &response.id,
            JsonRpcMessage::Error(error) => match &error.id {
                Some(id) => id,
                None => return,
            },
            JsonRpcMessage::Request(_) => return,
        };
        lock(&self.routes).forget(answered);
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Routed<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // Before the request can reach the server, so before any of its progress can come.
        self.register(&item);
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        let message = self.inner.receive().await?;
        self.route(&message);
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// Drops a call's route when the call ends without an answer (a timeout, a cancellation,
/// a closed connection). A call dropped before rmcp even sent its request leaves its route
/// until its answer comes or the connection closes: bounded by the calls in flight.
pub(crate) struct RouteGuard {
    pub(crate) routes: ProgressRoutes,
    pub(crate) request: RequestId,
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        lock(&self.routes).forget(&self.request);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use rmcp::model::{
        CallToolRequest, CallToolRequestParams, EmptyObject, GetMeta as _, NumberOrString,
        ProgressNotification, ProgressNotificationParam, ServerResult,
    };

    use super::*;

    /// A transport whose incoming messages are given, and whose sends go nowhere.
    struct Scripted(VecDeque<ServerJsonRpcMessage>);

    impl Transport<RoleClient> for Scripted {
        type Error = std::io::Error;

        fn send(
            &mut self,
            _item: ClientJsonRpcMessage,
        ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
            std::future::ready(Ok(()))
        }

        async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
            self.0.pop_front()
        }

        async fn close(&mut self) -> Result<(), Self::Error> {
            Ok(())
        }
    }

    fn progress(token: &ProgressToken, step: f64) -> ServerJsonRpcMessage {
        JsonRpcMessage::notification(ServerNotification::ProgressNotification(
            ProgressNotification::new(ProgressNotificationParam::new(token.clone(), step)),
        ))
    }

    #[tokio::test]
    async fn progress_is_queued_before_the_answer_is_passed_on() {
        let token = ProgressToken(NumberOrString::Number(7));
        let id = NumberOrString::Number(1);
        let routes = ProgressRoutes::default();
        let incoming = VecDeque::from([
            progress(&token, 1.0),
            progress(&token, 2.0),
            JsonRpcMessage::response(ServerResult::EmptyResult(EmptyObject {}), id.clone()),
            progress(&token, 3.0),
        ]);
        let mut transport = Routed::new("s", Scripted(incoming), Arc::clone(&routes));
        let (sender, mut queue) = mpsc::channel(8);
        let mut call = CallToolRequest::new(CallToolRequestParams::new("slow"));
        call.extensions_mut().insert(ProgressRoute(sender));
        call.extensions_mut().insert(CallNumber(5));
        let mut request = ClientRequest::CallToolRequest(call);
        request.get_meta_mut().set_progress_token(token.clone());
        transport
            .send(JsonRpcMessage::request(request, id.clone()))
            .await
            .expect("sent");
        // Which call the request is, known from the moment it was sent.
        assert_eq!(call_of(&routes, &id), Some(5));

        for _ in 0..2 {
            transport.receive().await.expect("progress");
        }
        // The answer is passed on only after both updates are in the call's queue.
        let answer = transport.receive().await.expect("answer");
        assert!(matches!(answer, JsonRpcMessage::Response(_)));
        assert_eq!(queue.try_recv().map(|update| update.progress), Ok(1.0));
        assert_eq!(queue.try_recv().map(|update| update.progress), Ok(2.0));
        // The answer dropped the route: later progress goes nowhere.
        transport.receive().await.expect("late progress");
        assert!(queue.try_recv().is_err());
        assert!(lock(&routes).by_token.is_empty() && lock(&routes).by_request.is_empty());
        assert!(lock(&routes).calls.is_empty());
    }
}
