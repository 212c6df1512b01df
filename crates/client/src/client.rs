//! [`Client`]: the one API over every backend. It applies timeouts and overload retries,
//! registers subscriptions and turn and process handles, and hands out the connection's
//! state; the shared state and the routing live in [`crate::core`].

use std::fmt;
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use serde::Deserialize as _;
use serde_json::Value;
use tandem_host::MessageProcessor;
use tandem_host::OutgoingMessageSender;
use tandem_host::in_process::{InProcessStartArgs, ProcessorFactory};
use tandem_protocol::client_methods::{ProcessAttach, ProcessSpawn, TurnStart};
use tandem_protocol::{
    ClientRequest, EmptyResponse, InitializeResponse, JSONRPCErrorError, JSONRPCRequest,
    ProcessAttachParams, ProcessKillParams, ProcessResizePtyParams, ProcessSpawnParams,
    ProcessWriteStdinParams, RequestId, RequestMethod, TurnInterruptParams, TurnStartParams,
    TurnSteerParams, TurnSteerResponse,
};
#[cfg(feature = "in-process-server")]
use tandem_server::{ServerOptions, TandemServer};
use tokio::sync::{mpsc, watch};

use crate::backend::child::ChildCommand;
use crate::backend::in_process::InProcessBackend;
use crate::backend::link::Connector;
use crate::backend::websocket::WebSocketTarget;
use crate::backend::wire::WireBackend;
use crate::backend::{Backend, Dispatch as _, OutgoingRequest};
use crate::connection::{ConnectionState, ReconnectStats};
use crate::core::{ParkedTurn, Shared};
use crate::error::ClientError;
use crate::options::{ClientOptions, RequestOptions};
use crate::process::{AttachedProcess, ProcessCalls, ProcessHandle, ProcessShared};
use crate::router::{Entry, Filter};
use crate::server_request::ServerRequestHandler;
use crate::subscription::{Overflow, Subscription, SubscriptionFilter, SubscriptionOptions};
use crate::turn::{TurnCalls, TurnHandle, TurnSetup, TurnShared};

/// The first backoff of [`ClientOptions::retry_overloaded`]; it doubles on every retry.
const FIRST_BACKOFF: Duration = Duration::from_millis(10);
/// The longest backoff between two overload retries.
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// Which server a [`Client`] talks to.
// `InProcess` carries the whole server configuration (grown by the store settings of issue
// 20); a transport is built once per client and moved, never copied in a loop, so the size
// costs nothing, and boxing it would change the public constructor.
#[allow(clippy::large_enum_variant)]
pub enum Transport {
    /// The reference server ([`TandemServer`]) in this process (feature
    /// `in-process-server`, on by default).
    #[cfg(feature = "in-process-server")]
    InProcess(ServerOptions),
    /// Any [`MessageProcessor`] in this process, built by the factory from the host's sender.
    Processor(ProcessorFactory),
    /// A child process speaking the protocol over its stdin and stdout, started lazily and
    /// restarted by the next request after it dies.
    Child(ChildCommand),
    /// A websocket server (over TCP, or a unix socket: [`WebSocketTarget::unix`]), connected
    /// lazily and reconnected by the next request after the connection ends.
    WebSocket(WebSocketTarget),
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            #[cfg(feature = "in-process-server")]
            Self::InProcess(options) => f.debug_tuple("InProcess").field(options).finish(),
            Self::Processor(_) => f.write_str("Processor(..)"),
            Self::Child(command) => f.debug_tuple("Child").field(command).finish(),
            Self::WebSocket(target) => f.debug_tuple("WebSocket").field(target).finish(),
        }
    }
}

impl Transport {
    /// [`Transport::Processor`] from a closure.
    pub fn processor<F>(factory: F) -> Self
    where
        F: FnOnce(OutgoingMessageSender) -> Arc<dyn MessageProcessor> + Send + 'static,
    {
        Self::Processor(Box::new(factory))
    }
}

