//! Test harness for embedders of the Tandem in-process host: a small configurable
//! [`TestProcessor`], helpers for reading events with a deadline, so tests fail with a
//! message instead of hanging, [`mock_http`], a loopback HTTP server for gated, slow,
//! truncated and reset streams (model providers under test), [`model_streams`], the stream
//! bodies such a provider sends, [`binary`], which builds and guards the `tandem` binary
//! for tests that drive it from outside, [`transcript`], which takes ids, times and the working
//! directory out of two runs' messages so they compare, and (feature `cassette`) `cassette`,
//! in-process servers whose model answers from a recording.
//!
//! ```
//! use std::time::Duration;
//! use serde_json::json;
//! use tandem_test_support::{TestProcessor, custom_request, read_until_method};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let processor = TestProcessor::builder().on("ping", |call| async move {
//!     call.reply(json!({"pong": true})).await;
//!     call.notify("pinged", json!({})).await;
//! });
//! let mut handle = processor.start_default().await.unwrap();
//! let reply = handle.request(custom_request(1, "ping", json!({}))).await.unwrap();
//! assert_eq!(reply, Ok(json!({"pong": true})));
//! read_until_method(&mut handle, "pinged", Duration::from_secs(5)).await.unwrap();
//! handle.shutdown().await.unwrap();
//! # }
//! ```

pub mod binary;
// cassette33: servers on a cassette.
#[cfg(feature = "cassette")]
pub mod cassette;
// mcp30: the MCP test server.
pub mod mcp_server;
pub mod mock_app_server;
pub mod mock_http;
// reason29: model stream bodies.
pub mod model_streams;
pub mod postgres;
pub mod transcript;

pub use mock_app_server::MockWebSocketServer;

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use tandem_host::in_process::{self, InProcessStartArgs};
use tandem_host::{
    ConnectionId, ConnectionSessionState, InProcessClientHandle, InProcessServerEvent,
    MessageProcessor, OutgoingMessageSender, RequestContext,
};
use tandem_protocol::{
    ClientInfo, ClientRequest, InitializeCapabilities, InitializeParams, InitializeResponse,
    JSONRPCErrorError, RequestId, ServerInfo, ServerNotification,
};

type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;
type Handler = Arc<dyn Fn(Call) -> BoxFuture + Send + Sync>;
type ShutdownHook = Arc<dyn Fn() -> BoxFuture + Send + Sync>;

/// One request as a [`TestProcessor`] handler sees it, with shortcuts to answer it.
pub struct Call {
    /// The request.
    pub request: ClientRequest,
    /// Its id, session and cancellation token.
    pub context: RequestContext,
    /// The processor's sender, for anything beyond the shortcuts.
    pub outgoing: OutgoingMessageSender,
}

impl Call {
    /// The request params (`Custom` requests only; `Null` otherwise).
    pub fn params(&self) -> Value {
        match &self.request {
            ClientRequest::Custom { params, .. } => params.clone(),
            _ => Value::Null,
        }
    }

    /// Answers the request with `result`.
    pub async fn reply(&self, result: Value) {
        self.outgoing
            .send_response(self.context.id.clone(), result)
            .await;
    }

    /// Answers the request with an error.
    pub async fn fail(&self, error: JSONRPCErrorError) {
        self.outgoing
            .send_error(self.context.id.clone(), error)
            .await;
    }

    /// Sends a custom notification to the calling connection.
    pub async fn notify(&self, method: &str, params: Value) {
        let notification = ServerNotification::Custom {
            method: method.to_owned(),
            params,
        };
        self.outgoing
            .send_notification(self.context.id.connection_id, notification)
            .await;
    }
}

/// A [`MessageProcessor`] whose custom methods are closures. Methods without a handler answer
/// -32601 (the host already does so for unknown custom methods).
#[derive(Clone, Default)]
pub struct TestProcessor {
    handlers: HashMap<String, Handler>,
    reject_initialize: Option<JSONRPCErrorError>,
    on_shutdown: Option<ShutdownHook>,
}

impl TestProcessor {
    /// An empty processor to configure.
    pub fn builder() -> Self {
        Self::default()
    }

