//! One connection to one MCP server, over rmcp's client: a stdio child's pipes or streamable
//! HTTP. The connection routes the server's progress notifications to the call they belong to
//! (through the progress token of the request, MCP's request relation), in the order they came
//! and before the call's answer ([`crate::progress`]); what belongs to no call in flight is
//! logged and dropped. An elicitation request (`elicitation/create`, form mode advertised)
//! goes to the [`McpElicitor`] of the call it belongs to. Over streamable HTTP the request
//! says which call that is (it comes on the response stream of that call's POST, MCP's
//! request relation). Over stdio it carries no relation, so it is attributed to the one call
//! in flight on the connection; with none or several, or a call without an elicitor (a
//! client's `mcpServer/tool/call`), it cannot be attributed: it is declined and logged.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, ElicitRequestParams,
    ElicitResult, ElicitationAction, ElicitationCapability, FormElicitationCapability,
    GetExtensions as _, Implementation, InitializeRequestParams, JsonObject,
    ReadResourceRequestParams, ReadResourceResult, Resource, ResourceTemplate, ServerResult, Tool,
    UrlElicitationCapability,
};
use rmcp::service::{
    InboundStreamOrigin, Peer, PeerRequestOptions, RequestContext, RoleClient, ServiceError,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::config::{HttpServerConfig, McpServerConfig, McpTransportConfig};
use crate::error::McpError;
use crate::in_order::InOrder;
use crate::progress::{
    self, CallNumber, McpProgress, ProgressRoute, ProgressRoutes, RouteGuard, Routed,
};
use crate::stdio;

/// How many progress updates of one call may wait for their consumer; more are dropped (and
/// counted in the log), so a server flooding notifications cannot grow memory.
pub const PROGRESS_QUEUE: usize = 64;

/// The most bytes of a JSON response body (or of one SSE event) accepted from an HTTP
/// server, as [`stdio::MAX_MESSAGE_BYTES`] is for a stdio one.
pub const MAX_HTTP_MESSAGE_BYTES: usize = stdio::MAX_MESSAGE_BYTES;

/// Answers an MCP server's elicitation request for the call it was attributed to (the turn
/// whose call it is asks its client, `mcpServer/elicitation/request`).
pub trait McpElicitor: Send + Sync {
    /// The user's answer to `request` of `server`.
    fn elicit(
        &self,
        server: &str,
        request: ElicitRequestParams,
    ) -> Pin<Box<dyn Future<Output = ElicitResult> + Send + 'static>>;
}

/// The calls in flight on a connection, each with the elicitor of its caller, by call number.
type CallsInFlight = Arc<Mutex<BTreeMap<u64, Option<Arc<dyn McpElicitor>>>>>;

/// What Tandem's side of the connection does with what the server sends unasked. Progress is
/// not handled here but in the transport ([`crate::progress`]), which sees it in order.
#[derive(Clone)]
struct Handler {
    server: String,
    calls: CallsInFlight,
    routes: ProgressRoutes,
}

impl Handler {
    /// The elicitor of the call a server request coming from `origin` belongs to; `Err` says
    /// why none can answer it.
    fn elicitor_for(
        &self,
        origin: Option<&InboundStreamOrigin>,
    ) -> Result<Arc<dyn McpElicitor>, &'static str> {
        let calls = self
            .calls
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let elicitor = match origin {
            Some(InboundStreamOrigin::OutboundRequest(request)) => {
                let number = progress::call_of(&self.routes, request)
                    .ok_or("it names a request that is no tool call in flight")?;
                calls.get(&number).cloned().flatten()
            }
            // Stdio, or an HTTP server's stream that belongs to no request: only the number
            // of calls in flight can tell.
            Some(InboundStreamOrigin::Unassociated) | None => match calls.len() {
                1 => calls.values().next().cloned().flatten(),
                0 => return Err("no tool call is in flight"),
                _ => return Err("several tool calls are in flight and it names none of them"),
            },
        };
        elicitor.ok_or("its call was made by a client, not by a turn")
    }
}

