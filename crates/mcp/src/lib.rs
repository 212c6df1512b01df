//! Tandem's MCP (Model Context Protocol) client (issue 30): the `[mcp_servers.NAME]`
//! configuration ([`config`]), one connection per configured server over the official Rust
//! SDK, rmcp ([`McpConnection`]: a stdio child in its own process group, registered with
//! Tandem's watchdog, with its environment cleared to an allow-list; or streamable HTTP), and
//! the [`McpManager`] that starts every server in the background, tracks its state, restarts
//! it with backoff when its connection closes, and offers its tools under the model's names
//! ([`names`]).
//!
//! Bounds: one message from a server is at most [`stdio::MAX_MESSAGE_BYTES`] (16 MiB; a stdio
//! server's longer line closes its connection, an HTTP server's longer body or event fails
//! the request); progress updates waiting per call at most [`PROGRESS_QUEUE`] (64, more are
//! dropped); startup updates waiting per subscriber at most [`STARTUP_UPDATES_QUEUE`] (256,
//! a subscriber that lags skips the oldest). What the model sees of a result is bounded by
//! the agent, like command output.
//!
//! Files: `config` the tables, `names` the model's tool names, `stdio` the child process,
//! `progress` progress routed to its call in order, `in_order` a stdio server's messages
//! written in the order they were sent, `client` one connection, `manager` all of them, `error` every error text.

mod client;
pub mod config;
mod error;
mod in_order;
mod manager;
pub mod names;
mod progress;
pub mod stdio;

pub use client::{MAX_HTTP_MESSAGE_BYTES, McpConnection, McpElicitor, PROGRESS_QUEUE};
pub use config::{
    DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT, HttpServerConfig, MCP_SERVERS_KEY,
    McpConfigError, McpServerConfig, McpTransportConfig, StdioServerConfig, ToolApprovalMode,
    parse_mcp_servers,
};
pub use error::McpError;
pub use manager::{
    DEFAULT_RESTART_BACKOFF, McpManager, McpServerSnapshot, McpServerState, McpStartupState,
    McpStartupUpdate, McpToolSpec, STARTUP_UPDATES_QUEUE, http_origin,
};
pub use progress::McpProgress;
/// The rmcp types this crate's API carries (tools, results, resources), so that users need
/// not depend on a matching rmcp themselves.
pub use rmcp::model;
