//! The in-process transport: `tandem_host::in_process::start` with a `TandemServer`, driven at
//! the JSON level. Frames go through the wire codec (`tandem_protocol::wire`) exactly as a
//! transport's reader would pass them, including the errors it answers for undecodable input,
//! and whatever the host hands back is encoded by the same codec into the bytes a wire client
//! reads. A scenario cannot tell this transport from the others except where the host's API
//! itself differs (see [`crate::session::Transport::has_uninitialized_state`]).
//!
//! The host performs `initialize` inside `start`, so the host is started lazily, by the first
//! `initialize` request that decodes; its params are the scenario's.
//!
//! Replies reach in-process callers on their own oneshot, not through the event queue, so
//! their order relative to events is only partly observable. [`InProcessDriver::recv`] returns
//! a reply that has already resolved before any queued event: a reply delivered before a
//! notification is therefore never read after it (the order the protocol promises, e.g. for
//! attachments), while a notification emitted just before a reply may be read after it.
//! Scenarios assert only orders that hold on every transport.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::stream::FuturesUnordered;
use futures::{FutureExt as _, StreamExt as _};
use serde_json::Value;
use tandem_host::in_process::{self, InProcessServerEvent, InProcessStartArgs};
use tandem_host::{InProcessClientHandle, MessageProcessor, RequestResult};
use tandem_protocol::wire::{self, ClientMessage, DecodeError, ServerMessage};
use tandem_protocol::{ClientRequest, RequestId};
use tandem_server::{ServerConfig, ServerOptions, TandemServer};

use crate::driver::{Driver, DriverError};
use crate::session::ServerSetup;

/// How long to wait between attempts when the host's client queue is full: the in-process
/// counterpart of a socket write that blocks until the server reads.
const CLIENT_QUEUE_RETRY: Duration = Duration::from_millis(1);

type PendingReply = Pin<Box<dyn Future<Output = (RequestId, io::Result<RequestResult>)> + Send>>;

/// A client of an in-process host.
pub(crate) struct InProcessDriver {
    options: ServerOptions,
    channel_capacity: Option<usize>,
    replay_window_events: Option<usize>,
    /// `None` until the first successful `initialize`.
    handle: Option<InProcessClientHandle>,
    /// Requests sent and not answered yet.
    replies: FuturesUnordered<PendingReply>,
    /// Answers produced at send time (a frame that does not decode, the `initialize` reply).
    answered: VecDeque<Value>,
    paused: bool,
}

impl InProcessDriver {
    pub(crate) fn new(setup: &ServerSetup) -> Result<Self, DriverError> {
        let mut config = ServerConfig::builder().tandem_home(&setup.home);
        if let Some(delay) = setup.thread_unload_delay_secs {
            config = config.thread_unload_delay_secs(delay);
        }
        // An embedder names the program that applies the sandbox to the commands it runs
        // (the stdio and websocket servers are that program themselves); here, the `tandem`
        // binary the wire transports run too.
        let helper = tandem_test_support::binary::tandem_binary()
            .map_err(|error| DriverError::Start(error.to_string()))?;
        let options = ServerOptions::load(config)
            .map_err(|error| DriverError::Start(error.to_string()))?
            .with_helper_program(tandem_server::helper::HelperProgram::new(helper));
        Ok(Self {
            options,
            channel_capacity: setup.channel_capacity,
            replay_window_events: setup.replay_window_events,
            handle: None,
            replies: FuturesUnordered::new(),
            answered: VecDeque::new(),
            paused: false,
        })
    }

    /// Starts the host with the scenario's `initialize`; the host sends `initialized` itself.
    async fn start(&mut self, id: RequestId, request: ClientRequest) -> Result<(), DriverError> {
        let ClientRequest::Initialize { params, .. } = request else {
            unreachable!("only initialize starts the host");
        };
        let options = self.options.clone();
        let mut args = InProcessStartArgs::new(
            move |outgoing| {
                Arc::new(TandemServer::new(outgoing, options)) as Arc<dyn MessageProcessor>
            },
            params,
        );
        if let Some(capacity) = self.channel_capacity {
            args.channel_capacity = capacity;
        }
        if let Some(events) = self.replay_window_events {
            args.replay_window.max_events = events;
        }
        let handle = in_process::start(args)
            .await
            .map_err(|error| DriverError::Start(error.to_string()))?;
        let result =
            serde_json::to_value(handle.initialize_response()).expect("the result serializes");
        self.answered
            .push_back(encode(&ServerMessage::Response { id, result }));
        self.handle = Some(handle);
        Ok(())
    }

    fn handle(&self) -> Result<&InProcessClientHandle, DriverError> {
        self.handle.as_ref().ok_or(DriverError::Unsupported(
            "the in-process host has no connection before initialize",
        ))
    }

    /// Enqueues `request`, waiting while the client queue is full, and tracks its reply.
    async fn request(&mut self, request: ClientRequest) -> Result<(), DriverError> {
        let id = request.id().clone();
        loop {
            let mut reply = Box::pin(self.handle()?.request(request.clone()));
            match (&mut reply).now_or_never() {
                Some(Err(error)) if error.kind() == io::ErrorKind::WouldBlock => {
                    tokio::time::sleep(CLIENT_QUEUE_RETRY).await;
                }
                Some(outcome) => {
                    self.replies
                        .push(Box::pin(std::future::ready((id, outcome))));
                    return Ok(());
                }
                None => {
                    self.replies
                        .push(Box::pin(reply.map(move |outcome| (id, outcome))));
                    return Ok(());
                }
            }
        }
    }

