//! The processor task: feeds the [`MessageProcessor`] one message at a time and enforces the
//! handshake of docs/protocol.md section 3 for every processor, so an embedder cannot get
//! "Not initialized" or experimental gating wrong.

use foldhash::HashMap;
use std::sync::Arc;

use tandem_protocol::{ClientNotification, ClientRequest, JSONRPCErrorError, SessionSource};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::delivery::NotificationFilter;
use crate::outgoing::OutgoingMessageSender;
use crate::processor::{
    ConnectionId, ConnectionRequestId, ConnectionSessionState, MessageProcessor, RequestContext,
};
use crate::router::RouterInput;

/// What a transport hands the processor task.
#[derive(Debug)]
pub(crate) enum ProcessorMessage {
    Request {
        connection: ConnectionId,
        request: Box<ClientRequest>,
        cancel: CancellationToken,
    },
    Notification {
        connection: ConnectionId,
        notification: ClientNotification,
    },
    /// A transport accepted a connection. Sent (waiting for room, never dropped) before the
    /// connection's first message, so its session exists when its requests arrive.
    ConnectionOpened {
        connection: ConnectionId,
        source: SessionSource,
        /// Told once the session exists, so the transport reads the first frame only when
        /// this message no longer takes a place in the processor queue.
        opened: tokio::sync::oneshot::Sender<()>,
    },
    /// A transport lost a connection. Sent after its last message.
    ConnectionClosed { connection: ConnectionId },
}

pub(crate) struct Dispatcher {
    processor: Arc<dyn MessageProcessor>,
    outgoing: OutgoingMessageSender,
    sessions: HashMap<ConnectionId, Arc<ConnectionSessionState>>,
}

impl Dispatcher {
    pub(crate) fn new(
        processor: Arc<dyn MessageProcessor>,
        outgoing: OutgoingMessageSender,
    ) -> Self {
        Self {
            processor,
            outgoing,
            sessions: HashMap::default(),
        }
    }

    pub(crate) fn open_connection(&mut self, connection: ConnectionId, source: SessionSource) {
        self.sessions
            .insert(connection, Arc::new(ConnectionSessionState::new(source)));
    }

    /// Runs until the processor queue closes, then lets the processor shut down.
    pub(crate) async fn run(self, queue: mpsc::Receiver<ProcessorMessage>) {
        self.serve(queue, None).await;
    }

    /// [`Self::run`], but also ends when `stop` is cancelled, even while senders live on (a
    /// wire connection stuck on a peer that does not read must not keep the processor, and the
    /// processes it owns, alive).
    pub(crate) async fn run_until(
        self,
        queue: mpsc::Receiver<ProcessorMessage>,
        stop: CancellationToken,
    ) {
        self.serve(queue, Some(stop)).await;
    }

    async fn serve(
        mut self,
        mut queue: mpsc::Receiver<ProcessorMessage>,
        stop: Option<CancellationToken>,
    ) {
        while let Some(message) = match &stop {
            // In-process: nothing but the queue ends the loop, so no signal is raced per message.
            None => queue.recv().await,
            Some(stop) => tokio::select! {
                biased;
                () = stop.cancelled() => None,
                message = queue.recv() => message,
            },
        } {
            match message {
                ProcessorMessage::Request {
                    connection,
                    request,
                    cancel,
                } => self.request(connection, *request, cancel).await,
                ProcessorMessage::Notification {
                    connection,
                    notification,
                } => self.notification(connection, notification).await,
                ProcessorMessage::ConnectionOpened {
                    connection,
                    source,
                    opened,
                } => {
                    self.open_connection(connection, source);
                    let _ = opened.send(());
                }
                ProcessorMessage::ConnectionClosed { connection } => {
                    if self.sessions.remove(&connection).is_some() {
                        self.close_connection(connection).await;
                    }
                }
            }
        }
        // The queue closed: the host is shutting down and every connection goes with it, so
        // the processor releases what each one owned before its own shutdown.
        let connections: Vec<ConnectionId> = self.sessions.drain().map(|(id, _)| id).collect();
        for connection in connections {
            self.close_connection(connection).await;
        }
        self.processor.shutdown().await;
    }

