//! tandem-client: one async client for Tandem servers, in-process, a spawned child over
//! stdio, or a websocket, behind one API.
//!
//! - Requests get generated ids, a timeout, optional overload retries, and an error that says
//!   whether they were sent and whether retrying is safe ([`ClientError`]).
//! - Replies never wait for event consumption: a worker always drains the transport and
//!   routes events to [`Subscription`]s, each with its own bounded queue and overflow policy.
//! - [`Client::start_turn`] returns a [`TurnHandle`] (typed events, steer, interrupt, the final
//!   turn, its text); [`Client::spawn_process`] a [`ProcessHandle`] (bytes per stream,
//!   stdin, resize, kill, exit).
//! - Server requests no turn handle takes go to a [`ServerRequestHandler`]; the default one
//!   declines approvals, answers questions with no answers and fails tool calls.
//!
//! ```no_run
//! use tandem_client::Client;
//! use tandem_protocol::{ThreadStartParams, TurnStartParams};
//! use tandem_server::ServerOptions;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let client = Client::in_process(ServerOptions::new("/tmp/tandem-docs")?).await?;
//! let thread = client.start_thread(ThreadStartParams::new()).await?.thread;
//! let turn = client.start_turn(TurnStartParams::text(&thread.id, "hello")).await?;
//! let text = { let done = turn.wait_completed().await?; done.items.len() };
//! println!("{text} items");
//! client.close().await;
//! # Ok(())
//! # }
//! ```

mod backend;
mod client;
mod connection;
mod core;
mod error;
mod follow;
mod methods;
mod options;
mod process;
mod router;
mod server_request;
mod subscription;
mod turn;

pub use backend::child::{ChildCommand, ChildStderr, DEFAULT_MAX_LINE_BYTES};
pub use backend::websocket::{DEFAULT_MAX_MESSAGE_BYTES, WebSocketTarget};
pub use client::{Client, Transport};
pub use connection::{
    ConnectionState, DEFAULT_FIRST_RECONNECT_BACKOFF, DEFAULT_MAX_RECONNECT_ATTEMPTS,
    DEFAULT_MAX_RECONNECT_BACKOFF, ReconnectPolicy, ReconnectStats,
};
pub use error::ClientError;
pub use options::{
    ClientOptions, DEFAULT_CHANNEL_CAPACITY, DEFAULT_CLOSE_TIMEOUT, DEFAULT_REQUEST_TIMEOUT,
    RequestOptions,
};
pub use process::{ProcessEvent, ProcessHandle, ProcessOutput};
pub use server_request::{
    ApprovalRequest, DefaultServerRequestHandler, OtherServerRequest, ServerRequestEvent,
    ServerRequestHandler, ToolCallRequest, UserInputRequest,
};
pub use subscription::{
    Event, Overflow, Subscription, SubscriptionError, SubscriptionFilter, SubscriptionOptions,
};
pub use turn::{TurnEvent, TurnHandle};