    /// Runs `enqueue` against the host until the client queue has room for it.
    async fn when_room(
        &mut self,
        enqueue: impl Fn(&InProcessClientHandle) -> io::Result<()>,
    ) -> Result<(), DriverError> {
        loop {
            match enqueue(self.handle()?) {
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    tokio::time::sleep(CLIENT_QUEUE_RETRY).await;
                }
                Err(error) => return Err(DriverError::Closed(error.to_string())),
                Ok(()) => return Ok(()),
            }
        }
    }
}

/// The JSON a wire client reads for `message`: the codec's bytes, parsed back.
fn encode(message: &ServerMessage) -> Value {
    let mut frame = Vec::new();
    wire::encode_server_message(message, &mut frame).expect("a server message encodes");
    serde_json::from_slice(&frame).expect("the codec writes JSON")
}

fn reply_json(id: RequestId, outcome: io::Result<RequestResult>) -> Result<Value, DriverError> {
    match outcome {
        Ok(Ok(result)) => Ok(encode(&ServerMessage::Response { id, result })),
        Ok(Err(error)) => Ok(encode(&ServerMessage::Error {
            id: Some(id),
            error,
        })),
        Err(error) => Err(DriverError::Closed(format!(
            "request {id} got no reply: {error}"
        ))),
    }
}

fn event_json(
    (event, cursor): (InProcessServerEvent, Option<tandem_protocol::EventCursor>),
) -> Result<Value, DriverError> {
    match event {
        // The cursor travels beside the typed event; the wire puts it in the envelope.
        InProcessServerEvent::ServerNotification(notification) => {
            Ok(encode(&ServerMessage::Notification {
                notification,
                emitted_at_ms: None,
                cursor,
            }))
        }
        InProcessServerEvent::ServerRequest(request) => {
            Ok(encode(&ServerMessage::Request(request)))
        }
        InProcessServerEvent::Lagged { skipped } => Err(DriverError::Lagged { skipped }),
    }
}

#[async_trait]
impl Driver for InProcessDriver {
    async fn send_raw(&mut self, frame: &[u8]) -> Result<(), DriverError> {
        let message = match wire::decode_client_message(frame) {
            Ok(message) => message,
            Err(DecodeError::Reply(error)) => {
                self.answered.push_back(encode(&ServerMessage::from(error)));
                return Ok(());
            }
            // Logged and dropped on the wire; nothing reaches the host.
            Err(DecodeError::Ignore(_)) => return Ok(()),
        };
        match message {
            ClientMessage::Request(request) => match (&self.handle, &request) {
                (None, ClientRequest::Initialize { .. }) => {
                    let id = request.id().clone();
                    self.start(id, request).await
                }
                _ => self.request(request).await,
            },
            // Before the host exists there is no connection to hand a notification to, and
            // notifications before `initialize` are ignored anyway (docs/protocol.md section 3).
            ClientMessage::Notification(notification) => match self.handle {
                Some(_) => {
                    self.when_room(|handle| handle.notify(notification.clone()))
                        .await
                }
                None => Ok(()),
            },
            ClientMessage::Response { id, result } => {
                self.when_room(|handle| {
                    handle.respond_to_server_request(id.clone(), result.clone())
                })
                .await
            }
            ClientMessage::Error { id, error } => {
                self.when_room(|handle| handle.fail_server_request(id.clone(), error.clone()))
                    .await
            }
        }
    }

    async fn recv(&mut self) -> Result<Value, DriverError> {
        if self.paused {
            return Err(DriverError::Paused);
        }
        if let Some(answer) = self.answered.pop_front() {
            return Ok(answer);
        }
        let Self {
            handle, replies, ..
        } = self;
        let handle = handle.as_mut().ok_or(DriverError::Unsupported(
            "the in-process host sends nothing before initialize",
        ))?;
        tokio::select! {
            biased;
            Some((id, outcome)) = replies.next(), if !replies.is_empty() => reply_json(id, outcome),
            event = handle.next_event_with_cursor() => match event {
                Some(event) => event_json(event),
                None => Err(DriverError::Closed("the in-process host stopped".into())),
            },
        }
    }

    fn pause(&mut self) {
        self.paused = true;
    }

    fn resume(&mut self) {
        self.paused = false;
    }

    async fn reconnect(&mut self) -> Result<(), DriverError> {
        let handle = self.handle.as_mut().ok_or(DriverError::Unsupported(
            "the in-process host has no connection before initialize",
        ))?;
        handle
            .reattach_events()
            .await
            .map_err(|error| DriverError::Closed(error.to_string()))
    }

    async fn close(mut self: Box<Self>) -> Result<(), DriverError> {
        match self.handle.take() {
            Some(mut handle) => handle
                .shutdown()
                .await
                .map_err(|error| DriverError::Io(error.to_string())),
            None => Ok(()),
        }
    }
}