    /// Forgets everything routed to `connection`, fails the server requests only it could
    /// answer (so no turn waits on a client that is gone; a thread's shared requests wait for
    /// another connection instead), and lets the processor release what
    /// the connection owned.
    async fn close_connection(&mut self, connection: ConnectionId) {
        self.outgoing
            .route_control(RouterInput::ConnectionClosed(connection))
            .await;
        self.outgoing.remove_reply_lane(connection);
        self.outgoing.connection_left_requests(
            connection,
            JSONRPCErrorError::internal(format!("{connection} closed")),
        );
        self.processor.connection_closed(connection).await;
    }

    async fn request(
        &mut self,
        connection: ConnectionId,
        request: ClientRequest,
        cancel: CancellationToken,
    ) {
        let Some(session) = self.sessions.get(&connection).cloned() else {
            tracing::warn!(%connection, "request from an unknown connection dropped");
            return;
        };
        let id = ConnectionRequestId {
            connection_id: connection,
            request_id: request.id().clone(),
            reply_lane: request.is_process_control(),
        };
        if let ClientRequest::Initialize { params, .. } = &request {
            if session.initialized {
                let error = JSONRPCErrorError::invalid_request("Already initialized");
                return self.outgoing.send_error(id, error).await;
            }
            return match self
                .processor
                .initialize(connection, params, &session)
                .await
            {
                Ok(response) => {
                    let capabilities = params.capabilities.clone().unwrap_or_default();
                    let initialized = ConnectionSessionState {
                        initialized: true,
                        experimental_api: capabilities.experimental_api,
                        opted_out_notification_methods: capabilities
                            .opt_out_notification_methods
                            .unwrap_or_default()
                            .into_iter()
                            .collect(),
                        client_info: Some(params.client_info.clone()),
                        session_source: session.session_source.clone(),
                    };
                    let filter = NotificationFilter::from_session(&initialized);
                    self.sessions.insert(connection, Arc::new(initialized));
                    // The filter goes first so that it covers everything after the reply.
                    self.outgoing
                        .route_control(RouterInput::ConnectionInitialized { connection, filter })
                        .await;
                    self.outgoing.send_response(id, response).await;
                }
                Err(error) => self.outgoing.send_error(id, error).await,
            };
        }
        if let Err(error) = self.admit(&request, &session) {
            return self.outgoing.send_error(id, error).await;
        }
        let context = RequestContext {
            id,
            session,
            cancel,
        };
        self.processor.process_request(request, context).await;
    }

    /// The handshake gate for everything but `initialize`.
    fn admit(
        &self,
        request: &ClientRequest,
        session: &ConnectionSessionState,
    ) -> Result<(), JSONRPCErrorError> {
        if let ClientRequest::Custom { method, .. } = request
            && !self.processor.handles_custom_method(method)
        {
            return Err(JSONRPCErrorError::method_not_found(method));
        }
        if !session.initialized {
            return Err(JSONRPCErrorError::invalid_request("Not initialized"));
        }
        if !session.experimental_api
            && let Some(reason) = request.experimental_reason()
        {
            return Err(JSONRPCErrorError::invalid_request(format!(
                "{reason} requires experimentalApi capability"
            )));
        }
        Ok(())
    }

