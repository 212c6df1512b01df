//! tandem-host runs a Tandem [`MessageProcessor`] inside the caller's process, on Tokio tasks
//! behind bounded queues, with the semantics of an out-of-process app-server: typed requests
//! in, JSON-RPC result envelopes out, and no loss or deadlock under backpressure.
//!
//! # Embedding in five steps
//!
//! 1. Implement [`MessageProcessor`]: supply the `initialize` result and answer requests
//!    through the [`OutgoingMessageSender`] the host gives your factory.
//! 2. [`in_process::start`] it; the handshake happens before `start` returns.
//! 3. Send typed requests with [`InProcessClientHandle::request`]; each resolves to the
//!    result object or the JSON-RPC error.
//! 4. Read notifications, server requests and `Lagged` markers with
//!    [`InProcessClientHandle::next_event`].
//! 5. [`InProcessClientHandle::shutdown`] when done; it is bounded by its two timeouts.
//!
//! ```
//! use std::sync::Arc;
//! use async_trait::async_trait;
//! use serde_json::json;
//! use tandem_host::in_process::{self, InProcessStartArgs, InProcessServerEvent};
//! use tandem_host::{ConnectionId, ConnectionSessionState, MessageProcessor,
//!                   OutgoingMessageSender, RequestContext};
//! use tandem_protocol::*;
//!
//! struct Echo { outgoing: OutgoingMessageSender }
//!
//! #[async_trait]
//! impl MessageProcessor for Echo {
//!     async fn initialize(&self, _: ConnectionId, _: &InitializeParams, _: &ConnectionSessionState)
//!         -> Result<InitializeResponse, JSONRPCErrorError> {
//!         Ok(InitializeResponse {
//!             user_agent: "echo/1 (docs)".into(), platform_family: "unix".into(),
//!             platform_os: "linux".into(), tandem_home: "/tmp".into(),
//!             codex_home: "/tmp".into(), tandem_version: "1".into(), process_session: None,
//!             server_info: ServerInfo { name: "echo".into(), version: "1".into() },
//!         })
//!     }
//!     fn handles_custom_method(&self, method: &str) -> bool { method == "echo" }
//!     async fn process_request(&self, request: ClientRequest, context: RequestContext) {
//!         if let ClientRequest::Custom { params, .. } = request {
//!             self.outgoing.send_response(context.id.clone(), params.clone()).await;
//!             let note = ServerNotification::Custom { method: "echoed".into(), params };
//!             self.outgoing.send_notification(context.id.connection_id, note).await;
//!         }
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! let init = InitializeParams {
//!     client_info: ClientInfo { name: "docs".into(), title: None, version: "1".into() },
//!     capabilities: None,
//! };
//! let mut handle = in_process::start(InProcessStartArgs::new(
//!     |outgoing| Arc::new(Echo { outgoing }) as Arc<dyn MessageProcessor>,
//!     init,
//! )).await?;
//!
//! let request = ClientRequest::Custom {
//!     request_id: RequestId::Integer(1), method: "echo".into(), params: json!({"hi": 1}),
//! };
//! assert_eq!(handle.request(request).await?, Ok(json!({"hi": 1})));
//! match handle.next_event().await {
//!     Some(InProcessServerEvent::ServerNotification(note)) => assert_eq!(note.method(), "echoed"),
//!     other => panic!("unexpected event {other:?}"),
//! }
//! handle.shutdown().await?;
//! assert!(handle.next_event().await.is_none());
//! # Ok(())
//! # }
//! ```

mod byte_budget;
mod close;
mod delivery;
mod dispatch;
pub mod in_process;
mod json_size;
mod message;
mod outgoing;
mod processor;
mod replay;
mod router;
pub mod transport;

pub use delivery::DeliveryPolicy;
pub use in_process::{
    DEFAULT_IN_PROCESS_CHANNEL_CAPACITY, InProcessClientHandle, InProcessClientSender,
    InProcessServerEvent, InProcessStartArgs,
};
pub use outgoing::{
    DEFAULT_UNANSWERED_REQUEST_TIMEOUT, OutgoingMessage, OutgoingMessageSender, PendingAttachment,
    PendingServerRequest, RequestResult, StreamDelivery, is_unanswered,
};
pub use processor::{
    ConnectionId, ConnectionRequestId, ConnectionSessionState, MessageProcessor, RequestContext,
};
pub use replay::{
    DEFAULT_REPLAY_WINDOW_BYTES, DEFAULT_REPLAY_WINDOW_EVENTS, ReplayWindowLimits,
    ReplayWindowStats, StreamAttachment,
};
pub use tandem_protocol::SessionSource;