    /// Handles the custom method `method` with `handler`, which runs on the processor task
    /// (spawn inside it for work that must not block the next request).
    pub fn on<F, Fut>(mut self, method: &str, handler: F) -> Self
    where
        F: Fn(Call) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.handlers.insert(
            method.to_owned(),
            Arc::new(move |call| Box::pin(handler(call))),
        );
        self
    }

    /// Rejects every `initialize` with `error`.
    pub fn reject_initialize(mut self, error: JSONRPCErrorError) -> Self {
        self.reject_initialize = Some(error);
        self
    }

    /// Runs `hook` as the processor's shutdown.
    pub fn on_shutdown<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.on_shutdown = Some(Arc::new(move || Box::pin(hook())));
        self
    }

    /// The processor factory a host takes (in-process or [`tandem_host::transport`]).
    pub fn factory(self) -> impl FnOnce(OutgoingMessageSender) -> Arc<dyn MessageProcessor> {
        move |outgoing| {
            Arc::new(RunningTestProcessor {
                config: self,
                outgoing,
            }) as Arc<dyn MessageProcessor>
        }
    }

    /// Start args for this processor with [`initialize_params`]`(experimental_api)`.
    pub fn start_args(self, experimental_api: bool) -> InProcessStartArgs {
        InProcessStartArgs::new(
            move |outgoing| {
                Arc::new(RunningTestProcessor {
                    config: self,
                    outgoing,
                }) as Arc<dyn MessageProcessor>
            },
            initialize_params(experimental_api),
        )
    }

    /// Starts an in-process host for this processor with default settings.
    pub async fn start_default(self) -> io::Result<InProcessClientHandle> {
        in_process::start(self.start_args(false)).await
    }
}

struct RunningTestProcessor {
    config: TestProcessor,
    outgoing: OutgoingMessageSender,
}

#[async_trait]
impl MessageProcessor for RunningTestProcessor {
    async fn initialize(
        &self,
        _connection: ConnectionId,
        _params: &InitializeParams,
        _session: &ConnectionSessionState,
    ) -> Result<InitializeResponse, JSONRPCErrorError> {
        match &self.config.reject_initialize {
            Some(error) => Err(error.clone()),
            None => Ok(initialize_response()),
        }
    }

    fn handles_custom_method(&self, method: &str) -> bool {
        self.config.handlers.contains_key(method)
    }

    async fn process_request(&self, request: ClientRequest, context: RequestContext) {
        let handler = self.config.handlers.get(request.method()).cloned();
        match handler {
            Some(handler) => {
                let call = Call {
                    request,
                    context,
                    outgoing: self.outgoing.clone(),
                };
                handler(call).await;
            }
            None => {
                let error = JSONRPCErrorError::method_not_found(request.method());
                self.outgoing.send_error(context.id, error).await;
            }
        }
    }

    async fn shutdown(&self) {
        if let Some(hook) = &self.config.on_shutdown {
            hook().await;
        }
    }
}