impl rmcp::ClientHandler for Handler {
    fn get_info(&self) -> InitializeRequestParams {
        let mut info = InitializeRequestParams::default();
        info.client_info = Implementation::new("tandem", env!("CARGO_PKG_VERSION"));
        let mut elicitation = ElicitationCapability::new();
        elicitation.form = Some(FormElicitationCapability::default());
        // A URL to open goes to the client as it is (`mcpServer/elicitation/request`, mode
        // `url`), as the reference's does.
        elicitation.url = Some(UrlElicitationCapability::default());
        info.capabilities.elicitation = Some(elicitation);
        info
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        match self.elicitor_for(context.extensions.get::<InboundStreamOrigin>()) {
            Ok(elicitor) => Ok(elicitor.elicit(&self.server, request).await),
            Err(why) => {
                tracing::warn!(server = %self.server,
                    "MCP elicitation request not attributable to a turn's tool call ({why}); declined");
                Ok(ElicitResult::new(ElicitationAction::Decline))
            }
        }
    }
}

/// A live connection to one server. Dropping it closes the connection and kills a stdio
/// server's process group.
pub struct McpConnection {
    server: String,
    peer: Peer<RoleClient>,
    routes: ProgressRoutes,
    calls: CallsInFlight,
    next_call: AtomicU64,
    /// Why a stdio server's output was refused (a malformed message), once it was: the
    /// reason its connection closed.
    malformed: Arc<OnceLock<String>>,
    /// Cancelled to stop the service loop.
    stop: CancellationToken,
    /// Becomes `true` once the service loop ended (the server exited, crashed, or sent what
    /// closed the connection).
    closed: watch::Receiver<bool>,
    /// What the server said about itself at the handshake.
    server_info: Option<Implementation>,
    capabilities: serde_json::Value,
}

