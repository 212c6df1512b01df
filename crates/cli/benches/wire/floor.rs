//! The floor of the wire figures: what the same codec and transports do with nothing behind
//! them. The bench binary re-runs itself as `wire --floor-server LISTEN` (`stdio://` or
//! `ws://127.0.0.1:0`), which serves [`FloorProcessor`] through `tandem_host::transport`, the
//! code `tandem app-server` serves `TandemServer` with: the same reader, dispatcher, router,
//! writer task (the stdout thread for stdio, axum for websocket) and `tandem_protocol::wire`
//! codec. The processor answers at once and keeps no state: `thread/loaded/list` with an empty
//! page, and `process/spawn` of `head -c N` with a stream of N zero bytes in 64 KiB deltas (the
//! size of the real pump's chunks) from one buffer, each delta waiting until its writer took
//! it (the real pump's delivery discipline), then `process/exited`. No child, no pump, no
//! store: a Tandem figure divided by its floor is what Tandem adds to the transport.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use tandem_host::transport::{TransportHost, TransportHostOptions, stdio, websocket};
use tandem_host::{
    ConnectionId, ConnectionSessionState, MessageProcessor, OutgoingMessageSender, RequestContext,
};
use tandem_protocol::{
    ClientRequest, InitializeParams, InitializeResponse, JSONRPCErrorError,
    ProcessExitedNotification, ProcessOutputDeltaNotification, ProcessOutputStream,
    ServerNotification,
};

/// The argument that turns the bench binary into a floor server.
pub(crate) const FLOOR_SERVER_FLAG: &str = "--floor-server";
/// The size of one delta of the floor's output stream (the pump's chunk size).
const CHUNK: usize = 64 * 1024;

/// Answers what the wire figures ask, with nothing behind the answers.
struct FloorProcessor {
    outgoing: OutgoingMessageSender,
    /// One chunk of zeros; every delta is a reference-counted view of it.
    zeros: Bytes,
}

#[async_trait]
impl MessageProcessor for FloorProcessor {
    async fn initialize(
        &self,
        _: ConnectionId,
        _: &InitializeParams,
        _: &ConnectionSessionState,
    ) -> Result<InitializeResponse, JSONRPCErrorError> {
        Ok(tandem_test_support::initialize_response())
    }

    async fn process_request(&self, request: ClientRequest, context: RequestContext) {
        match request {
            ClientRequest::ThreadLoadedList { .. } => {
                let page = serde_json::json!({"data": [], "nextCursor": null});
                self.outgoing.send_response(context.id, page).await;
            }
            ClientRequest::ProcessSpawn { params, .. } => {
                // `head -c N /dev/zero`, as the output figure asks for it.
                let Some(bytes) = params
                    .command
                    .get(2)
                    .and_then(|count| count.parse::<usize>().ok())
                else {
                    let error = JSONRPCErrorError::invalid_request("floor: head -c N only");
                    return self.outgoing.send_error(context.id, error).await;
                };
                self.outgoing
                    .send_response(context.id.clone(), serde_json::json!({}))
                    .await;
                let connection = context.id.connection_id;
                let mut left = bytes;
                while left > 0 {
                    let take = left.min(CHUNK);
                    left -= take;
                    let delta = ProcessOutputDeltaNotification {
                        process_handle: params.process_handle.clone(),
                        stream: ProcessOutputStream::Stdout,
                        delta: self.zeros.slice(..take),
                        cap_reached: false,
                    };
                    // Each delta waits until its writer took it, as the server's pump
                    // does: the websocket router never waits on a writer, so a producer that
                    // does not wait would overflow the connection's byte bound and close it.
                    self.outgoing
                        .send_notification_and_wait(
                            connection,
                            ServerNotification::ProcessOutputDelta(delta),
                        )
                        .await;
                }
                let exited = ProcessExitedNotification {
                    process_handle: params.process_handle,
                    exit_code: 0,
                    stdout: String::new(),
                    stdout_cap_reached: false,
                    stderr: String::new(),
                    stderr_cap_reached: false,
                    output_drain_timed_out: false,
                };
                self.outgoing
                    .send_notification(connection, ServerNotification::ProcessExited(exited))
                    .await;
            }
            other => {
                let error = JSONRPCErrorError::method_not_found(other.method());
                self.outgoing.send_error(context.id, error).await;
            }
        }
    }
}

/// Serves the floor on `listen` until stdin ends (stdio) or the bench kills it (websocket, unix
/// socket).
pub(crate) fn serve(listen: &str) -> std::io::Result<()> {
    // What `tandem app-server` runs on: a multi-thread runtime.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let host = TransportHost::start(
            |outgoing| {
                Arc::new(FloorProcessor {
                    outgoing,
                    zeros: Bytes::from(vec![0u8; CHUNK]),
                }) as Arc<dyn MessageProcessor>
            },
            TransportHostOptions::default(),
        );
        if let Some(path) = listen.strip_prefix("unix://") {
            let listener = tandem_host::transport::unix_socket::bind(std::path::Path::new(path))
                .await
                .map_err(std::io::Error::other)?;
            eprintln!("listening on: unix://{path}");
            websocket::serve_unix(
                host.clone(),
                listener,
                websocket::WebSocketOptions::default(),
            )
            .await?;
            host.shutdown().await;
            return Ok(());
        }
        match listen.strip_prefix("ws://") {
            None => stdio::serve(&host, stdio::StdioOptions::default()).await?,
            Some(address) => {
                let address = address.parse().map_err(|error| {
                    std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{error}"))
                })?;
                let (listener, bound) = websocket::bind(address).await?;
                eprintln!("listening on: ws://{bound}");
                websocket::serve(
                    host.clone(),
                    listener,
                    websocket::WebSocketOptions::default(),
                )
                .await?;
            }
        }
        host.shutdown().await;
        Ok(())
    })
}