/// A request needs the method name for errors and a way to build each attempt.
async fn execute<F>(
    shared: &Arc<Shared>,
    method: &str,
    options: RequestOptions,
    mut build: F,
) -> Result<Value, ClientError>
where
    F: FnMut(RequestId, bool) -> OutgoingRequest,
{
    let timeout = options.timeout.unwrap_or(shared.options().request_timeout);
    let retries = options
        .retry_overloaded
        .unwrap_or(shared.options().retry_overloaded);
    let mut backoff = FIRST_BACKOFF;
    let mut attempt = 0;
    loop {
        let last = attempt == retries;
        let request = build(shared.next_request_id(), last);
        match shared.execute_once(method, request, timeout).await {
            Err(error)
                if !last
                    && (error.is_overloaded() || matches!(error, ClientError::NotSent { .. })) =>
            {
                tracing::debug!(%method, attempt, "retrying after: {error}");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// An async client of a Tandem server: in-process, a spawned child over stdio, or a
/// websocket, behind one API. Cheap to clone; every clone is the same connection.
///
/// ```no_run
/// use tandem_client::Client;
/// use tandem_protocol::{ThreadStartParams, TurnStartParams};
/// use tandem_server::ServerOptions;
///
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// let client = Client::in_process(ServerOptions::new("/tmp/tandem-home")?).await?;
/// let thread = client.start_thread(ThreadStartParams::new()).await?.thread;
/// let turn = client.start_turn(TurnStartParams::text(&thread.id, "hello")).await?;
/// let done = turn.wait_completed().await?;
/// println!("{:?}", done.status);
/// client.close().await;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Client {
    inner: Arc<ClientInner>,
}

/// Dropped with the last clone: stops the backend's tasks.
struct ClientInner {
    shared: Arc<Shared>,
}

impl Drop for ClientInner {
    fn drop(&mut self) {
        self.shared.backend.abandon();
    }
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("shared", &self.inner.shared)
            .finish()
    }
}

impl Client {
    /// Starts a client for `transport` with `options`. In-process servers start (and
    /// initialize) here; wire servers connect lazily, on the first request or on
    /// [`Client::connect`].
    pub async fn start(transport: Transport, options: ClientOptions) -> Result<Self, ClientError> {
        let factory: ProcessorFactory = match transport {
            #[cfg(feature = "in-process-server")]
            Transport::InProcess(server) => Box::new(move |outgoing| {
                Arc::new(TandemServer::new(outgoing, server)) as Arc<dyn MessageProcessor>
            }),
            Transport::Processor(factory) => factory,
            Transport::Child(command) => {
                return Ok(Self::wire(Connector::Child(command), options));
            }
            Transport::WebSocket(target) => {
                return Ok(Self::wire(Connector::WebSocket(target), options));
            }
        };
        let mut args = InProcessStartArgs::new(factory, options.initialize_params());
        args.session_source = options.session_source.clone();
        args.channel_capacity = options.channel_capacity;
        args.delivery_policy = options.delivery_policy.clone();
        args.shutdown_stage_timeout = options.close_timeout;
        let backend =
            InProcessBackend::start(args)
                .await
                .map_err(|error| ClientError::Connect {
                    reason: format!("the in-process server did not start: {error}"),
                })?;
        let generation = crate::backend::in_process::GENERATION;
        let shared = Shared::new(
            options,
            Backend::InProcess(backend),
            ConnectionState::Connected { generation },
        );
        if let Backend::InProcess(backend) = &shared.backend {
            backend.spawn_worker(shared.clone());
        }
        Ok(Self::from_shared(shared))
    }

    fn wire(connector: Connector, options: ClientOptions) -> Self {
        let backend = WireBackend::new(connector, options.wire_config());
        Self::from_shared(Shared::new(
            options,
            Backend::Wire(backend),
            ConnectionState::Idle,
        ))
    }

    /// A child server (lazily started), with default options.
    pub fn spawn(command: ChildCommand) -> Self {
        Self::wire(Connector::Child(command), ClientOptions::default())
    }

    /// A websocket server (lazily connected), with default options.
    pub fn websocket(target: WebSocketTarget) -> Self {
        Self::wire(Connector::WebSocket(target), ClientOptions::default())
    }

    /// A server listening on the unix socket at `path` (`tandem app-server --listen
    /// unix://PATH`, or the reference's), connected now: the first connection's failure is
    /// returned here. Afterwards it behaves as a websocket client: it reconnects by itself and
    /// resumes its threads from the last event it saw.
    pub async fn connect_unix(
        path: impl AsRef<std::path::Path>,
        options: ClientOptions,
    ) -> Result<Self, ClientError> {
        let client = Self::wire(Connector::WebSocket(WebSocketTarget::unix(path)), options);
        client.connect().await?;
        Ok(client)
    }

    fn from_shared(shared: Arc<Shared>) -> Self {
        Self {
            inner: Arc::new(ClientInner { shared }),
        }
    }

    /// The reference server in this process, with default options:
    /// `Client::in_process(ServerOptions::new(dir)?).await?` (feature `in-process-server`).
    #[cfg(feature = "in-process-server")]
    pub async fn in_process(server: ServerOptions) -> Result<Self, ClientError> {
        Self::start(Transport::InProcess(server), ClientOptions::default()).await
    }

    /// Any processor in this process, with default options.
    pub async fn in_process_with<F>(factory: F) -> Result<Self, ClientError>
    where
        F: FnOnce(OutgoingMessageSender) -> Arc<dyn MessageProcessor> + Send + 'static,
    {
        Self::start(Transport::processor(factory), ClientOptions::default()).await
    }

    fn shared(&self) -> &Arc<Shared> {
        &self.inner.shared
    }

    /// The options this client was started with.
    pub fn options(&self) -> &ClientOptions {
        self.shared().options()
    }

    /// Connects now if the backend is not connected (wire backends connect lazily).
    pub async fn connect(&self) -> Result<(), ClientError> {
        self.shared().backend.connect(self.shared()).await
    }

    /// The current connection's `initialize` result; `None` before a lazy backend connected.
    pub fn initialize_response(&self) -> Option<InitializeResponse> {
        self.shared().backend.initialize_response()
    }

    /// The connection generation: 1 after the first successful `initialize`, one more after
    /// each restart of a child server; 0 before a lazy backend connected.
    pub fn generation(&self) -> u64 {
        self.shared().backend.generation()
    }

    /// The pid of the running child server (child backend only).
    pub fn child_pid(&self) -> Option<u32> {
        self.shared().backend.child_pid()
    }

    /// The connection's state, for a UI to show: each change (connected, reconnecting with
    /// the attempt, reconnected with the count, disconnected, closed) is sent to every
    /// receiver; a receiver that reads late sees the newest.
    pub fn connection_state(&self) -> watch::Receiver<ConnectionState> {
        self.shared().connection_state()
    }

    /// What reconnecting cost so far: reconnects, events replayed by the server, duplicates
    /// dropped, gaps.
    pub fn reconnect_stats(&self) -> ReconnectStats {
        self.shared().reconnect_stats()
    }

    /// Closes the client: later requests fail as [`ClientError::Closed`], every subscription
    /// ends, and the server is shut down (in-process) or the connection closed (a child is
    /// sent stdin EOF, then SIGTERM, then SIGKILL of its process group, each after
    /// [`ClientOptions::close_timeout`]). Calling it again does nothing.
    pub async fn close(&self) {
        self.shared().closed.store(true, Ordering::Release);
        self.shared()
            .backend
            .close(self.options().close_timeout)
            .await;
        self.shared()
            .connection_lost(self.generation(), "the client was closed", false);
        self.shared().set_state(ConnectionState::Closed);
    }

    /// Subscribes to events.
    pub fn subscribe(&self, options: SubscriptionOptions) -> Subscription {
        let filter = match options.filter {
            SubscriptionFilter::All => Filter::All,
            SubscriptionFilter::Thread(thread) => Filter::Thread(thread),
            SubscriptionFilter::Turn { thread_id, turn_id } => Filter::Turn {
                thread: thread_id,
                turn: Some(turn_id),
            },
            SubscriptionFilter::Process(handle) => Filter::Process(handle),
        };
        self.open_subscription(filter, options.capacity, options.overflow, |_| {})
    }

    fn open_subscription(
        &self,
        filter: Filter,
        capacity: Option<usize>,
        overflow: Overflow,
        configure: impl FnOnce(&mut Entry),
    ) -> Subscription {
        let capacity = capacity.unwrap_or(self.options().channel_capacity).max(1);
        let (tx, rx) = mpsc::channel(capacity);
        let end = Arc::new(Mutex::new(None));
        let mut entry = Entry::new(filter, tx, end.clone());
        entry.lossless = overflow == Overflow::Lossless;
        configure(&mut entry);
        let id = self.shared().register(entry);
        Subscription {
            id,
            rx,
            end,
            shared: Arc::downgrade(self.shared()) as std::sync::Weak<crate::core::Shared>,
            ended: false,
        }
    }

    /// Sends the typed request `M` and returns its typed result.
    ///
    /// ```no_run
    /// # async fn example(client: tandem_client::Client) -> Result<(), tandem_client::ClientError> {
    /// use tandem_protocol::{ThreadLoadedListParams, client_methods::ThreadLoadedList};
    /// let loaded = client.call::<ThreadLoadedList>(ThreadLoadedListParams::new()).await?;
    /// println!("{} threads loaded", loaded.data.len());
    /// # Ok(())
    /// # }
    /// ```
    pub fn call<M>(
        &self,
        params: M::Params,
    ) -> impl Future<Output = Result<M::Response, ClientError>> + Send
    where
        M: RequestMethod<Request = ClientRequest>,
        M::Params: Clone,
    {
        // Not an `async fn`: that would wrap `call_with` in one more future, and hold `params`
        // twice, in every call.
        self.call_with::<M>(params, RequestOptions::default())
    }

    /// [`Self::call`] with per-request options.
    pub async fn call_with<M>(
        &self,
        params: M::Params,
        options: RequestOptions,
    ) -> Result<M::Response, ClientError>
    where
        M: RequestMethod<Request = ClientRequest>,
        M::Params: Clone,
    {
        let shared = self.shared();
        let retries = options
            .retry_overloaded
            .unwrap_or(shared.options().retry_overloaded);
        let value = if retries == 0 {
            // The common case, kept free of the retry loop's state.
            let timeout = options.timeout.unwrap_or(shared.options().request_timeout);
            let request = M::into_request(shared.next_request_id(), params);
            shared
                .execute_once(M::METHOD, OutgoingRequest::Typed(request), timeout)
                .await?
        } else {
            // Boxed so that its retry state (a backoff timer) does not grow every call's
            // future; retries wait for milliseconds anyway.
            Box::pin(Self::call_retrying::<M>(shared, params, options)).await?
        };
        // From a borrowed value: map keys are matched in place instead of being moved out one
        // by one (the value is dropped whole afterwards either way).
        M::Response::deserialize(&value).map_err(|error| ClientError::InvalidResponse {
            method: M::METHOD.to_owned(),
            reason: error.to_string(),
        })
    }

    async fn call_retrying<M>(
        shared: &Arc<Shared>,
        params: M::Params,
        options: RequestOptions,
    ) -> Result<Value, ClientError>
    where
        M: RequestMethod<Request = ClientRequest>,
        M::Params: Clone,
    {
        let mut params = Some(params);
        execute(shared, M::METHOD, options, |id, last| {
            // The last attempt moves the params; only retries pay for a copy.
            let params = if last {
                params.take().expect("the last attempt is the last")
            } else {
                params.clone().expect("present until the last attempt")
            };
            OutgoingRequest::Typed(M::into_request(id, params))
        })
        .await
    }

    /// Sends `method` with raw JSON `params` and returns the raw result.
    ///
    /// Over the wire the params are written exactly as given (unknown members included), so
    /// the server judges them. The in-process host takes typed requests, so there the params
    /// are typed first by the protocol's own conversion, the step a wire server's transport
    /// runs on every frame; params that do not decode get the answer that transport sends,
    /// [`ClientError::Server`] with -32600 ``Invalid request: ...``, and never reach the
    /// processor. Either way the outcome is the same on every backend.
    ///
    /// ```no_run
    /// # async fn example(client: tandem_client::Client) {
    /// let error = client
    ///     .request("thread/read", serde_json::json!({"threadId": 7}))
    ///     .await
    ///     .expect_err("a thread id is a string");
    /// assert_eq!(error.server_error().map(|e| e.code), Some(-32600));
    /// # }
    /// ```
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        self.request_with(method, params, RequestOptions::default())
            .await
    }

    /// [`Self::request`] with per-request options.
    pub async fn request_with(
        &self,
        method: &str,
        params: Value,
        options: RequestOptions,
    ) -> Result<Value, ClientError> {
        let mut params = Some(params);
        execute(self.shared(), method, options, |id, last| {
            // As for typed calls, only retries pay for a copy of the params.
            let params = if last { params.take() } else { params.clone() };
            OutgoingRequest::Raw(JSONRPCRequest {
                id,
                method: method.to_owned(),
                params,
            })
        })
        .await
    }

    /// Answers server request `id` of the current connection: for embedders that keep ids
    /// rather than the typed request objects. An id that is not waiting for an answer is
    /// [`ClientError::ServerRequestNotPending`].
    pub async fn respond_to_server_request(
        &self,
        id: RequestId,
        result: Result<Value, JSONRPCErrorError>,
    ) -> Result<(), ClientError> {
        self.shared().answer_server_request(id, result).await
    }

    /// `turn/start`, returning a [`TurnHandle`] that was subscribed before the request was
    /// sent, so it sees the turn's first event.
    ///
    /// With a `clientUserMessageId`, a `turn/start` lost with the connection fails with
    /// [`ClientError::MaybeSent`]; calling `start_turn` again with the same params returns the
    /// same turn (the server deduplicates by the key) and the handle continues the stream of
    /// the failed call, so no event of the turn is lost between the two.
    pub async fn start_turn(&self, params: TurnStartParams) -> Result<TurnHandle, ClientError> {
        let thread_id = params.thread_id.clone();
        let key = params.client_user_message_id.clone();
        let parked = key
            .as_deref()
            .and_then(|key| self.shared().unpark_turn(&thread_id, key));
        let (subscription, turn_shared) = match parked {
            Some(parked) => (parked.subscription, parked.shared),
            None => {
                let turn_shared = Arc::new(TurnShared::new());
                let filter = Filter::Turn {
                    thread: thread_id.clone(),
                    turn: None,
                };
                let subscription = self.open_subscription(filter, None, Overflow::Skip, |entry| {
                    entry.claims_requests = true;
                    entry.turn = Some(turn_shared.clone());
                });
                (subscription, turn_shared)
            }
        };
        let response = match self.call::<TurnStart>(params).await {
            Ok(response) => response,
            Err(error) => {
                if let Some(key) = key
                    && error.is_retry_safe()
                {
                    self.shared().park_turn(ParkedTurn {
                        thread_id,
                        key,
                        subscription,
                        shared: turn_shared,
                    });
                }
                return Err(error);
            }
        };
        self.shared()
            .narrow_turn(subscription.id, &response.turn.id);
        let setup = TurnSetup {
            thread_id,
            subscription,
            shared: turn_shared,
        };
        Ok(TurnHandle::new(
            Arc::new(self.clone()),
            setup,
            response.turn,
        ))
    }

    /// `process/spawn` (experimental), returning a [`ProcessHandle`] subscribed before the
    /// request was sent, with the client's capacity and [`Overflow::Skip`].
    pub async fn spawn_process(
        &self,
        params: ProcessSpawnParams,
    ) -> Result<ProcessHandle, ClientError> {
        self.spawn_process_with(params, None, Overflow::Skip).await
    }

    /// [`Self::spawn_process`] with the handle's queue capacity and overflow policy:
    /// [`Overflow::Lossless`] makes the process wait for the reader (through the server's
    /// backpressure) instead of ending the handle's output with a loss error.
    pub async fn spawn_process_with(
        &self,
        params: ProcessSpawnParams,
        capacity: Option<usize>,
        overflow: Overflow,
    ) -> Result<ProcessHandle, ClientError> {
        let handle = params.process_handle.clone();
        let (subscription, process_shared) =
            self.open_process_subscription(&handle, capacity, overflow);
        // Followed before the spawn is sent: its first output may be routed before the reply
        // is read here.
        crate::core::lock(&self.shared().processes).follow(&handle);
        if let Err(error) = self.call::<ProcessSpawn>(params).await {
            crate::core::lock(&self.shared().processes).forget(&handle);
            return Err(error);
        }
        let session = self
            .shared()
            .backend
            .initialize_response()
            .and_then(|init| init.process_session);
        crate::core::lock(&self.shared().processes).spawned(&handle, session);
        Ok(ProcessHandle::new(
            Arc::new(self.clone()),
            handle,
            subscription,
            process_shared,
        ))
    }

    /// The subscription a [`ProcessHandle`] reads, opened before its request is sent (the
    /// first output may be routed before the reply is read), and the exit state it records.
    fn open_process_subscription(
        &self,
        handle: &str,
        capacity: Option<usize>,
        overflow: Overflow,
    ) -> (Subscription, Arc<ProcessShared>) {
        let process_shared = Arc::new(ProcessShared::default());
        let subscription = self.open_subscription(
            Filter::Process(handle.to_owned()),
            capacity,
            overflow,
            |entry| {
                entry.process = Some(process_shared.clone());
            },
        );
        (subscription, process_shared)
    }

    /// attach19: `process/attach` (experimental): watches a PTY process another connection
    /// runs, named by its handle and the attach token its owner got from `process/share`
    /// ([`Self::share_process`]). Answers the screen now and a [`ProcessHandle`] whose events
    /// are the process's output after that screen (subscribed before the request was sent, so
    /// none is missed) and its exit. Draw the screen, then apply the events.
    ///
    /// Watching is read-only: the handle's `write_stdin`, `resize` and `kill` are refused by
    /// the server. A lost connection ends the handle's events (a reconnect does not re-attach).
    pub async fn attach_process(
        &self,
        params: ProcessAttachParams,
        capacity: Option<usize>,
        overflow: Overflow,
    ) -> Result<AttachedProcess, ClientError> {
        let handle = params.process_handle.clone();
        let (subscription, process_shared) =
            self.open_process_subscription(&handle, capacity, overflow);
        let response = self.call::<ProcessAttach>(params).await?;
        Ok(AttachedProcess {
            screen: response.screen,
            cursor: response.cursor,
            process: ProcessHandle::new(
                Arc::new(self.clone()),
                handle,
                subscription,
                process_shared,
            ),
        })
    }
}

impl TurnCalls for Client {
    fn steer_turn(
        &self,
        params: TurnSteerParams,
    ) -> BoxFuture<'_, Result<TurnSteerResponse, ClientError>> {
        Box::pin(Client::steer_turn(self, params))
    }

    fn interrupt_turn(
        &self,
        params: TurnInterruptParams,
    ) -> BoxFuture<'_, Result<EmptyResponse, ClientError>> {
        Box::pin(Client::interrupt_turn(self, params))
    }

    fn server_request_handler(&self) -> Arc<dyn ServerRequestHandler> {
        self.options().handler.clone()
    }
}

impl ProcessCalls for Client {
    fn write_stdin(
        &self,
        params: ProcessWriteStdinParams,
    ) -> BoxFuture<'_, Result<EmptyResponse, ClientError>> {
        Box::pin(Client::write_stdin(self, params))
    }

    fn resize_pty(
        &self,
        params: ProcessResizePtyParams,
    ) -> BoxFuture<'_, Result<EmptyResponse, ClientError>> {
        Box::pin(Client::resize_pty(self, params))
    }

    fn kill_process(
        &self,
        params: ProcessKillParams,
    ) -> BoxFuture<'_, Result<EmptyResponse, ClientError>> {
        Box::pin(Client::kill_process(self, params))
    }
}
