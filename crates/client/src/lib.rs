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
//!   declines approvals (of commands and of file changes), answers questions with no answers
//!   and fails tool calls. A turn handle hands a file change approval over as
//!   [`TurnEvent::FileChangeApproval`] ([`FileChangeApprovalRequest`]), after the `fileChange`
//!   item whose diff it asks about.
//!
//! # Reconnecting
//!
//! Wire clients (a child, a websocket) come back by themselves when their connection ends
//! ([`ReconnectPolicy`], on by default; [`ClientOptions::reconnect`]): with exponential
//! backoff, a websocket reconnects and a child is restarted, the client initializes again and
//! resumes every thread it follows from the last event it saw (docs/protocol.md, "Client
//! reconnect"). Meanwhile:
//!
//! - [`TurnHandle`] streams go on whole: events the server replays that the handle saw
//!   already are dropped, the others arrive in order before live ones. When the server can no
//!   longer replay (its window was exceeded, or it restarted), the handle gets
//!   [`TurnEvent::Gap`] with the stored turn, then the items it had not seen completed and
//!   the end if the turn has ended (a turn a restart cut short ends `interrupted`); thread
//!   subscriptions get [`Event::Gap`].
//! - Approvals and other server requests a turn handle holds stay answerable: the server
//!   re-sends them on resume, the answer goes to the new connection, and an answer given just
//!   before the drop is sent again.
//! - Requests in flight at the drop fail: with an idempotency key (`clientUserMessageId`,
//!   `idempotencyKey`) as [`ClientError::MaybeSent`], "maybe sent, safe to retry" (retrying
//!   [`Client::start_turn`] with the same key continues the lost call's stream); without, as
//!   [`ClientError::Disconnected`] with an unknown outcome. Requests made during the outage
//!   wait for the new connection (within their timeout).
//! - [`ProcessHandle`] streams go on whole too: the server keeps a closed connection's
//!   processes for a grace period (60 s by default) and the client resumes each one from the
//!   last output it saw (`process/resume`); replayed output it saw already is dropped. When
//!   the server can no longer replay all of it, the handle gets [`ProcessEvent::Gap`] and then
//!   the live output. A process the server no longer has (grace over, server restarted; a
//!   server without process sessions) ends its handle with an error.
//! - [`Client::connection_state`] reports each change (reconnecting with the attempt,
//!   reconnected with the count) for a UI; [`Client::reconnect_stats`] counts replays, gaps and
//!   dropped duplicates.
//!
//! If every attempt fails, everything that waited ends with the last failure, and the next
//! request tries to connect afresh. In-process clients have no connection to lose.
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
mod token_file;
mod turn;
// undo29: `/undo` of `tandem chat` and `tandem tui`.
mod undo;

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
pub use process::{AttachedProcess, ProcessEvent, ProcessHandle, ProcessOutput};
pub use server_request::{
    ApprovalRequest, DefaultServerRequestHandler, FileChangeApprovalRequest, OtherServerRequest,
    ServerRequestEvent, ServerRequestHandler, ToolCallRequest, UserInputRequest,
};
pub use subscription::{
    Event, Overflow, Subscription, SubscriptionError, SubscriptionFilter, SubscriptionOptions,
};
pub use token_file::{TokenFileError, read_token_file};
pub use turn::{TurnEvent, TurnHandle};
pub use undo::undo_report;
