//! `initialize` and `config/read` (docs/protocol.md sections 3 and 4): the handshake's params and
//! result, the connection's session source, and the configuration snapshot.

#[allow(unused_imports)]
use super::*;

/// Where a connection comes from; stamped on threads as `source`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct InitializeCapabilities {
    /// Opt in to experimental methods, fields and notifications.
    #[serde(default, with = "null_as_default")]
    #[cfg_attr(feature = "schema", schemars(with = "bool"), ts(as = "bool"))]
    pub experimental_api: bool,
    /// Notification methods never to send to this connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opt_out_notification_methods: Option<Vec<String>>,
}

/// `initialize` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// Who the client is.
    pub client_info: ClientInfo,
    /// What the client opts in to or out of; may be `null`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<InitializeCapabilities>,
}

/// `serverInfo` of the `initialize` result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ServerInfo {
    /// Server name.
    pub name: String,
    /// Server version.
    pub version: String,
}

/// `initialize` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct InitializeResponse {
    /// Names the server and the client.
    pub user_agent: String,
    /// `unix` or `windows`.
    pub platform_family: String,
    /// e.g. `linux`, `macos`, `windows`.
    pub platform_os: String,
    /// Absolute path of the server's home directory. Tandem always sends it; empty when read
    /// from a server that does not (the reference, reached over a unix socket or websocket).
    #[serde(default)]
    pub tandem_home: String,
    /// The same directory as `tandemHome`, under the reference's name (its schema requires it).
    pub codex_home: String,
    /// Server name and the upstream protocol revision it implements
    /// ([`crate::UPSTREAM_PROTOCOL_VERSION`]), which clients compare with the release that
    /// introduced a feature. Empty from a server that does not send it (the reference).
    #[serde(default)]
    pub server_info: ServerInfo,
    /// The server's own version (Tandem's release, not the protocol revision); empty from a
    /// server that does not send it (the reference).
    #[serde(default)]
    pub tandem_version: String,
    /// procre: the token of this connection's process session (experimental, sent only to
    /// clients with the `experimentalApi` capability): given back in `process/resume` by a
    /// later connection, it takes over the `process/spawn` processes of this one after it
    /// closed (docs/protocol.md, "Processes across a reconnect"). Omitted by servers whose
    /// processes die with their connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_session: Option<String>,
}

/// `config/read` params (both members may be ignored by the server).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ConfigReadResponse {
    /// Effective configuration under its config-file (snake_case) keys.
    pub config: Value,
    /// Always `{}`.
    pub origins: Value,
    /// Always `null`.
    pub layers: Option<Value>,
}
