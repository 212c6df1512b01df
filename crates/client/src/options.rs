//! [`ClientOptions`] and [`RequestOptions`]: every knob of a [`crate::Client`], builder-style,
//! each with its default written on its setter. They exist apart from the constructors so that
//! the same options drive every backend.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tandem_host::DeliveryPolicy;
use tandem_protocol::{InitializeParams, SessionSource};

use crate::backend::wire::WireConfig;
use crate::connection::ReconnectPolicy;
use crate::server_request::{DefaultServerRequestHandler, ServerRequestHandler};

/// Default [`ClientOptions::channel_capacity`].
pub const DEFAULT_CHANNEL_CAPACITY: usize = 128;
/// Default [`ClientOptions::request_timeout`].
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Default [`ClientOptions::close_timeout`].
pub const DEFAULT_CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// How a [`crate::Client`] behaves, whatever server it talks to.
///
/// ```
/// use std::time::Duration;
/// use tandem_client::ClientOptions;
///
/// let options = ClientOptions::new()
///     .client_name("my-tool")
///     .request_timeout(Some(Duration::from_secs(5)))
///     .retry_overloaded(3);
/// # let _ = options;
/// ```
#[derive(Clone)]
pub struct ClientOptions {
    pub(crate) client_name: String,
    pub(crate) client_version: String,
    pub(crate) experimental_api: bool,
    pub(crate) opt_out_notifications: Vec<String>,
    pub(crate) channel_capacity: usize,
    pub(crate) request_timeout: Option<Duration>,
    pub(crate) retry_overloaded: u32,
    pub(crate) handler: Arc<dyn ServerRequestHandler>,
    pub(crate) session_source: SessionSource,
    pub(crate) delivery_policy: DeliveryPolicy,
    pub(crate) close_timeout: Duration,
    pub(crate) reconnect: ReconnectPolicy,
}

impl fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientOptions")
            .field("client_name", &self.client_name)
            .field("client_version", &self.client_version)
            .field("experimental_api", &self.experimental_api)
            .field("opt_out_notifications", &self.opt_out_notifications)
            .field("channel_capacity", &self.channel_capacity)
            .field("request_timeout", &self.request_timeout)
            .field("retry_overloaded", &self.retry_overloaded)
            .field("session_source", &self.session_source)
            .field("close_timeout", &self.close_timeout)
            .field("reconnect", &self.reconnect)
            .finish_non_exhaustive()
    }
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            client_name: "tandem-client".into(),
            client_version: env!("CARGO_PKG_VERSION").into(),
            experimental_api: true,
            opt_out_notifications: Vec::new(),
            channel_capacity: DEFAULT_CHANNEL_CAPACITY,
            request_timeout: Some(DEFAULT_REQUEST_TIMEOUT),
            retry_overloaded: 0,
            handler: Arc::new(DefaultServerRequestHandler),
            session_source: SessionSource::default(),
            delivery_policy: DeliveryPolicy::default(),
            close_timeout: DEFAULT_CLOSE_TIMEOUT,
            reconnect: ReconnectPolicy::default(),
        }
    }
}

impl ClientOptions {
    /// The defaults listed on each setter.
    pub fn new() -> Self {
        Self::default()
    }

    /// `clientInfo.name` sent at `initialize`. Default `tandem-client`.
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// `clientInfo.version` sent at `initialize`. Default: this crate's version.
    pub fn client_version(mut self, version: impl Into<String>) -> Self {
        self.client_version = version.into();
        self
    }

    /// Opt in to experimental methods, fields and notifications (`process/*`, dynamic tools).
    /// Default `true`: the client speaks all of Tandem's protocol; set `false` to act as a
    /// stable-API client.
    pub fn experimental_api(mut self, enabled: bool) -> Self {
        self.experimental_api = enabled;
        self
    }

    /// Notification methods the server must never send this client. Default: none.
    pub fn opt_out_notifications<I, S>(mut self, methods: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.opt_out_notifications = methods.into_iter().map(Into::into).collect();
        self
    }

    /// Capacity of every bounded queue the client owns (each subscription's queue, the
    /// writer queue of a wire connection) and of the in-process host's queues. 0 counts as 1.
    /// Default 128.
    pub fn channel_capacity(mut self, capacity: usize) -> Self {
        self.channel_capacity = capacity.max(1);
        self
    }

    /// How long a request waits for its reply unless [`RequestOptions::timeout`] says
    /// otherwise; `None` waits for ever. Default 60 s.
    pub fn request_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// How many times a request is retried, with exponential backoff from 10 ms, when it was
    /// not sent because a queue was full or the server answered -32001 (overloaded). Both are
    /// safe to retry; nothing else is ever retried. Default 0.
    pub fn retry_overloaded(mut self, retries: u32) -> Self {
        self.retry_overloaded = retries;
        self
    }

    /// Answers the server requests that no turn handle takes. Default
    /// [`DefaultServerRequestHandler`]: declines approvals, answers questions with no answers,
    /// fails tool calls.
    pub fn server_request_handler(mut self, handler: Arc<dyn ServerRequestHandler>) -> Self {
        self.handler = handler;
        self
    }

    /// The session source of an in-process connection, stamped on the threads it starts
    /// (wire servers choose their own). Default `appServer`.
    pub fn session_source(mut self, source: SessionSource) -> Self {
        self.session_source = source;
        self
    }

    /// Which notifications count as guaranteed: the in-process host parks them instead of
    /// dropping them, and a subscription that cannot take one ends with a loss error instead
    /// of skipping it. Default: docs/protocol.md section 6 (`process/outputDelta`,
    /// `process/exited`, `turn/completed`, `thread/attachment/updated`).
    pub fn delivery_policy(mut self, policy: DeliveryPolicy) -> Self {
        self.delivery_policy = policy;
        self
    }

    /// How long each step of [`crate::Client::close`] may take: the in-process host's
    /// shutdown stages, and for a child server each of stdin EOF and SIGTERM before the
    /// next, harsher step. Default 2 s.
    pub fn close_timeout(mut self, timeout: Duration) -> Self {
        self.close_timeout = timeout;
        self
    }

    /// Whether and how a wire client (websocket, child) comes back by itself after its
    /// connection ends (a child is restarted), resuming every thread it follows from the last
    /// event it saw. Default: on ([`ReconnectPolicy::new`]); [`ReconnectPolicy::disabled`]
    /// turns it off. In-process clients have no connection to lose.
    pub fn reconnect(mut self, policy: ReconnectPolicy) -> Self {
        self.reconnect = policy;
        self
    }

    /// What a wire backend needs of these options.
    pub(crate) fn wire_config(&self) -> WireConfig {
        WireConfig {
            capacity: self.channel_capacity,
            initialize: self.initialize_params(),
            request_timeout: self.request_timeout,
            close_timeout: self.close_timeout,
            reconnect: self.reconnect,
        }
    }

    /// The `initialize` params these options produce.
    pub fn initialize_params(&self) -> InitializeParams {
        InitializeParams::new(&self.client_name, &self.client_version)
            .experimental_api(self.experimental_api)
            .opt_out_notifications(self.opt_out_notifications.iter().cloned())
    }
}

/// Per-request overrides of [`ClientOptions`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestOptions {
    pub(crate) timeout: Option<Option<Duration>>,
    pub(crate) retry_overloaded: Option<u32>,
}

impl RequestOptions {
    /// The client's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// This request's timeout; `None` waits for ever. Default: the client's.
    pub fn timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// This request's overload retries. Default: the client's.
    pub fn retry_overloaded(mut self, retries: u32) -> Self {
        self.retry_overloaded = Some(retries);
        self
    }
}