    async fn notification(&mut self, connection: ConnectionId, notification: ClientNotification) {
        let Some(session) = self.sessions.get(&connection).cloned() else {
            return;
        };
        // `initialized` is informational (servers do not depend on it); other notifications
        // before the handshake are ignored like any malformed notification.
        if session.initialized {
            self.processor
                .process_notification(connection, notification, &session)
                .await;
        } else {
            tracing::debug!(
                method = notification.method(),
                "notification before initialize ignored"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outgoing::{OutgoingMessage, PendingServerRequests};
    use async_trait::async_trait;
    use serde_json::json;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tandem_protocol::{
        ClientInfo, InitializeCapabilities, InitializeParams, InitializeResponse,
        ProcessKillParams, RequestId, ServerInfo, error_codes,
    };

    /// Rejects the first `initialize`, accepts later ones, answers `acme/ping` and counts
    /// what reaches it.
    #[derive(Default)]
    struct Probe {
        initializations: AtomicUsize,
        requests: AtomicUsize,
    }

    #[async_trait]
    impl MessageProcessor for Probe {
        async fn initialize(
            &self,
            _: ConnectionId,
            _: &InitializeParams,
            _: &ConnectionSessionState,
        ) -> Result<InitializeResponse, JSONRPCErrorError> {
            if self.initializations.fetch_add(1, Ordering::SeqCst) == 0 {
                return Err(JSONRPCErrorError::invalid_request("try again"));
            }
            Ok(InitializeResponse {
                user_agent: "probe".into(),
                platform_family: "unix".into(),
                platform_os: "linux".into(),
                tandem_home: "/".into(),
                codex_home: "/".into(),
                server_info: ServerInfo {
                    name: "probe".into(),
                    version: "0".into(),
                },
                tandem_version: "0".into(),
                process_session: None,
            })
        }

        fn handles_custom_method(&self, method: &str) -> bool {
            method == "acme/ping"
        }

        async fn process_request(&self, _: ClientRequest, _: RequestContext) {
            self.requests.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn initialize(id: i64, experimental_api: bool) -> ClientRequest {
        ClientRequest::Initialize {
            request_id: RequestId::Integer(id),
            params: InitializeParams {
                client_info: ClientInfo {
                    name: "t".into(),
                    title: None,
                    version: "0".into(),
                },
                capabilities: Some(InitializeCapabilities {
                    experimental_api,
                    opt_out_notification_methods: None,
                }),
            },
        }
    }

    fn custom(id: i64, method: &str) -> ClientRequest {
        ClientRequest::Custom {
            request_id: RequestId::Integer(id),
            method: method.into(),
            params: json!({}),
        }
    }

    fn kill(id: i64) -> ClientRequest {
        ClientRequest::ProcessKill {
            request_id: RequestId::Integer(id),
            params: ProcessKillParams {
                process_handle: "p".into(),
            },
        }
    }

    struct Harness {
        dispatcher: Dispatcher,
        router: mpsc::Receiver<RouterInput>,
        probe: Arc<Probe>,
    }

    impl Harness {
        fn new() -> Self {
            let (router_tx, router) = mpsc::channel(16);
            let outgoing = OutgoingMessageSender::new(
                router_tx,
                Arc::new(PendingServerRequests::default()),
                crate::ReplayWindowLimits::default(),
                0,
            );
            let probe = Arc::new(Probe::default());
            let mut dispatcher = Dispatcher::new(probe.clone(), outgoing);
            dispatcher.open_connection(ConnectionId(1), SessionSource::AppServer);
            Self {
                dispatcher,
                router,
                probe,
            }
        }

        /// Dispatches `request` and returns the error it was answered with, if any.
        async fn send(&mut self, request: ClientRequest) -> Option<JSONRPCErrorError> {
            self.dispatcher
                .request(ConnectionId(1), request, CancellationToken::new())
                .await;
            let mut error = None;
            while let Ok(input) = self.router.try_recv() {
                if let RouterInput::Message { message, .. } = input
                    && let OutgoingMessage::Error { error: e, .. } = message.message
                {
                    error = Some(e);
                }
            }
            error
        }
    }

    #[tokio::test]
    async fn handshake_rules_hold_for_any_processor() {
        let mut h = Harness::new();
        // An unknown method is -32601 even before initialize.
        let error = h.send(custom(1, "acme/unknown")).await.unwrap();
        assert_eq!(
            (error.code, error.message.as_str()),
            (
                error_codes::METHOD_NOT_FOUND,
                "method not found: acme/unknown"
            )
        );
        let error = h.send(custom(2, "acme/ping")).await.unwrap();
        assert_eq!(
            (error.code, error.message.as_str()),
            (error_codes::INVALID_REQUEST, "Not initialized")
        );
        // A failed initialize may be retried.
        assert_eq!(
            h.send(initialize(3, false)).await.unwrap().message,
            "try again"
        );
        assert!(h.send(initialize(4, false)).await.is_none());
        let error = h.send(initialize(5, false)).await.unwrap();
        assert_eq!(error.message, "Already initialized");
        // Experimental methods need the capability this client did not ask for.
        let error = h.send(kill(6)).await.unwrap();
        assert_eq!(
            (error.code, error.message.as_str()),
            (
                error_codes::INVALID_REQUEST,
                "process/kill requires experimentalApi capability"
            )
        );
        assert!(h.send(custom(7, "acme/ping")).await.is_none());
        assert_eq!(h.probe.requests.load(Ordering::SeqCst), 1);
    }
}
