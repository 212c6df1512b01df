//! The servers of one Tandem server process: each enabled `[mcp_servers.NAME]` is started in
//! the background by a task of its own (at [`McpManager::start`], which tandem-server calls
//! when it starts), one connection per server shared by every thread. The task reports each
//! state change (starting, ready, failed, cancelled) to [`McpManager::subscribe`]rs, keeps
//! what the server offers for [`McpManager::statuses`], and restarts a server whose
//! connection closes after it was ready, with backoff (1 s, doubling, at most 60 s; a server
//! that stays up a minute starts over from 1 s). A server that fails to start is not retried
//! until the configuration is reloaded.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rmcp::model::{
    CallToolResult, Implementation, JsonObject, ReadResourceResult, Resource, ResourceTemplate,
    Tool,
};
use tokio::sync::{broadcast, mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::client::McpConnection;
use crate::config::{McpServerConfig, McpTransportConfig};
use crate::error::McpError;
use crate::names::qualify_tool_names;
use crate::progress::McpProgress;

/// Startup updates kept for a subscriber that falls behind; past that it skips the oldest
/// (a `broadcast` lag), so a server flapping cannot grow memory.
pub const STARTUP_UPDATES_QUEUE: usize = 256;

/// The first wait before a crashed server is started again.
pub const DEFAULT_RESTART_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait between restarts.
const MAX_RESTART_BACKOFF: Duration = Duration::from_secs(60);
/// How long a restarted server must stay up for its backoff to start over.
const STABLE_AFTER: Duration = Duration::from_secs(60);

/// A server's connection state: the reference's `McpServerConnectionStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpServerState {
    /// Enabled, but its start has not begun.
    NotStarted,
    /// Connecting and listing its tools.
    Starting,
    /// Ready: its tools are offered.
    Connected,
    /// It asks for credentials Tandem does not have.
    AuthenticationRequired,
    /// It could not start, or its connection closed.
    Failed,
    /// Its start was abandoned (Tandem stopping, or a reload removing or changing it).
    Cancelled,
    /// `enabled = false`.
    Disabled,
}

impl McpServerState {
    /// The wire name (`runtimeStatus`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotStarted => "notStarted",
            Self::Starting => "starting",
            Self::Connected => "connected",
            Self::AuthenticationRequired => "authenticationRequired",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::Disabled => "disabled",
        }
    }
}

/// A startup state change: the reference's `McpServerStartupState`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpStartupState {
    /// The server is starting.
    Starting,
    /// The server is ready.
    Ready,
    /// The server failed (to start, or later).
    Failed,
    /// The start was abandoned.
    Cancelled,
}

impl McpStartupState {
    /// The wire name (`status` of `mcpServer/startupStatus/updated`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Starting => "starting",
            Self::Ready => "ready",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }
}

/// One `mcpServer/startupStatus/updated`.
#[derive(Debug, Clone, PartialEq)]
pub struct McpStartupUpdate {
    /// The server.
    pub name: String,
    /// Its new state.
    pub state: McpStartupState,
    /// Why it failed.
    pub error: Option<String>,
    /// Whether it failed for want of authentication.
    pub authentication_required: bool,
}

/// What `mcpServerStatus/list` shows of one server.
#[derive(Debug, Clone)]
pub struct McpServerSnapshot {
    /// Its configuration.
    pub config: McpServerConfig,
    /// Its state.
    pub state: McpServerState,
    /// Why it failed, when it did.
    pub error: Option<String>,
    /// Its offered tools (after `enabled_tools` and `disabled_tools`), as it names them.
    pub tools: Vec<Tool>,
    /// Why its tools could not be listed.
    pub tools_error: Option<String>,
    /// The tools it has that are not offered (`enabled_tools`, `disabled_tools`).
    pub hidden_tools: Vec<String>,
    /// Its resources.
    pub resources: Vec<Resource>,
    /// Its resource templates.
    pub resource_templates: Vec<ResourceTemplate>,
    /// What it said about itself.
    pub server_info: Option<Implementation>,
    /// Its capabilities, as JSON; `null` unless connected.
    pub capabilities: serde_json::Value,
}