/// `initialize` params for a test client, optionally opting in to the experimental API.
pub fn initialize_params(experimental_api: bool) -> InitializeParams {
    InitializeParams {
        client_info: ClientInfo {
            name: "tandem-test".into(),
            title: Some("Tandem test client".into()),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        capabilities: Some(InitializeCapabilities {
            experimental_api,
            opt_out_notification_methods: None,
        }),
    }
}

/// A plausible `initialize` result for test processors.
pub fn initialize_response() -> InitializeResponse {
    InitializeResponse {
        user_agent: format!("tandem-test/{}", env!("CARGO_PKG_VERSION")),
        platform_family: "unix".into(),
        platform_os: std::env::consts::OS.into(),
        tandem_home: std::env::temp_dir().display().to_string(),
        codex_home: std::env::temp_dir().display().to_string(),
        server_info: ServerInfo {
            name: "tandem-test".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        tandem_version: env!("CARGO_PKG_VERSION").into(),
        process_session: None,
    }
}

/// A `Custom` request with an integer id.
pub fn custom_request(id: i64, method: &str, params: Value) -> ClientRequest {
    ClientRequest::Custom {
        request_id: RequestId::Integer(id),
        method: method.to_owned(),
        params,
    }
}

/// Why an event helper gave up.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    /// Nothing matching arrived in time.
    #[error("no `{method}` event within {within:?}; saw {seen:?}")]
    TimedOut {
        /// The method waited for.
        method: String,
        /// The deadline.
        within: Duration,
        /// Methods of the events seen meanwhile.
        seen: Vec<String>,
    },
    /// The event stream ended.
    #[error("event stream ended while waiting for `{method}`; saw {seen:?}")]
    Closed {
        /// The method waited for.
        method: String,
        /// Methods of the events seen meanwhile.
        seen: Vec<String>,
    },
    /// An event that must not arrive did.
    #[error("unexpected `{method}` event: {event:?}")]
    Unexpected {
        /// Its method.
        method: String,
        /// The event.
        event: Box<InProcessServerEvent>,
    },
}

/// The method of an event: the notification or request method, or `"lagged"`.
pub fn event_method(event: &InProcessServerEvent) -> &str {
    match event {
        InProcessServerEvent::ServerNotification(notification) => notification.method(),
        InProcessServerEvent::ServerRequest(request) => request.method(),
        InProcessServerEvent::Lagged { .. } => "lagged",
    }
}

/// Reads events until one has `method`, and returns it; the events before it are discarded.
pub async fn read_until_method(
    handle: &mut InProcessClientHandle,
    method: &str,
    within: Duration,
) -> Result<InProcessServerEvent, EventError> {
    let mut seen = Vec::new();
    let search = async {
        while let Some(event) = handle.next_event().await {
            if event_method(&event) == method {
                return Some(event);
            }
            seen.push(event_method(&event).to_owned());
        }
        None
    };
    match tokio::time::timeout(within, search).await {
        Ok(Some(event)) => Ok(event),
        Ok(None) => Err(EventError::Closed {
            method: method.to_owned(),
            seen,
        }),
        Err(_) => Err(EventError::TimedOut {
            method: method.to_owned(),
            within,
            seen,
        }),
    }
}

/// Reads events for `window` and fails if one with `method` arrives; returns the others.
pub async fn expect_no_event(
    handle: &mut InProcessClientHandle,
    method: &str,
    window: Duration,
) -> Result<Vec<InProcessServerEvent>, EventError> {
    let mut others = Vec::new();
    let watch = async {
        while let Some(event) = handle.next_event().await {
            if event_method(&event) == method {
                return Some(event);
            }
            others.push(event);
        }
        // The stream ended: nothing more can arrive; wait out the window like a quiet stream.
        std::future::pending::<()>().await;
        None
    };
    match tokio::time::timeout(window, watch).await {
        Ok(Some(event)) => Err(EventError::Unexpected {
            method: method.to_owned(),
            event: Box::new(event),
        }),
        _ => Ok(others),
    }
}

/// Sends `request`, retrying while the client queue is full (`WouldBlock`) or the processor
/// queue is (-32001, "safe to retry later"), and waits up to `within` for the reply.
pub async fn request_with_retry(
    handle: &InProcessClientHandle,
    request: ClientRequest,
    within: Duration,
) -> io::Result<Result<Value, JSONRPCErrorError>> {
    tokio::time::timeout(within, async {
        loop {
            match handle.request(request.clone()).await {
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
                Ok(Err(error)) if error.code == tandem_protocol::error_codes::OVERLOADED => {}
                other => return other,
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no reply in time"))?
}

/// Sends `request`, retrying only while the client queue is full (`WouldBlock`), and waits up
/// to `within` for whatever the reply is, -32001 included: for tests of the overload answers.
pub async fn request_when_room(
    handle: &InProcessClientHandle,
    request: ClientRequest,
    within: Duration,
) -> io::Result<Result<Value, JSONRPCErrorError>> {
    tokio::time::timeout(within, async {
        loop {
            match handle.request(request.clone()).await {
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                    tokio::task::yield_now().await;
                }
                other => return other,
            }
        }
    })
    .await
    .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no reply in time"))?
}

/// Awaits `future`, failing the test with `what` if it takes longer than `limit`.
pub async fn within<F: Future>(limit: Duration, what: &str, future: F) -> F::Output {
    match tokio::time::timeout(limit, future).await {
        Ok(output) => output,
        Err(_) => panic!("timed out after {limit:?}: {what}"),
    }
}

/// Polls `condition` every 10 ms for at most `limit`: for outside state with nothing to wait
/// on, such as whether a process still exists.
pub async fn eventually(limit: Duration, what: &str, mut condition: impl FnMut() -> bool) {
    within(limit, what, async {
        while !condition() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

/// Pids of live (non-zombie) processes whose environment holds `variable=value`: how tests
/// find every process a child started, grandchildren included, since they inherit it. Reads
/// `/proc`, so it finds nothing where there is none.
pub fn live_pids_with_env(variable: &str, value: &str) -> Vec<u32> {
    let needle = format!("{variable}={value}");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let (_, rest) = stat.rsplit_once(')')?;
            if rest.split_whitespace().next()? == "Z" {
                return None;
            }
            let environ = std::fs::read(entry.path().join("environ")).ok()?;
            environ
                .split(|byte| *byte == 0)
                .any(|entry| entry == needle.as_bytes())
                .then_some(pid)
        })
        .collect()
}