impl std::fmt::Debug for McpConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpConnection")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl McpConnection {
    /// Starts (stdio) or reaches (HTTP) the server of `config` and makes the MCP handshake.
    /// No timeout of its own: the caller bounds it with `startup_timeout_sec`. Dropping the
    /// future kills a child it started.
    pub async fn connect(config: &McpServerConfig) -> Result<Self, McpError> {
        let server = config.name.clone();
        let routes = ProgressRoutes::default();
        let calls = CallsInFlight::default();
        let malformed = Arc::new(OnceLock::new());
        let handler = Handler {
            server: server.clone(),
            calls: Arc::clone(&calls),
            routes: Arc::clone(&routes),
        };
        let stop = CancellationToken::new();
        let handshake_failed = |error: rmcp::service::ClientInitializeError| {
            if error.is_authorization_required() {
                McpError::AuthenticationRequired {
                    server: server.clone(),
                }
            } else {
                McpError::Connect {
                    server: server.clone(),
                    reason: error.to_string(),
                }
            }
        };
        let (service, guard) = match &config.transport {
            McpTransportConfig::Stdio(stdio_config) => {
                let child = stdio::spawn(&server, stdio_config)?;
                let stdio::StdioChild {
                    child,
                    stdin,
                    stdout,
                    group,
                } = child;
                let stdout = stdout.reporting_to(Arc::clone(&malformed));
                let transport = Routed::new(
                    &server,
                    InOrder::new(AsyncRwTransport::new_client(stdout, stdin)),
                    Arc::clone(&routes),
                );
                let service = rmcp::service::serve_client_with_ct(handler, transport, stop.clone())
                    .await
                    .map_err(handshake_failed)?;
                (service, Some((child, group)))
            }
            McpTransportConfig::StreamableHttp(http) => {
                let transport =
                    Routed::new(&server, http_transport(&server, http)?, Arc::clone(&routes));
                let service = rmcp::service::serve_client_with_ct(handler, transport, stop.clone())
                    .await
                    .map_err(handshake_failed)?;
                (service, None)
            }
        };
        let peer = service.peer().clone();
        let (server_info, capabilities) = match peer.peer_info() {
            Some(info) => (
                info.server_info.clone(),
                serde_json::to_value(&info.capabilities).unwrap_or_default(),
            ),
            None => (None, serde_json::Value::Null),
        };
        let (closed_tx, closed) = watch::channel(false);
        let log_server = server.clone();
        tokio::spawn(async move {
            // Holds the child and its group for as long as the connection runs; both go when
            // the loop ends, which kills whatever the server left behind.
            let _guard = guard;
            let reason = service.waiting().await;
            tracing::info!(server = %log_server, ?reason, "MCP connection closed");
            let _ = closed_tx.send(true);
        });
        Ok(Self {
            server,
            peer,
            routes,
            calls,
            next_call: AtomicU64::new(0),
            malformed,
            stop,
            closed,
            server_info,
            capabilities,
        })
    }

    /// What the server said about itself at the handshake.
    pub fn server_info(&self) -> Option<&Implementation> {
        self.server_info.as_ref()
    }

    /// The capabilities the server advertised, as JSON.
    pub fn capabilities(&self) -> &serde_json::Value {
        &self.capabilities
    }

    /// Whether the connection has closed.
    pub fn is_closed(&self) -> bool {
        *self.closed.borrow()
    }

    /// Resolves once the connection has closed.
    pub async fn closed(&self) {
        let mut closed = self.closed.clone();
        let _ = closed.wait_for(|closed| *closed).await;
    }

    /// Every tool of the server (all pages).
    pub async fn list_tools(&self) -> Result<Vec<Tool>, McpError> {
        self.peer
            .list_all_tools()
            .await
            .map_err(|error| self.failed(error))
    }

    /// Every resource of the server; a server without resources has none.
    pub async fn list_resources(&self) -> Result<Vec<Resource>, McpError> {
        if !self.has_capability("resources") {
            return Ok(Vec::new());
        }
        self.peer
            .list_all_resources()
            .await
            .map_err(|error| self.failed(error))
    }

    /// Every resource template of the server; a server without resources has none.
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, McpError> {
        if !self.has_capability("resources") {
            return Ok(Vec::new());
        }
        self.peer
            .list_all_resource_templates()
            .await
            .map_err(|error| self.failed(error))
    }

    /// Reads one resource.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, McpError> {
        self.peer
            .read_resource(ReadResourceRequestParams::new(uri))
            .await
            .map_err(|error| self.failed(error))
    }

    /// Calls `tool` with `arguments`. Progress goes to `progress` (at most
    /// [`PROGRESS_QUEUE`] waiting); past `timeout`, or once `cancel` is cancelled, the server
    /// is sent `notifications/cancelled` and the call fails.
    pub async fn call_tool(
        &self,
        tool: &str,
        arguments: Option<JsonObject>,
        timeout: Duration,
        progress: Option<mpsc::Sender<McpProgress>>,
        cancel: CancellationToken,
    ) -> Result<CallToolResult, McpError> {
        self.call_tool_for(tool, arguments, timeout, progress, cancel, None)
            .await
    }

    /// [`McpConnection::call_tool`] for a caller whose `elicitor` answers the elicitation
    /// requests attributed to this call (see the module's docs).
    pub async fn call_tool_for(
        &self,
        tool: &str,
        arguments: Option<JsonObject>,
        timeout: Duration,
        progress: Option<mpsc::Sender<McpProgress>>,
        cancel: CancellationToken,
        elicitor: Option<Arc<dyn McpElicitor>>,
    ) -> Result<CallToolResult, McpError> {
        let number = self.next_call.fetch_add(1, Ordering::Relaxed);
        self.calls
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(number, elicitor);
        let _in_flight = CallGuard {
            calls: Arc::clone(&self.calls),
            number,
        };
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = arguments;
        let mut call = CallToolRequest::new(params);
        call.extensions_mut().insert(CallNumber(number));
        if let Some(sender) = progress {
            // The transport registers the route as it sends the request (crate::progress).
            call.extensions_mut().insert(ProgressRoute(sender));
        }
        let mut handle = self
            .peer
            .send_cancellable_request(
                ClientRequest::CallToolRequest(call),
                PeerRequestOptions::no_options(),
            )
            .await
            .map_err(|error| self.failed(error))?;
        let _route = RouteGuard {
            routes: Arc::clone(&self.routes),
            request: handle.id.clone(),
        };
        let answer = tokio::select! {
            answer = &mut handle.rx => answer,
            () = tokio::time::sleep(timeout) => {
                let _ = handle.cancel(Some("tool_timeout_sec elapsed".to_owned())).await;
                return Err(McpError::ToolTimeout {
                    server: self.server.clone(),
                    tool: tool.to_owned(),
                    timeout,
                });
            }
            () = cancel.cancelled() => {
                let _ = handle.cancel(Some("the turn was interrupted".to_owned())).await;
                return Err(McpError::Cancelled { server: self.server.clone() });
            }
            () = self.closed() => return Err(self.closed_error()),
        };
        match answer {
            Ok(Ok(ServerResult::CallToolResult(result))) => Ok(result),
            Ok(Ok(ServerResult::EmptyResult(_))) => Ok(CallToolResult::default()),
            Ok(Ok(other)) => Err(McpError::Server {
                server: self.server.clone(),
                message: format!(
                    "expected a tools/call result, got {}",
                    serde_json::to_string(&other).unwrap_or_default()
                ),
            }),
            Ok(Err(error)) => Err(self.failed(error)),
            Err(_) => Err(self.closed_error()),
        }
    }

    /// Closes the connection (a stdio server's group is killed).
    pub fn close(&self) {
        self.stop.cancel();
    }

    fn has_capability(&self, name: &str) -> bool {
        self.capabilities
            .get(name)
            .is_some_and(|value| !value.is_null())
    }

    /// Why the connection closed, as a call in flight then fails: the malformed message a
    /// stdio server sent, when that was it.
    pub(crate) fn closed_error(&self) -> McpError {
        match self.malformed.get() {
            Some(reason) => McpError::Malformed {
                server: self.server.clone(),
                reason: reason.clone(),
            },
            None => McpError::ConnectionClosed {
                server: self.server.clone(),
            },
        }
    }

    fn failed(&self, error: ServiceError) -> McpError {
        let server = self.server.clone();
        match error {
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => self.closed_error(),
            ServiceError::McpError(error) => McpError::Server {
                server,
                message: error.message.to_string(),
            },
            other => McpError::Server {
                server,
                message: other.to_string(),
            },
        }
    }
}