/// A ready tool as the model is offered it.
#[derive(Debug, Clone, PartialEq)]
pub struct McpToolSpec {
    /// The model's name for it (`mcp__SERVER__TOOL`, see [`crate::names`]).
    pub model_name: String,
    /// The server.
    pub server: String,
    /// The tool, as the server names it.
    pub tool: String,
    /// Its description.
    pub description: Option<String>,
    /// Its input schema.
    pub input_schema: serde_json::Value,
}

struct Entry {
    config: McpServerConfig,
    state: McpServerState,
    error: Option<String>,
    connection: Option<Arc<McpConnection>>,
    tools: Vec<Tool>,
    tools_error: Option<String>,
    hidden_tools: Vec<String>,
    resources: Vec<Resource>,
    resource_templates: Vec<ResourceTemplate>,
    /// Cancelled to stop this server's task (a reload or shutdown).
    stop: CancellationToken,
    /// Whether its first start has ended (ready or not), for `required` waits.
    settled: watch::Sender<bool>,
}

impl Entry {
    fn new(config: McpServerConfig) -> Self {
        let state = if config.enabled {
            McpServerState::NotStarted
        } else {
            McpServerState::Disabled
        };
        Self {
            config,
            state,
            error: None,
            connection: None,
            tools: Vec::new(),
            tools_error: None,
            hidden_tools: Vec::new(),
            resources: Vec::new(),
            resource_templates: Vec::new(),
            stop: CancellationToken::new(),
            settled: watch::channel(false).0,
        }
    }
}

struct Inner {
    servers: Mutex<BTreeMap<String, Entry>>,
    updates: broadcast::Sender<McpStartupUpdate>,
    restart_backoff: Duration,
    started: Mutex<bool>,
}

/// Every configured MCP server of one Tandem server; cheap to clone.
#[derive(Clone)]
pub struct McpManager {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for McpManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpManager").finish_non_exhaustive()
    }
}

impl McpManager {
    /// A manager of `servers`, none started yet.
    pub fn new(servers: BTreeMap<String, McpServerConfig>) -> Self {
        Self::with_restart_backoff(servers, DEFAULT_RESTART_BACKOFF)
    }

    /// [`McpManager::new`] with another first restart wait (tests shorten it).
    pub fn with_restart_backoff(
        servers: BTreeMap<String, McpServerConfig>,
        restart_backoff: Duration,
    ) -> Self {
        let servers = servers
            .into_iter()
            .map(|(name, config)| (name, Entry::new(config)))
            .collect();
        Self {
            inner: Arc::new(Inner {
                servers: Mutex::new(servers),
                updates: broadcast::channel(STARTUP_UPDATES_QUEUE).0,
                restart_backoff,
                started: Mutex::new(false),
            }),
        }
    }

    /// Starts every enabled server in the background; returns at once. Later calls do
    /// nothing. Needs a Tokio runtime.
    pub fn start(&self) {
        {
            let mut started = self
                .inner
                .started
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if std::mem::replace(&mut *started, true) {
                return;
            }
        }
        let names: Vec<String> = self.lock().keys().cloned().collect();
        for name in names {
            self.spawn_server(&name);
        }
    }

