//! Every error of the MCP client, worded for whoever reads it (a client's status list, the
//! model, a log): what went wrong and what to do about it.

use std::time::Duration;

/// Why connecting to, or calling, an MCP server failed.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// No `[mcp_servers.NAME]` of that name is configured.
    #[error("no MCP server named {0} is configured: add [mcp_servers.{0}] to config.toml")]
    UnknownServer(String),
    /// The server is disabled (`enabled = false`).
    #[error("MCP server {0} is disabled: set enabled = true in [mcp_servers.{0}]")]
    Disabled(String),
    /// The server is not connected (still starting, failed, or stopped).
    #[error("MCP server {server} is not connected ({state}); see mcpServerStatus/list")]
    NotConnected {
        /// The server.
        server: String,
        /// Its state, as `mcpServerStatus/list` shows it.
        state: String,
    },
    /// A stdio server's command could not be started.
    #[error(
        "cannot start MCP server {server} ({command}): {source}; check command (and cwd) in \
         [mcp_servers.{server}], and that the program is on the PATH it gets"
    )]
    Spawn {
        /// The server.
        server: String,
        /// Its command.
        command: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A variable the server's configuration names is not set.
    #[error(
        "MCP server {server} needs the environment variable {variable}, which is not set: \
         export it before starting tandem"
    )]
    MissingVariable {
        /// The server.
        server: String,
        /// The variable.
        variable: String,
    },
    /// The MCP handshake or the first listing failed.
    #[error("MCP server {server} failed to start: {reason}")]
    Connect {
        /// The server.
        server: String,
        /// What went wrong.
        reason: String,
    },
    /// The server asks for authentication (HTTP 401 or 403 with a challenge).
    #[error(
        "MCP server {server} requires authentication: set bearer_token_env_var (or \
         http_headers) in [mcp_servers.{server}]"
    )]
    AuthenticationRequired {
        /// The server.
        server: String,
    },
    /// Connecting and listing the tools took longer than `startup_timeout_sec`.
    #[error(
        "MCP server {server} did not start within {} s: raise startup_timeout_sec in \
         [mcp_servers.{server}] if it is merely slow",
        timeout.as_secs_f64()
    )]
    StartupTimeout {
        /// The server.
        server: String,
        /// The timeout.
        timeout: Duration,
    },
    /// A tool call took longer than `tool_timeout_sec`; it was cancelled.
    #[error(
        "tool {tool} of MCP server {server} did not answer within {} s and was cancelled \
         (tool_timeout_sec in [mcp_servers.{server}])",
        timeout.as_secs_f64()
    )]
    ToolTimeout {
        /// The server.
        server: String,
        /// The tool, as the server names it.
        tool: String,
        /// The timeout.
        timeout: Duration,
    },
    /// The call was cancelled by its caller (an interrupted turn).
    #[error("the call to MCP server {server} was cancelled")]
    Cancelled {
        /// The server.
        server: String,
    },
    /// The connection closed while a request was in flight (the server exited or crashed,
    /// or sent something that closed the connection).
    #[error(
        "MCP server {server} closed the connection before answering (it exited, crashed or \
         sent a malformed message; Tandem restarts it)"
    )]
    ConnectionClosed {
        /// The server.
        server: String,
    },
    /// A stdio server wrote something that is not a JSON-RPC message (broken JSON, a log
    /// line, a line past the size bound): its connection was closed, failing its calls in
    /// flight at once, and it is restarted.
    #[error(
        "MCP server {server} sent a malformed message ({reason}), so its connection was closed \
         and its calls failed; Tandem restarts it, but a server must write only JSON-RPC \
         messages, one per line, to stdout: fix or report the server"
    )]
    Malformed {
        /// The server.
        server: String,
        /// What was wrong with it.
        reason: String,
    },
    /// The server answered the request with an error.
    #[error("MCP server {server} answered with an error: {message}")]
    Server {
        /// The server.
        server: String,
        /// Its error.
        message: String,
    },
}
