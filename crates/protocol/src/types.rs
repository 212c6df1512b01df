//! The params, results and shared value types of protocol.md sections 3 to 8, one struct per
//! wire object, named after the method they serve.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// Serde helpers for three-state fields (`T | null` with a default): omitted is `None`,
/// `null` is `Some(None)`, a value is `Some(Some(v))`.
pub mod three_state {
    use super::*;

    /// Deserializes a present member (value or `null`) as `Some(..)`; pair with `default`.
    pub fn deserialize<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de>,
    {
        Option::<T>::deserialize(deserializer).map(Some)
    }

    /// Serializes `Some(None)` as `null`; pair with `skip_serializing_if = "Option::is_none"`.
    pub fn serialize<S, T>(value: &Option<Option<T>>, serializer: S) -> Result<S::Ok, S::Error>
    where
        S: Serializer,
        T: Serialize,
    {
        match value {
            Some(inner) => inner.serialize(serializer),
            None => serializer.serialize_none(),
        }
    }
}

/// Params with no members (`{}`); unknown members are ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmptyParams {}

/// A result with no members (`{}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmptyResponse {}

/// Where a connection comes from; stamped on threads as `source`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SessionSource {
    /// The tandem CLI in interactive use.
    Cli,
    /// An IDE extension.
    Vscode,
    /// The tandem CLI's `exec` command.
    Exec,
    /// A stdio or websocket app-server connection (the default).
    #[default]
    AppServer,
    /// Unknown origin.
    Unknown,
    /// An embedder's own label, e.g. `{"custom": "sdk"}`.
    Custom(String),
}

/// `clientInfo` of `initialize`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientInfo {
    /// Machine-readable client name.
    pub name: String,
    /// Human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Client version.
    pub version: String,
}

/// `capabilities` of `initialize`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeCapabilities {
    /// Opt in to experimental methods, fields and notifications.
    #[serde(default)]
    pub experimental_api: bool,
    /// Notification methods never to send to this connection.
    #[serde(default)]
    pub opt_out_notification_methods: Option<Vec<String>>,
}

/// `initialize` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// Who the client is.
    pub client_info: ClientInfo,
    /// What the client opts in to or out of; may be `null`.
    #[serde(default)]
    pub capabilities: Option<InitializeCapabilities>,
}

/// `serverInfo` of the `initialize` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerInfo {
    /// Server name.
    pub name: String,
    /// Server version.
    pub version: String,
}

/// `initialize` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResponse {
    /// Names the server and the client.
    pub user_agent: String,
    /// `unix` or `windows`.
    pub platform_family: String,
    /// e.g. `linux`, `macos`, `windows`.
    pub platform_os: String,
    /// Absolute path of the server's home directory.
    pub tandem_home: String,
    /// Server name and version.
    pub server_info: ServerInfo,
}

/// `config/read` params (both members may be ignored by the server).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigReadParams {
    /// Directory to resolve configuration for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Whether to include configuration layers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_layers: Option<bool>,
}

/// `config/read` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigReadResponse {
    /// Effective configuration under its config-file (snake_case) keys.
    pub config: Value,
    /// Always `{}`.
    pub origins: Value,
    /// Always `null`.
    pub layers: Option<Value>,
}

/// A PTY size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PtySize {
    /// Rows (greater than 0).
    pub rows: u16,
    /// Columns (greater than 0).
    pub cols: u16,
}

/// `process/spawn` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessSpawnParams {
    /// Caller-chosen handle naming the process in later requests and notifications.
    pub process_handle: String,
    /// Program and arguments.
    pub command: Vec<String>,
    /// Absolute working directory (required; checked by the server).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Run under a PTY; implies `streamStdin` and `streamStdoutStderr`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tty: Option<bool>,
    /// Accept `process/writeStdin`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_stdin: Option<bool>,
    /// Stream output as `process/outputDelta` instead of returning it in `process/exited`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_stdout_stderr: Option<bool>,
    /// Per-stream cap: omitted = 1 MiB, `null` = none.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "three_state")]
    pub output_bytes_cap: Option<Option<u64>>,
    /// Timeout: omitted = 10 000 ms, `null` = none.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "three_state")]
    pub timeout_ms: Option<Option<i64>>,
    /// Variables merged over the server's environment; `null` removes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, Option<String>>>,
    /// Initial PTY size (requires `tty`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<PtySize>,
}

/// `process/writeStdin` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessWriteStdinParams {
    /// The process.
    pub process_handle: String,
    /// Bytes to write, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta_base64: Option<String>,
    /// Close stdin after writing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_stdin: Option<bool>,
}

/// `process/kill` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessKillParams {
    /// The process.
    pub process_handle: String,
}

/// `process/resizePty` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessResizePtyParams {
    /// The process.
    pub process_handle: String,
    /// The new size.
    pub size: PtySize,
}

/// Which output stream a delta belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ProcessOutputStream {
    /// Standard output (and all PTY output).
    Stdout,
    /// Standard error.
    Stderr,
}

/// `process/outputDelta` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessOutputDeltaNotification {
    /// The process.
    pub process_handle: String,
    /// The stream.
    pub stream: ProcessOutputStream,
    /// The bytes, base64.
    pub delta_base64: String,
    /// This delta reached the stream's cap.
    pub cap_reached: bool,
}

/// `process/exited` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExitedNotification {
    /// The process.
    pub process_handle: String,
    /// Exit code; 128 + N for signal N; 124 on timeout.
    pub exit_code: i32,
    /// Captured stdout (empty when streamed).
    pub stdout: String,
    /// stdout reached its cap.
    pub stdout_cap_reached: bool,
    /// Captured stderr (empty when streamed).
    pub stderr: String,
    /// stderr reached its cap.
    pub stderr_cap_reached: bool,
    /// A stream did not reach EOF within the drain budget. Absent on input means `false`.
    #[serde(default)]
    pub output_drain_timed_out: bool,
}