    /// Receives every startup state change from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<McpStartupUpdate> {
        self.inner.updates.subscribe()
    }

    /// Every configured server, by name.
    pub fn statuses(&self) -> Vec<McpServerSnapshot> {
        self.lock()
            .values()
            .map(|entry| McpServerSnapshot {
                config: entry.config.clone(),
                state: entry.state,
                error: entry.error.clone(),
                tools: entry.tools.clone(),
                tools_error: entry.tools_error.clone(),
                hidden_tools: entry.hidden_tools.clone(),
                resources: entry.resources.clone(),
                resource_templates: entry.resource_templates.clone(),
                server_info: entry
                    .connection
                    .as_ref()
                    .and_then(|connection| connection.server_info().cloned()),
                capabilities: entry
                    .connection
                    .as_ref()
                    .map(|connection| connection.capabilities().clone())
                    .unwrap_or_default(),
            })
            .collect()
    }

    /// The tools of every connected server, under the model's names.
    pub fn ready_tools(&self) -> Vec<McpToolSpec> {
        let servers = self.lock();
        let ready: Vec<(&String, &Tool)> = servers
            .iter()
            .filter(|(_, entry)| entry.state == McpServerState::Connected)
            .flat_map(|(name, entry)| entry.tools.iter().map(move |tool| (name, tool)))
            .collect();
        let names = qualify_tool_names(
            ready
                .iter()
                .map(|(server, tool)| (server.as_str(), tool.name.as_ref())),
        );
        ready
            .into_iter()
            .map(|(server, tool)| McpToolSpec {
                model_name: names[&(server.clone(), tool.name.to_string())].clone(),
                server: server.clone(),
                tool: tool.name.to_string(),
                description: tool.description.as_ref().map(ToString::to_string),
                input_schema: serde_json::Value::Object((*tool.input_schema).clone()),
            })
            .collect()
    }

    /// Waits until every `required` server has finished its first start (ready or not), and
    /// fails naming a required server that is not connected then. Servers that are not
    /// required are never waited for.
    pub async fn wait_required(&self) -> Result<(), McpError> {
        let required: Vec<(String, watch::Receiver<bool>)> = self
            .lock()
            .iter()
            .filter(|(_, entry)| entry.config.enabled && entry.config.required)
            .map(|(name, entry)| (name.clone(), entry.settled.subscribe()))
            .collect();
        for (name, mut settled) in required {
            let _ = settled.wait_for(|settled| *settled).await;
            let servers = self.lock();
            if let Some(entry) = servers.get(&name)
                && entry.state != McpServerState::Connected
            {
                return Err(McpError::NotConnected {
                    server: name.clone(),
                    state: entry
                        .error
                        .clone()
                        .unwrap_or_else(|| entry.state.as_str().to_owned()),
                });
            }
        }
        Ok(())
    }

    /// Calls `tool` of `server` under the server's `tool_timeout_sec`; see
    /// [`McpConnection::call_tool`].
    pub async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<JsonObject>,
        progress: Option<mpsc::Sender<McpProgress>>,
        cancel: CancellationToken,
    ) -> Result<CallToolResult, McpError> {
        self.call_tool_for(server, tool, arguments, progress, cancel, None)
            .await
    }

    /// [`McpManager::call_tool`] for a caller whose `elicitor` answers the server's
    /// elicitation requests attributed to this call; see [`McpConnection::call_tool_for`].
    pub async fn call_tool_for(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<JsonObject>,
        progress: Option<mpsc::Sender<McpProgress>>,
        cancel: CancellationToken,
        elicitor: Option<Arc<dyn crate::client::McpElicitor>>,
    ) -> Result<CallToolResult, McpError> {
        let (connection, timeout) = self.connection(server)?;
        connection
            .call_tool_for(tool, arguments, timeout, progress, cancel, elicitor)
            .await
    }

    /// The approval mode of `tool` of `server` (its `approval_mode`, else the server's
    /// `default_tools_approval_mode`, else `auto`); `auto` for a server not configured.
    pub fn approval_mode(&self, server: &str, tool: &str) -> crate::config::ToolApprovalMode {
        self.lock()
            .get(server)
            .map(|entry| entry.config.approval_mode(tool))
            .unwrap_or_default()
    }

    /// Reads `uri` from `server`.
    pub async fn read_resource(
        &self,
        server: &str,
        uri: &str,
    ) -> Result<ReadResourceResult, McpError> {
        let (connection, _) = self.connection(server)?;
        connection.read_resource(uri).await
    }

    /// Applies a new configuration: servers removed or changed are stopped (their starts
    /// `cancelled`), servers added or changed are started, the others are left running.
    pub fn reload(&self, servers: BTreeMap<String, McpServerConfig>) {
        let mut to_start = Vec::new();
        {
            let mut current = self.lock();
            let names: Vec<String> = current.keys().cloned().collect();
            for name in names {
                if servers.get(&name) != current.get(&name).map(|entry| &entry.config)
                    && let Some(entry) = current.remove(&name)
                {
                    entry.stop.cancel();
                }
            }
            for (name, config) in servers {
                if !current.contains_key(&name) {
                    current.insert(name.clone(), Entry::new(config));
                    to_start.push(name);
                }
            }
        }
        let started = *self
            .inner
            .started
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if started {
            for name in to_start {
                self.spawn_server(&name);
            }
        }
    }

    /// Stops every server (their groups are killed); what is still starting is `cancelled`.
    pub fn shutdown(&self) {
        let mut servers = self.lock();
        for entry in servers.values_mut() {
            entry.stop.cancel();
            if let Some(connection) = entry.connection.take() {
                connection.close();
            }
        }
    }

    fn connection(&self, server: &str) -> Result<(Arc<McpConnection>, Duration), McpError> {
        let servers = self.lock();
        let entry = servers
            .get(server)
            .ok_or_else(|| McpError::UnknownServer(server.to_owned()))?;
        if !entry.config.enabled {
            return Err(McpError::Disabled(server.to_owned()));
        }
        match &entry.connection {
            Some(connection) if entry.state == McpServerState::Connected => {
                Ok((Arc::clone(connection), entry.config.tool_timeout))
            }
            _ => Err(McpError::NotConnected {
                server: server.to_owned(),
                state: entry.state.as_str().to_owned(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Entry>> {
        self.inner
            .servers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn spawn_server(&self, name: &str) {
        let (config, stop) = {
            let servers = self.lock();
            let Some(entry) = servers.get(name) else {
                return;
            };
            if !entry.config.enabled {
                entry.settled.send_replace(true);
                return;
            }
            (entry.config.clone(), entry.stop.clone())
        };
        let manager = self.clone();
        tokio::spawn(async move { manager.run_server(config, stop).await });
    }

    /// Updates the entry of `name` if it is still the one `stop` belongs to (a reload may
    /// have replaced it).
    fn update(&self, name: &str, stop: &CancellationToken, change: impl FnOnce(&mut Entry)) {
        let mut servers = self.lock();
        // A reload cancels the token of the entry it replaces, so a live token means that
        // the entry under `name` is still this task's.
        if let Some(entry) = servers.get_mut(name)
            && !stop.is_cancelled()
        {
            change(entry);
        }
    }

    fn announce(&self, name: &str, state: McpStartupState, error: Option<&McpError>) {
        let _ = self.inner.updates.send(McpStartupUpdate {
            name: name.to_owned(),
            state,
            error: error.map(ToString::to_string),
            authentication_required: matches!(error, Some(McpError::AuthenticationRequired { .. })),
        });
    }

    /// The task of one server: start, serve until the connection closes, restart.
    async fn run_server(self, config: McpServerConfig, stop: CancellationToken) {
        let name = config.name.clone();
        let mut backoff = self.inner.restart_backoff;
        loop {
            self.update(&name, &stop, |entry| {
                entry.state = McpServerState::Starting;
                entry.error = None;
            });
            self.announce(&name, McpStartupState::Starting, None);
            let started = tokio::select! {
                () = stop.cancelled() => None,
                started = tokio::time::timeout(config.startup_timeout, start(&config)) => Some(started),
            };
            let started = match started {
                None => {
                    self.announce(&name, McpStartupState::Cancelled, None);
                    return;
                }
                Some(Err(_)) => Err(McpError::StartupTimeout {
                    server: name.clone(),
                    timeout: config.startup_timeout,
                }),
                Some(Ok(started)) => started,
            };
            let ready = match started {
                Ok(ready) => ready,
                Err(error) => {
                    tracing::warn!(server = %name, %error, "MCP server failed to start");
                    let state = match error {
                        McpError::AuthenticationRequired { .. } => {
                            McpServerState::AuthenticationRequired
                        }
                        _ => McpServerState::Failed,
                    };
                    self.update(&name, &stop, |entry| {
                        entry.state = state;
                        entry.error = Some(error.to_string());
                        entry.settled.send_replace(true);
                    });
                    self.announce(&name, McpStartupState::Failed, Some(&error));
                    return;
                }
            };
            let connection = Arc::clone(&ready.connection);
            self.update(&name, &stop, |entry| {
                entry.state = McpServerState::Connected;
                entry.connection = Some(ready.connection);
                entry.tools = ready.tools;
                entry.tools_error = ready.tools_error;
                entry.hidden_tools = ready.hidden_tools;
                entry.resources = ready.resources;
                entry.resource_templates = ready.resource_templates;
                entry.settled.send_replace(true);
            });
            self.announce(&name, McpStartupState::Ready, None);
            let up_since = tokio::time::Instant::now();
            tokio::select! {
                () = stop.cancelled() => {
                    connection.close();
                    return;
                }
                () = connection.closed() => {}
            }
            // The malformed message that closed it, when that was the reason.
            let error = connection.closed_error();
            tracing::warn!(server = %name, %error, "MCP server connection closed; restarting it in {backoff:?}");
            self.update(&name, &stop, |entry| {
                entry.state = McpServerState::Failed;
                entry.error = Some(error.to_string());
                entry.connection = None;
            });
            self.announce(&name, McpStartupState::Failed, Some(&error));
            if up_since.elapsed() >= STABLE_AFTER {
                backoff = self.inner.restart_backoff;
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(MAX_RESTART_BACKOFF);
        }
    }
}

/// A connected server and what it offers.
struct Ready {
    connection: Arc<McpConnection>,
    tools: Vec<Tool>,
    tools_error: Option<String>,
    hidden_tools: Vec<String>,
    resources: Vec<Resource>,
    resource_templates: Vec<ResourceTemplate>,
}

/// Connects to the server of `config` and lists what it offers.
async fn start(config: &McpServerConfig) -> Result<Ready, McpError> {
    let connection = McpConnection::connect(config).await?;
    let (tools, hidden_tools, tools_error) = match connection.list_tools().await {
        Ok(tools) => {
            let (offered, hidden): (Vec<Tool>, Vec<Tool>) = tools
                .into_iter()
                .partition(|tool| config.tool_enabled(&tool.name));
            let hidden = hidden
                .into_iter()
                .map(|tool| tool.name.to_string())
                .collect();
            (offered, hidden, None)
        }
        Err(error) => (Vec::new(), Vec::new(), Some(error.to_string())),
    };
    let resources = connection.list_resources().await.unwrap_or_else(|error| {
        tracing::debug!(server = %config.name, %error, "cannot list resources");
        Vec::new()
    });
    let resource_templates = connection
        .list_resource_templates()
        .await
        .unwrap_or_else(|error| {
            tracing::debug!(server = %config.name, %error, "cannot list resource templates");
            Vec::new()
        });
    Ok(Ready {
        connection: Arc::new(connection),
        tools,
        tools_error,
        hidden_tools,
        resources,
        resource_templates,
    })
}

/// The HTTP origin of a server's URL (scheme, host, port), without credentials or path; `None`
/// for a stdio server.
pub fn http_origin(config: &McpServerConfig) -> Option<String> {
    let McpTransportConfig::StreamableHttp(http) = &config.transport else {
        return None;
    };
    let url = reqwest::Url::parse(&http.url).ok()?;
    Some(url.origin().ascii_serialization())
}