impl Drop for McpConnection {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Removes a call from the calls in flight when it ends, however it ends.
struct CallGuard {
    calls: CallsInFlight,
    number: u64,
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.calls
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .remove(&self.number);
    }
}

/// The streamable HTTP transport of `http`: its headers, its bearer token, its bounds.
fn http_transport(
    server: &str,
    http: &HttpServerConfig,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, McpError> {
    let missing = |variable: &str| McpError::MissingVariable {
        server: server.to_owned(),
        variable: variable.to_owned(),
    };
    let mut config = StreamableHttpClientTransportConfig::with_uri(http.url.clone());
    if let Some(variable) = &http.bearer_token_env_var {
        let token = std::env::var(variable).map_err(|_| missing(variable))?;
        config.auth_header = Some(token);
    }
    let mut headers: Vec<(String, String)> = http
        .http_headers
        .iter()
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    for (name, variable) in &http.env_http_headers {
        let value = std::env::var(variable).map_err(|_| missing(variable))?;
        headers.push((name.clone(), value));
    }
    for (name, value) in headers {
        let invalid = |what: &str| McpError::Connect {
            server: server.to_owned(),
            reason: format!("header {name} has an invalid {what}; fix http_headers"),
        };
        let name_value =
            http::HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid("name"))?;
        let header_value = http::HeaderValue::from_str(&value).map_err(|_| invalid("value"))?;
        config.custom_headers.insert(name_value, header_value);
    }
    config.max_json_response_size = MAX_HTTP_MESSAGE_BYTES;
    config.max_sse_event_size = MAX_HTTP_MESSAGE_BYTES;
    Ok(StreamableHttpClientTransport::with_client(
        reqwest::Client::new(),
        config,
    ))
}
